@testable import AudioKernel
import Foundation
import SpeechModels
import TestSupport
import XCTest

/// A recorder opened without its speech models (the daemon opens the microphone at once and
/// loads them beside it) takes them between turns: the turn begun before ends by the rule it
/// began with, the next ones by the models. Silero is the real one (its file from the pinned
/// wheel); smart-turn's answer is a stand-in that calls every pause finished, since the debug
/// build's smart-turn takes most of a minute to load and the rule, not its number, is tested.
final class RecorderAdoptionTests: XCTestCase {
    private static let models = ProcessInfo.processInfo.environment["PRACTICED_MODELS_DIR"] ?? "/opt/practiced-ci/models"

    private func models() throws -> LearnedEndpointing {
        let vad = try SileroVAD(onnx: [UInt8](Data(contentsOf: URL(fileURLWithPath: Self.models + "/silero_vad_op18_ifless.onnx"))))
        return LearnedEndpointing(vad: vad, worker: try TurnCompletionWorker { _, _ in 0.99 })
    }

    /// Allison (asterisk-core-sounds) saying one prompt after half a second of quiet room.
    private func utterance() throws -> [Int16] {
        var script = MicrophoneScript()
        script.silence(ms: 500)
        script.append(try HumanSpeech.voice("en_US_f_Allison", "activated", trimmed: true), isSpeech: true)
        return script.samples
    }

    /// Then the quiet room, a period at a time, each waiting a moment for smart-turn's worker,
    /// until the recorder has handed over `turns` turns or 5 s of quiet have passed.
    private func quietUntil(_ turns: Int, _ recorder: Recorder, _ log: EventLog<RecorderEvent>) {
        var room = MicrophoneScript()
        room.silence(ms: 10)
        for _ in 0..<500 where endReasons(log).count < turns {
            recorder.feed(room.samples)
            log.wait(timeout: 0.01) { self.endReasons($0).count >= turns }
        }
    }

    private func endReasons(_ log: EventLog<RecorderEvent>) -> [RecordedTurn.EndReason] { endReasons(log.snapshot()) }

    private func endReasons(_ events: [(event: RecorderEvent, time: Date)]) -> [RecordedTurn.EndReason] {
        events.compactMap { if case .turn(let turn) = $0.event { return turn.endReason } else { return nil } }
    }

    func testAdoptedModelsEndTheNextHandsFreeTurnAndTheTurnInProgressKeepsItsRule() throws {
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder { log.append($0) }
        let speech = try utterance()
        let endpointing = try models()
        defer { endpointing.worker.stop() }

        // Without models: the level rule's hangover ends the turn.
        recorder.listen()
        recorder.feed(speech)
        quietUntil(1, recorder, log)
        XCTAssertEqual(endReasons(log), [.endOfSpeech])

        // Adopted in the middle of a turn: that turn still ends by the hangover...
        recorder.listen()
        let before = log.snapshot().count
        var fed = 0
        while fed < speech.count, !log.snapshot().dropFirst(before).contains(where: { if case .speechStarted = $0.event { true } else { false } }) {
            recorder.feed(Array(speech[fed..<min(speech.count, fed + 240)]))
            fed += 240
        }
        XCTAssertLessThan(fed, speech.count, "the turn never started")
        XCTAssertTrue(recorder.adopt(endpointing))
        recorder.feed(Array(speech[min(fed, speech.count)...]))
        quietUntil(2, recorder, log)
        XCTAssertEqual(endReasons(log), [.endOfSpeech, .endOfSpeech], "a turn changed its rule half-way")

        // ...and the next one by the models: smart-turn was asked at the pause and answered finished.
        recorder.listen()
        recorder.feed(speech)
        quietUntil(3, recorder, log)
        XCTAssertEqual(endReasons(log).count, 3, "\(endReasons(log))")
        XCTAssertEqual(endReasons(log).last, .finished)
        // Ended at the first question (150 ms into the pause, Silero's 32 ms frames late at most
        // twice): what the learner waited, as the turn tells it.
        let waits = log.snapshot().compactMap { if case .turn(let turn) = $0.event { return turn.endWait } else { return nil } }
        XCTAssertEqual(waits.count, 3)
        XCTAssertEqual(waits[0], 0.7, accuracy: 0.04, "the hangover's")
        XCTAssertGreaterThanOrEqual(waits[2], 0.15)
        XCTAssertLessThan(waits[2], 0.35)
        // And it begins at its pre-roll (300 ms) before the words, as the level rule's do: the
        // models heard the speech at the recorder's own positions, not at their stream's.
        let durations = log.snapshot().compactMap { if case .turn(let turn) = $0.event { return turn.duration } else { return nil } }
        let words = Double(speech.count) / 24_000 - 0.5
        XCTAssertLessThan(durations[2], 0.3 + words + waits[2] + 0.1, "the turn begins long before the speech")
        XCTAssertGreaterThan(durations[2], words + waits[2])
    }

    /// Models cannot take a stereo recorder's audio: refused, and its turns keep the level rule.
    func testAStereoRecorderRefusesTheModels() throws {
        let recorder = Recorder(format: WAVFormat(sampleRate: 24_000, channels: 2)) { _ in }
        let endpointing = try models()
        defer { endpointing.worker.stop() }
        XCTAssertFalse(recorder.adopt(endpointing))
    }
}
