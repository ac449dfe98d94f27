import AudioKernel
import Foundation
@testable import PracticeKit
import PracticeNet
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// The whole session on the test's clock (``TestClock``): a real ``Recorder`` fed
/// offline, practice-sim on TCP, and a minute of a turn's retries run in milliseconds, in
/// the order the test moves the clock.
final class SessionClockTests: XCTestCase {
    func testAMinuteOfTurnRetriesRunsOnTheSessionsClockThenTheTurnIsPending() throws {
        let sim = try SimulatorHarness()
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = TestClock()
        let session = Locked<SessionController?>(nil)
        let recorder = Recorder { event in
            switch event {
            case .turn(let turn): session.withLock { $0 }?.recorded(turn)
            case .speechStarted(let recording, _): session.withLock { $0 }?.speechStarted(recording: recording)
            default: break
            }
        }
        let events = Awaitable([any ProtocolEvent]())
        let configuration = SimulatorHarness.configuration(sim.baseURL)
        let controller = SessionController(settings: SessionSettings(userID: "clock"), backend: { BackendClient(configuration: configuration) },
                                           audio: SessionRecordingTests.BenchAudio(recorder: recorder),
                                           spoolDirectory: directory.appendingPathComponent("spool").path, stateDirectory: directory.path,
                                           metrics: Metrics(), logger: .disabled, scheduler: clock) { event in events.update { $0.append(event) } }
        session.withLock { $0 = controller }
        let commands = CommandTable()
        controller.register(into: commands)
        func run<C: ControlCommand>(_ command: C.Type, _ args: JSONValue = [:]) throws -> JSONValue {
            let result = Awaitable<Result<JSONValue, ControlError>?>(nil)
            XCTAssertTrue(commands.run(ControlRequest(id: 1, command: C.name, args: args)) { answer in result.update { $0 = answer } })
            XCTAssertTrue(result.wait(timeout: 10) { $0 != nil }, "\(C.name) unanswered")
            return try XCTUnwrap(result.value).get()
        }
        func stage() throws -> String? { try run(Command.SessionGet.self)["stage"]?.stringValue }

        _ = try run(Command.SessionStart.self, ["topic_id": "travel"])
        // Listening stops the greeting; then the backend goes away and time stands still.
        XCTAssertEqual(try run(Command.Listen.self)["stage"], "listening")
        clock.manual()
        sim.goDown()
        let learner = try WAVDecoder.decode(contentsOfFile: SimulatorHarness.samplesDirectory + "/learner-1.wav").samples
        let utterance = Array(learner.prefix(24_000)) + [Int16](repeating: 0, count: 36_000)
        utterance.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: all.count, by: 240) { recorder.process(UnsafeBufferPointer(rebasing: all[start..<min(all.count, start + 240)])) }
        }

        // Doubling from 1 s to 10 s, ±20 %, until the next would pass the 60 s the turn is
        // tried for: then pending, kept in the spool.
        var delays: [Double] = []
        let pending = { events.value.contains { $0 is Event.TurnPending } }
        while !pending() && delays.count < 20 {
            XCTAssertTrue(events.wait(timeout: 10) { list in
                list.contains { $0 is Event.TurnPending } || list.compactMap { $0 as? Event.TurnRetrying }.count > delays.count
            }, "attempt \(delays.count + 2) or the end")
            guard let retrying = events.value.compactMap({ $0 as? Event.TurnRetrying }).dropFirst(delays.count).first else { break }
            delays.append(retrying.delayS)
            // The retry is asked for in the same step as its event, on the session's queue.
            controller.queue.sync {}
            XCTAssertGreaterThanOrEqual(clock.waiting, 1, "the retry waits for the clock")
            clock.advance(by: retrying.delayS)
        }
        let base = [1.0, 2, 4, 8, 10, 10, 10, 10, 10, 10, 10]
        XCTAssertTrue(pending(), "the turn was never given up: \(delays)")
        XCTAssertGreaterThanOrEqual(delays.count, 5)
        for (delay, expected) in zip(delays, base) {
            XCTAssertTrue((expected * 0.8...expected * 1.2).contains(delay), "\(delays) against \(base) ± 20 %")
        }
        XCTAssertLessThanOrEqual(delays.reduce(0, +), 60, "within the 60 s the turn is tried for")
        XCTAssertGreaterThan(delays.reduce(0, +) + 10 * 1.2, 60, "given up only when the next wait would pass 60 s")
        let given = try XCTUnwrap(events.value.compactMap { $0 as? Event.TurnPending }.first)
        XCTAssertEqual(given.reason, .undelivered)
        XCTAssertEqual(given.attempts, delays.count + 1)
        XCTAssertEqual(controller.spoolListing().turns.count, 1, "kept in the spool")
        XCTAssertEqual(try stage(), "ready")
    }
}
