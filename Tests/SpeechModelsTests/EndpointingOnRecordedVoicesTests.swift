import AudioKernel
import Foundation
import TestSupport
import XCTest

/// Where turns end on recorded human voices with a hesitation inserted mid-phrase, for the
/// learned rule (``TurnEndpointer``: Silero VAD and smart-turn, run by the shipped
/// `audiokernel-demo speech endpoint`) beside the level hangover (``SpeechDetector``).
/// Four readers of asterisk's prompts, each phrase (speech between pauses of 140 ms or more)
/// of 1.5 s or longer from the first two of a prompt, in room tone at about −60 dBFS; the
/// hesitation goes at the quietest 10 ms of the phrase's middle third.
final class EndpointingOnRecordedVoicesTests: XCTestCase {
    struct Stimulus {
        let samples: [Int16]
        let cut: Double  // where the hesitation starts, in seconds
        let pause: Double
        let end: Double  // the phrase's last sample
    }

    static func phrases(_ x: [Float]) -> [(Int, Int)] {
        let block = 240
        let levels = stride(from: 0, to: x.count - block, by: block).map { i in
            (x[i..<i + block].reduce(0) { $0 + $1 * $1 } / Float(block)).squareRoot()
        }
        let sorted = levels.sorted()
        let quiet = sorted[sorted.count * 9 / 10] / 30
        var phrases: [(Int, Int)] = [], start: Int?, last = 0, run = 0
        for (i, level) in levels.enumerated() {
            if level >= quiet {
                if start == nil { start = i }
                run = 0
                last = i
            } else {
                run += 1
                if let s = start, run >= 14 { phrases.append((s * block, (last + 1) * block)); start = nil }
            }
        }
        return phrases.filter { $0.1 - $0.0 > 36_000 }
    }

    static func stimuli(pauses: [Double]) throws -> [Stimulus] {
        var generator = HumanSpeech.SplitMix(1)
        func tone(_ n: Int) -> [Float] { (0..<n).map { _ in generator.nextSigned() * 50 / 32_768 } }
        var out: [Stimulus] = []
        for reader in HumanSpeech.readers {
            let x = try HumanSpeech.prompt(reader, "demo-congrats", sampleRate: 24_000)
            for (s, t) in phrases(x).prefix(2) {
                let phrase = Array(x[s..<t])
                let blocks = phrase.count / 240
                let middle = (blocks / 3)..<(2 * blocks / 3)
                let quietest = middle.min { a, b in
                    phrase[a * 240..<(a + 1) * 240].reduce(0) { $0 + $1 * $1 } < phrase[b * 240..<(b + 1) * 240].reduce(0) { $0 + $1 * $1 }
                }!
                let cut = quietest * 240
                for pause in pauses {
                    let audio = tone(24_000) + phrase[..<cut] + tone(Int(pause * 24_000)) + phrase[cut...] + tone(72_000)
                    out.append(Stimulus(samples: audio.map { Int16(max(-32_768, min(32_767, $0 * 32_768))) },
                                        cut: 1 + Double(cut) / 24_000, pause: pause, end: 1 + Double(phrase.count) / 24_000 + pause))
                }
            }
        }
        return out
    }

    /// The first turn's end as each rule decides it: (rule, when decided, in seconds).
    func firstEnds(_ stimulus: Stimulus) throws -> [String: Double] {
        let wav = ONNXReference.temporaryFile("stimulus.wav")
        defer { try? FileManager.default.removeItem(at: wav) }
        let writer = try WAVFileWriter(path: wav.path, format: .speech)
        try writer.write(stimulus.samples)
        try writer.close(sync: false)
        let output = try runTool(ShippedBinaries.path(of: "audiokernel-demo"),
                                 ["speech", "endpoint", ONNXReference.silero, ONNXReference.smartTurn, wav.path])
        var ends: [String: Double] = [:]
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 3, ends[fields[0]] == nil,
                  ["finished", "pause_ceiling", "ended", "maximumLength"].contains(fields[1]) else { continue }
            let decided = fields.firstIndex(of: "decided").flatMap { Double(fields[$0 + 1]) } ?? Double(fields[2])!
            ends[fields[0]] = decided
        }
        return ends
    }

    func testTheLearnedRuleWaitsThroughMoreHesitationsAndAnswersFinishedPhrasesSooner() throws {
        let stimuli = try Self.stimuli(pauses: [0, 1.2])
        XCTAssertGreaterThanOrEqual(stimuli.count, 12, "two phrases of each of four readers, at two pause lengths")
        var cut: [String: Int] = [:], hesitations = 0
        var delays: [String: [Double]] = [:]
        for stimulus in stimuli {
            let ends = try firstEnds(stimulus)
            if stimulus.pause > 0 { hesitations += 1 }
            for rule in ["model", "hangover"] {
                guard let end = ends[rule] else { continue }
                if stimulus.pause > 0, end < stimulus.cut + stimulus.pause - 0.05 {
                    cut[rule, default: 0] += 1
                } else if stimulus.pause == 0, end >= stimulus.end {
                    delays[rule, default: []].append(end - stimulus.end)
                }
            }
        }
        func median(_ values: [Double]) -> Double { values.isEmpty ? .infinity : values.sorted()[values.count / 2] }
        for rule in ["model", "hangover"] {
            print("endpointing: \(rule): \(cut[rule, default: 0]) of \(hesitations) 1.2 s hesitations cut; "
                  + "finished phrases ended \(Int(median(delays[rule, default: []]) * 1000)) ms after their last word (median of \(delays[rule, default: []].count))")
        }
        XCTAssertEqual(cut["hangover"], hesitations, "the hangover cuts every 1.2 s hesitation")
        XCTAssertLessThan(cut["model", default: 0], hesitations, "the learned rule waits through some")
        XCTAssertLessThan(median(delays["model", default: []]), median(delays["hangover", default: []]), "and ends finished phrases sooner")
    }
}
