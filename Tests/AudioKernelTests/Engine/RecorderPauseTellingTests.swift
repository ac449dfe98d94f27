@testable import AudioKernel
import Foundation
import SpeechModels
import TestSupport
import XCTest

/// "Still listening" is told of the turn being recorded only. The learner's pause goes on
/// after the turn ended ("done" pressed in it): the endpointer keeps following that speech,
/// so that a listen may take it up, and smart-turn is asked again at its later point. Its
/// "more to come" then is of no turn; told, the page said "still listening" over the upload
/// and the tutor's reply (CI, KioskUITestsOnCog). Silero is the real one; smart-turn's
/// answer a stand-in that hears more to come at every question (0.9: under both questions'
/// thresholds, above the 0.85 the second is asked after).
final class RecorderPauseTellingTests: XCTestCase {
    private static let models = ProcessInfo.processInfo.environment["PRACTICED_MODELS_DIR"] ?? "/opt/practiced-ci/models"

    private func isWaiting(_ event: RecorderEvent) -> Bool {
        if case .speechPaused(_, let waiting, _) = event { return waiting } else { return false }
    }

    private func isTurn(_ event: RecorderEvent) -> Bool {
        if case .turn = event { return true } else { return false }
    }

    func testAPauseGoingOnAfterTheTurnEndedIsNotToldAsStillListening() throws {
        let vad = try SileroVAD(onnx: [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.models + "/silero_vad_op18_ifless.onnx"))))
        let asked = Awaitable(0)
        let endpointing = LearnedEndpointing(vad: vad, worker: try TurnCompletionWorker { _, _ in
            asked.update { $0 += 1 }
            return 0.9
        })
        defer { endpointing.worker.stop() }
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder(endpointing: endpointing) { log.append($0) }
        var speech = MicrophoneScript()
        speech.silence(ms: 500)
        speech.append(try HumanSpeech.voice("en_US_f_Allison", "activated", trimmed: true), isSpeech: true)
        var room = MicrophoneScript()
        room.silence(ms: 10)

        recorder.listen()
        recorder.feed(speech.samples)
        // Quiet until smart-turn's first answer (150 ms into the pause) says more is to come.
        for _ in 0..<200 where !log.snapshot().contains(where: { isWaiting($0.event) }) {
            recorder.feed(room.samples)
            log.wait(timeout: 0.01) { $0.contains { self.isWaiting($0.event) } }
        }
        XCTAssertTrue(log.snapshot().contains { isWaiting($0.event) }, "never told still listening")
        // The learner presses done in the pause; the room stays quiet past the later question
        // (250 ms) to the pause's ceiling (2 s), where the endpointer lets the speech go.
        recorder.endTurn()
        let stopped = { (events: [(event: RecorderEvent, time: Date)]) in
            events.contains { if case .speechStopped = $0.event { true } else { false } }
        }
        for _ in 0..<400 where !stopped(log.snapshot()) {
            recorder.feed(room.samples)
            log.wait(timeout: 0.01, stopped)
        }
        XCTAssertTrue(stopped(log.snapshot()), "the pause never reached its ceiling")
        let events = log.snapshot().map(\.event)
        let turn = try XCTUnwrap(events.firstIndex(where: isTurn), "the turn did not end")
        if case .turn(let recorded) = events[turn] { XCTAssertEqual(recorded.endReason, .released) }
        XCTAssertEqual(events[turn...].filter(isWaiting).count, 0, "still listening told after the turn ended")
        // Asked again all the same: the pause it follows may be the next turn's.
        XCTAssertGreaterThanOrEqual(asked.value, 2)
    }
}
