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

    func testTurnTakingOnRecordedVoicesBothRules() throws {
        let full = ProcessInfo.processInfo.environment["PRACTICED_TURN_TAKING"] == "full"
        let pauses = full ? [0, 0.5, 0.8, 1.2, 2.0] : [0, 1.2]
        // (name, SNR in pink noise, babble this many dB under the learner from 4 s before)
        var conditions: [(String, Float?, Float?)] = [("quiet", nil, nil), ("babble 9 dB under", nil, 9)]
        if full { conditions.insert(("10 dB SNR", 10, nil), at: 1) }
        var outcomes: [String: [String: Outcome]] = [:]  // rule → condition/pause → outcome
        for (condition, snr, babble) in conditions {
            let stimuli = try HesitantSpeech.stimuli(pauses: pauses, prompts: full ? ["demo-congrats", "demo-instruct"] : ["demo-congrats"],
                                                     phrases: full ? 3 : 2, snr: snr, babbleBelow: babble)
            for stimulus in stimuli {
                let all = try events(stimulus.samples, describing: "\(condition)\t\(stimulus.pause)\t\(stimulus.cut)\t\(stimulus.end)\t\(stimulus.reader)")
                for rule in ["model", "hangover"] {
                    let mine = all.filter { $0.rule == rule }
                    let key = "\(condition) \(stimulus.pause) s"
                    var o = outcomes[rule, default: [:]][key, default: Outcome()]
                    o.phrases += 1
                    let start = mine.first { $0.event == "started" }?.at
                    let end = mine.first { Self.endings.contains($0.event) }?.decided
                    let cut = stimulus.pause > 0 && (end.map { $0 < stimulus.cut + stimulus.pause - 0.05 } ?? false)
                    if stimulus.pause > 0 { o.hesitations += 1 }
                    if cut { o.cut += 1 }
                    // Whole: the first syllable within the 300 ms pre-roll, not cut, ended after the
                    // phrase. The delay counts every turn that ended after its phrase (a pause
                    // ceiling's 3 s included).
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
        func percentile(_ values: [Double], _ p: Double) -> String {
            guard !values.isEmpty else { return "–" }
            let sorted = values.sorted()
            return "\(Int((sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000).rounded())) ms"
        }
        // The median end is fragile where about half the phrases end at once and the rest wait
        // for the ceiling: how many ended within a second says it plainly.
        tell("| rule | condition, pause | hesitations cut | end after the last word p50 / p95 | ended within 1 s | captured whole | turns after it |")
        for rule in ["model", "hangover"] {
            for key in outcomes[rule, default: [:]].keys.sorted() where key != "non-speech" {
                let o = outcomes[rule]![key]!
                tell("| \(rule) | \(key) | \(o.hesitations == 0 ? "–" : "\(o.cut) of \(o.hesitations)") | "
                      + "\(percentile(o.delays, 0.5)) / \(percentile(o.delays, 0.95)) | \(o.delays.filter { $0 < 1 }.count) of \(o.delays.count) | "
                      + "\(o.whole) of \(o.phrases) | \(o.falseTurns) |")
            }
            let n = outcomes[rule]!["non-speech"]!
            tell("| \(rule) | non-speech (\(Int(n.nonSpeechSeconds)) s) | false turns \(n.falseTurns), "
                  + String(format: "%.1f", Double(n.falseTurns) / n.nonSpeechSeconds * 60) + " a minute; \(n.discarded) discarded as the room's speech | | | |")
        }
        let model = outcomes["model"]!, hangover = outcomes["hangover"]!
        let key = "quiet 1.2 s"
        XCTAssertEqual(hangover[key]?.cut, hangover[key]?.hesitations, "the hangover cuts every 1.2 s hesitation")
        XCTAssertLessThan(model[key]?.cut ?? .max, hangover[key]?.hesitations ?? 0, "the learned rule waits through some")
        XCTAssertEqual(model["non-speech"]!.falseTurns, 0, "no turn from noise, chords, clicks or babble")
        let babble = "babble 9 dB under 0.0 s"
        XCTAssertEqual(model[babble]?.falseTurns, 0, "the babble going on after the learner's turn starts none")
        XCTAssertGreaterThanOrEqual(model[babble]?.whole ?? 0, (model[babble]?.phrases ?? 0) * 2 / 3, "a learner over babble is heard whole")
        XCTAssertEqual(hangover[babble]?.whole, 0, "the level rule never ends a turn in babble")
        XCTAssertLessThan(Double(model["non-speech"]!.falseTurns), Double(hangover["non-speech"]!.falseTurns),
                          "Silero hears less non-speech as turns than the level rule")
    }

    /// A line of the proof's figures: printed, and kept in `.ci/proof`'s report (the report
    /// of `bash .ci/proof turn-taking` was empty: these lines went to the console only).
    private func tell(_ line: String) {
        print("turn-taking: " + line)
        ProofReport.append(line)
    }
}
