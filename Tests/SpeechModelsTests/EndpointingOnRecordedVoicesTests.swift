import AudioKernel
import Foundation
import TestSupport
import XCTest

/// Where turns end on recorded human voices with a hesitation inserted mid-phrase, for the
/// learned rule (``TurnEndpointer``: Silero VAD and smart-turn, run by the shipped
/// `audiokernel-demo speech endpoint`) beside the level hangover (``SpeechDetector``).
/// The stimuli are ``HesitantSpeech``'s.
final class EndpointingOnRecordedVoicesTests: XCTestCase {
    /// The first turn's end as each rule decides it: (rule, when decided, in seconds).
    func firstEnds(_ stimulus: HesitantSpeech.Stimulus) throws -> [String: Double] {
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
        let stimuli = try HesitantSpeech.stimuli(pauses: [0, 1.2])
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
