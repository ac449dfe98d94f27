import AudioKernel
import Foundation
import PracticeKit
import PracticeNet
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// The session and the recorder meet across threads: a turn finishes on the capture thread
/// while the session, on its own queue, cancels that recording and begins another. Found by
/// the chaos run: the late turn was sent, and the session tried `listening → uploading`.
/// Here a real ``Recorder`` (fed offline) and practice-sim on TCP; the speaker is a stub
/// that accepts and drops the greeting.
final class SessionRecordingTests: XCTestCase {
    /// The microphone is the real recorder; the speaker takes what it is given.
    final class BenchAudio: SessionAudio, ReplySpeaker, @unchecked Sendable {
        let recorder: Recorder
        /// Reply audio bytes the speaker was given.
        let played = Awaitable(0)
        init(recorder: Recorder) { self.recorder = recorder }
        func beginReply() -> SpeakerReply? { SpeakerReply(speaker: self, number: 1) }
        func enqueue(_ bytes: UnsafeRawBufferPointer, reply: Int) -> Bool? { played.update { $0 += bytes.count }; return true }
        func endReply(_ number: Int) {}
        func stop(reply number: Int) {}
        func stopAll() -> Bool { false }
        func startRecording(handsFree: Bool) -> UInt64? { handsFree ? recorder.listen() : recorder.beginTurn() }
        func record(_ command: RecorderCommand) -> Bool {
            switch command {
            case .end: recorder.endTurn()
            case .cancel: recorder.cancelTurn()
            }
            return true
        }
        var inputIsEchoCancelled: Bool { recorder.inputIsEchoCancelled }
        func replay(_ pcm: [UInt8], rate: Double) -> Int? { nil }
        func stop(sound number: Int) {}
        var playbackRate: Double { 1 }
    }

    func testATurnThatFinishesAsItsRecordingIsCancelledIsDroppedAndTheNextOneIsSent() throws {
        let sim = try SimulatorHarness()
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let turns = Awaitable([RecordedTurn]())
        let speech = Awaitable([UInt64?]())
        let recorder = Recorder { event in
            switch event {
            case .turn(let turn): turns.update { $0.append(turn) }
            case .speechStarted(let recording, _): speech.update { $0.append(recording) }
            default: break
            }
        }
        let events = Awaitable([(String, JSONValue)]())
        let configuration = SimulatorHarness.configuration(sim.baseURL)
        let session = SessionController(settings: SessionSettings(userID: "chaos"), backend: { BackendClient(configuration: configuration) }, audio: BenchAudio(recorder: recorder),
                                        spoolDirectory: directory.appendingPathComponent("spool").path, stateDirectory: directory.path,
                                        metrics: Metrics(), logger: .disabled, publish: { event in
            events.update { $0.append((type(of: event).name, ProtocolEncoder.encode(event))) }
        })
        let commands = CommandTable()
        session.register(into: commands)
        func run(_ command: String, _ args: JSONValue = [:]) throws -> JSONValue {
            let result = Awaitable<Result<JSONValue, ControlError>?>(nil)
            XCTAssertTrue(commands.run(ControlRequest(id: 1, command: command, args: args)) { answer in result.update { $0 = answer } })
            XCTAssertTrue(result.wait(timeout: 10) { $0 != nil }, "\(command) unanswered")
            return try XCTUnwrap(result.value).get()
        }
        // A second of the learner, then silence past the hangover.
        let learner = try WAVDecoder.decode(contentsOfFile: SimulatorHarness.samplesDirectory + "/learner-1.wav").samples
        let utterance = Array(learner.prefix(24_000)) + [Int16](repeating: 0, count: 36_000)
        func speak() {
            utterance.withUnsafeBufferPointer { all in
                for start in stride(from: 0, to: all.count, by: 240) {
                    recorder.process(UnsafeBufferPointer(rebasing: all[start..<min(all.count, start + 240)]))
                }
            }
        }
        func spooled() -> [String] { events.value.filter { $0.0 == "turn.spooled" }.compactMap { $0.1["turn_id"]?.stringValue } }

        _ = try run("session.start", ["topic_id": "travel"])
        XCTAssertEqual(try run("listen")["stage"], "listening")
        speak()
        // The turn is out of the recorder, on its way to the session's queue ...
        let late = try XCTUnwrap(turns.value.first)
        XCTAssertEqual(speech.value, [late.recording])
        session.speechStarted(recording: late.recording)
        XCTAssertEqual(try run("session.get")["stage"], "recording")
        // ... and the learner cancels, then listens again, before it arrives.
        XCTAssertEqual(try run("turn.cancel")["stage"], "ready")
        XCTAssertEqual(try run("listen")["stage"], "listening")
        session.speechStarted(recording: late.recording)
        XCTAssertEqual(try run("session.get")["stage"], "listening", "late speech moved the session")
        session.recorded(late)
        XCTAssertEqual(try run("session.get")["stage"], "listening", "the late turn moved the session")
        XCTAssertEqual(spooled(), [], "the late turn was spooled")
        XCTAssertEqual(session.spoolListing().turns, [])

        // The recording the session waits for still arrives, and is sent.
        speak()
        let current = try XCTUnwrap(turns.value.last)
        XCTAssertNotEqual(current.recording, late.recording)
        XCTAssertEqual(speech.value.last, current.recording)
        session.speechStarted(recording: current.recording)
        XCTAssertEqual(try run("session.get")["stage"], "recording")
        session.recorded(current)
        XCTAssertTrue(events.wait(timeout: 10) { $0.contains { $0.0 == "turn.spooled" } })
        XCTAssertEqual(spooled().count, 1)
        XCTAssertTrue(events.wait(timeout: 10) { list in list.contains { $0.0 == "session.stage" && $0.1["stage"] == "uploading" } })
    }

    /// Voice barge-in, session side: the tutor speaks (the recorder follows the player), the
    /// learner speaks over it. Over an echo-cancelled microphone the reply stops and the
    /// speech is the next turn; over a plain one nothing happens (half-duplex).
    func testSpeechOverAReplyIsABargeInOnlyOnAnEchoCancelledMicrophone() throws {
        let learner = try WAVDecoder.decode(contentsOfFile: SimulatorHarness.samplesDirectory + "/learner-1.wav").samples
        for echoCancelled in [false, true] {
            let sim = try SimulatorHarness()
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            var recorderConfiguration = RecorderConfiguration()
            recorderConfiguration.echoCancelledInput = echoCancelled
            let session = Locked<SessionController?>(nil)
            let recorder = Recorder(configuration: recorderConfiguration) { event in
                switch event {
                case .turn(let turn): session.withLock { $0 }?.recorded(turn)
                case .speechStarted(let recording, _): session.withLock { $0 }?.speechStarted(recording: recording)
                default: break
                }
            }
            let events = Awaitable([(String, JSONValue)]())
            let configuration = SimulatorHarness.configuration(sim.baseURL)
            let audio = BenchAudio(recorder: recorder)
            let controller = SessionController(settings: SessionSettings(userID: "barge"), backend: { BackendClient(configuration: configuration) },
                                               audio: audio, spoolDirectory: directory.appendingPathComponent("spool").path,
                                               stateDirectory: directory.path, metrics: Metrics(), logger: .disabled, publish: { event in
                events.update { $0.append((type(of: event).name, ProtocolEncoder.encode(event))) }
            })
            session.withLock { $0 = controller }
            let started = Awaitable<Result<JSONValue, ControlError>?>(nil)
            let commands = CommandTable()
            controller.register(into: commands)
            _ = commands.run(ControlRequest(id: 1, command: "session.start", args: ["topic_id": "travel"])) { answer in started.update { $0 = answer } }
            XCTAssertTrue(started.wait(timeout: 10) { $0 != nil })
            XCTAssertEqual(controller.snapshot.stage, .greeting)
            // The greeting's first sample reaches the speaker; the tutor is speaking.
            XCTAssertTrue(audio.played.wait(timeout: 10) { $0 > 0 }, "no greeting audio")
            recorder.setPlaybackActive(true)
            controller.playerEvent(.started(latencyFrames: 0, reply: 1))
            controller.queue.sync {}
            // Two seconds of the learner, then silence past the hangover.
            let speech = Array(learner.prefix(48_000)) + [Int16](repeating: 0, count: 36_000)
            speech.withUnsafeBufferPointer { all in
                for start in stride(from: 0, to: all.count, by: 240) {
                    recorder.process(UnsafeBufferPointer(rebasing: all[start..<min(all.count, start + 240)]))
                }
            }
            controller.queue.sync {}
            func named(_ name: String) -> [JSONValue] { events.value.filter { $0.0 == name }.map(\.1) }
            if echoCancelled {
                XCTAssertEqual(named("turn.started").last?["mode"], "voice_barge_in")
                XCTAssertEqual(named("reply.finished").last?["interrupted"], true, "the greeting was not stopped")
                XCTAssertTrue(events.wait(timeout: 10) { $0.contains { $0.0 == "turn.spooled" } }, "the learner's speech was not the next turn")
                let recorded = try XCTUnwrap(named("turn.recorded").first)
                // 300 ms of pre-roll, 2 s of speech (its onset a little in), the hangover.
                XCTAssertEqual(recorded["speech_s"]?.doubleValue ?? 0, 1.9, accuracy: 0.3)
            } else {
                XCTAssertTrue(named("turn.started").isEmpty, "speech over the tutor started a turn on a plain microphone")
                XCTAssertEqual(controller.snapshot.stage, .greeting)
            }
        }
    }
}
