@testable import AudioKernel
import Foundation
import SpeechModels
import TestSupport
import XCTest

/// A barge-in's turn starts at the learner's words, not in the tutor's residue before them.
/// Offline, the loop the daemon closes: the player renders Allison (Debian's
/// asterisk-core-sounds) period by period, her raw echo reaches the microphone 40 ms later and
/// 13, 10 or 8 dB down (a canceller that lost track passes that much), and Carlo (a man,
/// Italian) or June (a woman, Canadian French) speaks over her at her level; at the speech's
/// start the reply stops, as the daemon stops it. Before the residual-echo estimate, the words
/// began 410–600 ms into the turn at 13 dB, up to 1.4 s at 8 dB: the pre-roll and the start's
/// window held her voice.
final class RecorderBargeInStartTests: XCTestCase {
    private static let models = ProcessInfo.processInfo.environment["PRACTICED_MODELS_DIR"] ?? "/opt/practiced-ci/models"

    private struct BargeIn {
        /// Where the learner's words start in the turn, in ms (nil: no turn).
        var wordsInto: Double?
        /// Whether the turn holds the learner's prompt to its end.
        var whole = false
        /// Speech starts heard.
        var starts = 0
        /// Whether the first start came while the tutor was still speaking.
        var stoppedTheTutor = false
    }

    /// A prompt at 24 kHz, its speech at −21 dBFS.
    private func voice(_ reader: String, _ name: String) throws -> [Int16] { try HumanSpeech.voice(reader, name, speechLevel: -21) }

    /// The room: `tutor` played, its echo `echoLoss` dB down and 40 ms late, `learner` (if any)
    /// from `start`; 2.5 s of quiet after, for the turn to end at its pause ceiling.
    private func bargeIn(tutor: [Int16], learner: [Int16], at start: Int, echoLoss: Double) throws -> BargeIn {
        // smart-turn hears more to come at every pause: the ceiling ends the turn, so that a
        // pause in the learner's prompt cannot cut it.
        let (recorder, player, log, endpointing) = try EchoCancelledRoom.learned(models: Self.models)
        defer { endpointing.worker.stop() }
        player.beginReply()
        player.enqueue(WAVBuilder.samples(tutor))
        player.endReply()

        let period = 240, delay = 960
        let gain = pow(10, -echoLoss / 20) * 32_768
        let length = max(tutor.count, start + learner.count) + 60_000
        var echo = [Int16](repeating: 0, count: length + delay + period)
        var microphone = [Int16](repeating: 0, count: length)
        var rendered = [Float](repeating: 0, count: period)
        var outcome = BargeIn()
        var turn: RecordedTurn?
        var position = 0, stopped = false
        while position + period <= length, turn == nil {
            rendered.withUnsafeMutableBufferPointer { player.render(into: $0) }
            for i in 0..<period { echo[position + delay + i] = Int16(clamping: Int((Double(rendered[i]) * gain).rounded())) }
            for i in position..<(position + period) {
                let spoken = i >= start && i - start < learner.count ? Int(learner[i - start]) : 0
                microphone[i] = Int16(clamping: Int(echo[i]) + spoken)
            }
            microphone.withUnsafeBufferPointer { recorder.process(UnsafeBufferPointer(rebasing: $0[position..<(position + period)])) }
            position += period
            let events = log.snapshot().map(\.event)
            outcome.starts = events.filter { if case .speechStarted = $0 { true } else { false } }.count
            if outcome.starts > 0, !stopped {
                // The daemon stops the reply at the speech's start.
                outcome.stoppedTheTutor = player.isActive
                player.stop()
                stopped = true
            }
            turn = events.lazy.compactMap { if case .turn(let recorded) = $0 { recorded } else { nil } }.first
        }
        guard let turn, !learner.isEmpty else { return outcome }
        // The turn is the microphone's samples from its first: found where they match.
        let samples = try WAVDecoder.decode(turn.wav).samples
        let probe = Array(samples.prefix(480))
        guard let first = (0...(position - probe.count)).first(where: { microphone[$0..<($0 + probe.count)].elementsEqual(probe) }) else {
            XCTFail("the turn is not the microphone's")
            return outcome
        }
        let words = start + HumanSpeech.wordsStart(learner)
        outcome.wordsInto = Double(words - first) / 24
        outcome.whole = first <= words && first + samples.count >= start + learner.count - 2_400
        return outcome
    }

    func testABargeInsTurnStartsAtTheLearnersWordsAtEachEchoLoss() throws {
        let tutor = try voice("en_US_f_Allison", "agent-incorrect")
        let learners = [("Carlo", try voice("it_IT_m_Carlo", "vm-tempremoved")), ("June", try voice("fr_CA_f_June", "vm-tempremoved"))]
        var report: [String] = []
        for loss in [13.0, 10.0, 8.0] {
            // The tutor alone never interrupts herself: at 8 dB her echo passes the level
            // rule's 12 dB (the Geigel rule), but not the estimate of her own voice.
            XCTAssertEqual(try bargeIn(tutor: tutor, learner: [], at: 0, echoLoss: loss).starts, 0, "Allison's echo at \(loss) dB interrupted her")
            for (name, learner) in learners {
                let outcome = try bargeIn(tutor: tutor, learner: learner, at: 24_000, echoLoss: loss)
                let into = try XCTUnwrap(outcome.wordsInto, "\(name) at \(loss) dB: no turn")
                report.append("\(name) \(Int(loss)) dB: words \(Int(into)) ms into the turn")
                XCTAssertTrue(outcome.stoppedTheTutor, "\(name) at \(loss) dB: heard only after the tutor")
                XCTAssertTrue(outcome.whole, "\(name) at \(loss) dB: the turn does not hold every word")
                XCTAssertGreaterThanOrEqual(into, 20, "\(name) at \(loss) dB: no pre-roll before the words")
                XCTAssertLessThanOrEqual(into, 350, "\(name) at \(loss) dB: the turn opens with the tutor")
            }
        }
        print(report.joined(separator: "\n"))
    }
}
