import AudioKernel
import Foundation
import TestSupport
import XCTest

/// The turn-taking proof: both hands-free rules, the learned one (``TurnEndpointer``) and the
/// level hangover (``SpeechDetector``), as the shipped build's `audiokernel-demo speech
/// endpoint` runs them on recorded human voices (``HesitantSpeech``: four readers, a
/// hesitation of 0.5 to 2.0 s mid-phrase or none, in quiet and at 10 dB SNR in pink noise) and
/// on non-speech (noise, looped noise, chords, clicks, babble). Per rule: hesitations cut, the
/// end of turn after the last word (p50, p95), phrases captured whole, false turns a minute.
/// smart-turn runs on two threads as in the daemon, and its answer counts as late as it took
/// (the end of turn includes the model's time). PRACTICED_TURN_TAKING_ARGS passes more options
/// to `speech endpoint` (`--lead-ms 0`: asked at the pause's question point, not ahead).
///
/// CI runs the short form (two phrases a reader, 1.2 s hesitations, quiet, 20 s of each
/// non-speech); `bash .ci/proof turn-taking` the long one (PRACTICED_TURN_TAKING=full: three
/// phrases of two prompts a reader, every pause, quiet and 10 dB SNR, 60 s of each).
final class TurnTakingProofTests: XCTestCase {
    struct Outcome {
        var cut = 0, hesitations = 0, whole = 0, phrases = 0
        var delays: [Double] = []
        var falseTurns = 0
        /// Recordings begun and discarded as the room's speech (`background_speech`): never sent.
        var discarded = 0
        var nonSpeechSeconds = 0.0
    }

    /// Each rule's events on one recording: (rule, event, seconds, decided).
    /// PRACTICED_TURN_TAKING_DUMP=DIR keeps every recording the proof made (`NNN.wav`) with
    /// an `index.tsv` line saying what it holds, for studying a rule outside the proof.
    static let dump = ProcessInfo.processInfo.environment["PRACTICED_TURN_TAKING_DUMP"].map { URL(fileURLWithPath: $0) }
    private var dumped = 0

    func events(_ samples: [Int16], describing description: @autoclosure () -> String) throws -> [(rule: String, event: String, at: Double, decided: Double)] {
        var wav = ONNXReference.temporaryFile("turn-taking.wav")
        if let directory = Self.dump {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            dumped += 1
            wav = directory.appendingPathComponent(String(format: "%03d.wav", dumped))
            let line = Data("\(wav.lastPathComponent)\t\(description())\n".utf8)
            let index = directory.appendingPathComponent("index.tsv")
            if let handle = try? FileHandle(forWritingTo: index) {
                handle.seekToEndOfFile(); handle.write(line); handle.closeFile()
            } else {
                try line.write(to: index)
            }
        }
        defer { if Self.dump == nil { try? FileManager.default.removeItem(at: wav) } }
        let writer = try WAVFileWriter(path: wav.path, format: .speech)
        try writer.write(samples)
        try writer.close(sync: false)
        let environment = ProcessInfo.processInfo.environment
        var arguments = ["speech", "endpoint", ONNXReference.silero, ONNXReference.smartTurn, wav.path, "--threads", "2"]
        if let finished = environment["PRACTICED_TURN_TAKING_FINISHED"] { arguments += ["--finished", finished] }
        if let more = environment["PRACTICED_TURN_TAKING_ARGS"] { arguments += more.split(separator: " ").map(String.init) }
        let output = try runTool(ShippedBinaries.path(of: "audiokernel-demo"), arguments)
        return output.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ").map(String.init)
            guard f.count >= 3, let at = Double(f[2]) else { return nil }
            let decided = f.firstIndex(of: "decided").flatMap { Double(f[$0 + 1]) } ?? at
            return (f[0], f[1], at, decided)
        }
    }

    static let endings: Set<String> = ["finished", "pause_ceiling", "ended", "maximumLength", "background_speech"]

    /// The sets the proof runs: PRACTICED_TURN_TAKING_SET = tuning, held-out (CI's short
    /// form) or both (the long form's default).
    static func sets(full: Bool) -> [String] {
        switch ProcessInfo.processInfo.environment["PRACTICED_TURN_TAKING_SET"] {
        case "tuning": return ["tuning"]
        case "held-out": return ["held-out"]
        case "both": return ["tuning", "held-out"]
        default: return full ? ["tuning", "held-out"] : ["held-out"]
        }
    }

    func testTurnTakingOnRecordedVoicesBothRules() throws {
        let full = ProcessInfo.processInfo.environment["PRACTICED_TURN_TAKING"] == "full"
        let pauses = full ? [0, 0.5, 0.8, 1.2, 2.0] : [0, 1.2]
        let hesitations: [HesitantSpeech.Hesitation] = full ? HesitantSpeech.Hesitation.allCases : [.pause]
        // (name, SNR in pink noise, babble this many dB under the learner from 4 s before)
        var conditions: [(String, Float?, Float?)] = [("quiet", nil, nil), ("babble 9 dB under", nil, 9)]
        if full { conditions.insert(("10 dB SNR", 10, nil), at: 1) }
        var outcomes: [String: [String: Outcome]] = [:]  // rule → set/condition/pause → outcome
        var byKind: [String: [String: (cut: Int, of: Int)]] = [:]  // rule → set/condition/kind → hesitations cut
        let heldOut = try HeldOutSpeech.speech()
        for set in Self.sets(full: full) {
            for (condition, snr, babble) in conditions {
                let stimuli = set == "tuning"
                    ? try HesitantSpeech.stimuli(pauses: pauses, prompts: full ? ["demo-congrats", "demo-instruct"] : ["demo-congrats"],
                                                 phrases: full ? 3 : 2, snr: snr, babbleBelow: babble, hesitations: hesitations)
                    : try HesitantSpeech.stimuli(heldOut, pauses: pauses, phrases: full ? 3 : 1, snr: snr, babbleBelow: babble, hesitations: hesitations)
                for stimulus in stimuli {
                    let all = try events(stimulus.samples, describing: "\(set)\t\(condition)\t\(stimulus.pause)\t\(stimulus.hesitation)\t\(stimulus.cut)\t\(stimulus.resume)\t\(stimulus.end)\t\(stimulus.reader)")
                    for rule in ["model", "hangover"] {
                        let mine = all.filter { $0.rule == rule }
                        let key = "\(set) \(condition) \(stimulus.pause) s"
                        var o = outcomes[rule, default: [:]][key, default: Outcome()]
                        o.phrases += 1
                        let start = mine.first { $0.event == "started" }?.at
                        let end = mine.first { Self.endings.contains($0.event) }?.decided
                        let cut = stimulus.pause > 0 && (end.map { $0 < stimulus.resume - 0.05 } ?? false)
                        if stimulus.pause > 0 {
                            o.hesitations += 1
                            let kind = "\(set) \(condition) \(stimulus.pause) s \(stimulus.hesitation)"
                            var k = byKind[rule, default: [:]][kind, default: (0, 0)]
                            k.of += 1
                            if cut { k.cut += 1 }
                            byKind[rule, default: [:]][kind] = k
                        }
                        if cut { o.cut += 1 }
                        // Whole: the first syllable within the 300 ms pre-roll, not cut, ended after the
                        // phrase. The delay counts every turn that ended after its phrase (a pause
                        // ceiling's included).
                        if let start, start - 0.3 <= stimulus.start, !cut, let end, end >= stimulus.end - 0.05 { o.whole += 1 }
                        if !cut, let end, end >= stimulus.end - 0.05 { o.delays.append(end - stimulus.end) }
                        // Turns begun after the phrase's turn ended (the babble going on), less those
                        // discarded as the room's speech: answers no one gave.
                        if let end {
                            let after = max(end, stimulus.end)
                            o.falseTurns += mine.filter { $0.event == "started" && $0.at > after }.count
                                - mine.filter { $0.event == "background_speech" && $0.at > after }.count
                        }
                        outcomes[rule, default: [:]][key] = o
                    }
                }
            }
        }
        for (name, samples) in try HesitantSpeech.nonSpeech(seconds: full ? 60 : 20) {
            let all = try events(samples, describing: "non-speech\t\(name)")
            for rule in ["model", "hangover"] {
                var o = outcomes[rule, default: [:]]["non-speech", default: Outcome()]
                let discarded = all.filter { $0.rule == rule && $0.event == "background_speech" }.count
                let turns = all.filter { $0.rule == rule && $0.event == "started" }.count - discarded
                o.falseTurns += turns
                o.discarded += discarded
                o.nonSpeechSeconds += Double(samples.count) / 24_000
                outcomes[rule, default: [:]]["non-speech", default: Outcome()] = o
                if turns > 0 { tell("\(rule): \(name): \(turns) false turns") }
                if discarded > 0 { tell("\(rule): \(name): \(discarded) recordings discarded as the room's speech") }
            }
        }
        func percentile(_ values: [Double], _ p: Double) -> Double? {
            guard !values.isEmpty else { return nil }
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        func ms(_ value: Double?) -> String { value.map { "\(Int(($0 * 1000).rounded())) ms" } ?? "–" }
        // The median end is fragile where about half the phrases end at once and the rest wait
        // for the ceiling: how many ended within a second says it plainly.
        tell("| rule | set, condition, pause | hesitations cut | end after the last word p50 / p90 / p95 | ended within 1 s | captured whole | turns after it |")
        for rule in ["model", "hangover"] {
            for key in outcomes[rule, default: [:]].keys.sorted() where key != "non-speech" {
                let o = outcomes[rule]![key]!
                tell("| \(rule) | \(key) | \(o.hesitations == 0 ? "–" : "\(o.cut) of \(o.hesitations)") | "
                      + "\(ms(percentile(o.delays, 0.5))) / \(ms(percentile(o.delays, 0.9))) / \(ms(percentile(o.delays, 0.95))) | \(o.delays.filter { $0 < 1 }.count) of \(o.delays.count) | "
                      + "\(o.whole) of \(o.phrases) | \(o.falseTurns) |")
            }
            // Which hesitations were cut: a silent pause, a filler in it, a restart after it.
            var kinds: [String: [String]] = [:]
            for (key, k) in byKind[rule, default: [:]] {
                let parts = key.split(separator: " ")
                kinds[parts.dropLast(3).joined(separator: " "), default: []].append("\(parts.suffix(3).joined(separator: " ")) \(k.cut)/\(k.of)")
            }
            for (condition, cuts) in kinds.sorted(by: { $0.key < $1.key }) {
                tell("| \(rule) | \(condition): cut by kind | \(cuts.sorted().joined(separator: ", ")) | | | | |")
            }
            let n = outcomes[rule]!["non-speech"]!
            tell("| \(rule) | non-speech (\(Int(n.nonSpeechSeconds)) s) | false turns \(n.falseTurns), "
                  + String(format: "%.1f", Double(n.falseTurns) / n.nonSpeechSeconds * 60) + " a minute; \(n.discarded) discarded as the room's speech | | | |")
        }
        let model = outcomes["model"]!, hangover = outcomes["hangover"]!
        XCTAssertEqual(model["non-speech"]!.falseTurns, 0, "no turn from noise, chords, clicks or babble")
        XCTAssertLessThan(Double(model["non-speech"]!.falseTurns), Double(hangover["non-speech"]!.falseTurns),
                          "Silero hears less non-speech as turns than the level rule")
        for set in Self.sets(full: full) {
            let pauses = try XCTUnwrap(byKind["hangover"]?["\(set) quiet 1.2 s pause"])
            XCTAssertEqual(pauses.cut, pauses.of, "\(set): the hangover cuts every silent 1.2 s hesitation")
            let babble = "\(set) babble 9 dB under 0.0 s"
            XCTAssertEqual(model[babble]?.falseTurns, 0, "\(set): the babble going on after the learner's turn starts none")
            XCTAssertGreaterThanOrEqual(model[babble]?.whole ?? 0, (model[babble]?.phrases ?? 0) * 2 / 3, "\(set): a learner over babble is heard whole")
            XCTAssertEqual(hangover[babble]?.whole, 0, "\(set): the level rule never ends a turn in babble")
            guard set == "held-out" else { continue }
            let finished = try XCTUnwrap(model["held-out quiet 0.0 s"])
            XCTAssertEqual(finished.whole, finished.phrases, "held-out: every finished answer heard whole")
            let plain = try XCTUnwrap(byKind["model"]?["held-out quiet 1.2 s pause"])
            XCTAssertLessThan(Double(plain.cut), Double(plain.of) * 2 / 3, "held-out: the learned rule waits through a third of the 1.2 s hesitations at least")
            if !full {
                // CI's short form, on a loaded host: a finished answer waits no longer than the
                // 2 s ceiling and the model's time (3 s and more before the second question).
                XCTAssertLessThanOrEqual(percentile(finished.delays, 0.5) ?? 9, 1.0, "held-out: a finished answer's turn ends within 1 s at the median")
                XCTAssertLessThanOrEqual(percentile(finished.delays, 0.9) ?? 9, 2.4, "held-out: and by the 2 s ceiling at the 90th percentile")
                continue
            }
            // The goals (issue 68), on the voices no parameter was chosen on: the proof's long
            // form fails where they are not met.
            for pause in [0.8, 1.2, 2.0] {
                let o = try XCTUnwrap(model["held-out quiet \(pause) s"])
                XCTAssertLessThanOrEqual(Double(o.cut), Double(o.hesitations) * 0.25, "held-out: at most a quarter of the \(pause) s hesitations cut")
            }
            XCTAssertLessThanOrEqual(percentile(finished.delays, 0.5) ?? 9, 0.3, "held-out: a finished answer's turn ends within 300 ms at the median")
            XCTAssertLessThanOrEqual(percentile(finished.delays, 0.9) ?? 9, 1.0, "held-out: and within 1 s at the 90th percentile")
            let noisy = try XCTUnwrap(model["held-out 10 dB SNR 0.0 s"])
            XCTAssertLessThanOrEqual(percentile(noisy.delays, 0.5) ?? 9, 0.7, "held-out: within 700 ms at the median at 10 dB SNR")
        }
    }

    /// A line of the proof's figures: printed, and kept in `.ci/proof`'s report (the report
    /// of `bash .ci/proof turn-taking` was empty: these lines went to the console only).
    private func tell(_ line: String) {
        print("turn-taking: " + line)
        ProofReport.append(line)
    }
}
