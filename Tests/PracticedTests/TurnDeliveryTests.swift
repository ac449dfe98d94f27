import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// Backend faults during turns, with every part real: no recorded turn is ever lost, and a
/// resent turn carries its first key (practice-sim counts the keys it sees).
final class TurnDeliveryTests: XCTestCase {
    var rig: KioskRig!

    override func tearDown() {
        rig?.stop()
        rig = nil
    }

    /// A kiosk with a conversation started and its greeting over: a watcher and a client.
    private func kioskInSession(arguments: [String] = [], _ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws
        -> (EventWatcher, ControlClient) {
        rig = try KioskRig(arguments: arguments, configure)
        let watcher = try rig.watcher()
        let control = try rig.daemon.client()
        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel"])
        XCTAssertNotNil(watcher.waitForStage("ready"))
        return (watcher, control)
    }

    /// The id of the turn spooled after `mark`.
    private func spooledTurn(_ watcher: EventWatcher, after mark: Int, file: StaticString = #filePath, line: UInt = #line) -> String? {
        watcher.wait(for: Event.TurnSpooled.self, after: mark, file: file, line: line)?["data"]?["turn_id"]?.stringValue
    }

    private func spoolCount(_ control: ControlClient) throws -> Int? { try control.request(Command.SpoolList.self)["turns"]?.arrayValue?.count }



    private func keys() -> [String: JSONValue] {
        guard case .object(let members) = rig.sim.simulator.idempotencyKeys else { return [:] }
        return Dictionary(uniqueKeysWithValues: members)
    }

    func testStillConnectingAtTheStartIsRetriedTransparently() throws {
        rig = try KioskRig { $0.connectingMs = 1_500 }
        let watcher = try rig.watcher()
        let control = try rig.daemon.client()
        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel"])
        // The greeting waits for the connection; a turn sent at once meets 503s and retries.
        XCTAssertNotNil(watcher.waitForStage("ready"))
        let mark = watcher.count
        rig.sim.simulator.faults.failCount = 2
        rig.sim.simulator.faults.failStatus = 503
        _ = try control.request(Command.Say.self, ["text": "Is anybody there?"])
        XCTAssertNotNil(watcher.wait(for: Event.ReplyRetrying.self, after: mark))
        XCTAssertNotNil(watcher.wait(for: Event.Transcript.self, after: mark))
        XCTAssertNotNil(watcher.wait(for: Event.ReplyFinished.self, after: mark))
    }

    func testA500OnUploadIsSentAgainWithTheSameKeyAndDeliveredOnce() throws {
        let (watcher, control) = try kioskInSession()
        rig.sim.simulator.faults.failCount = 2
        rig.sim.simulator.faults.failStatus = 500
        let mark = watcher.count
        try rig.pushToTalk(control)
        guard let id = spooledTurn(watcher, after: mark) else { return }
        XCTAssertNotNil(watcher.wait(for: Event.TurnRetrying.self, after: mark))
        // Spooled before the first attempt failed: an order of events, not a count taken at a
        // moment (the release build's retry can come before the test looks).
        let spooledAt = try XCTUnwrap(watcher.position(of: Event.TurnSpooled.self, after: mark))
        XCTAssertLessThan(spooledAt, try XCTUnwrap(watcher.position(of: Event.TurnRetrying.self, after: mark)))
        XCTAssertNotNil(watcher.wait(for: Event.TurnAccepted.self, after: mark, where: { $0["turn_id"]?.stringValue == id }))
        XCTAssertNotNil(watcher.wait(for: Event.ReplyFinished.self, after: mark))
        XCTAssertEqual(watcher.all(Event.TurnRetrying.self, after: mark).count, 2)
        // The two refused attempts never reached the chat handler; the third did, once.
        XCTAssertEqual(keys()[id]?["requests"], 1)
        XCTAssertEqual(keys()[id]?["segments"], 1)
        XCTAssertEqual(try spoolCount(control), 0)
    }

    func testAStreamDroppedMidReplyStopsPlaybackAndReportsAnIncompleteReply() throws {
        let (watcher, control) = try kioskInSession { $0.pace = 1 }
        rig.sim.simulator.faults.dropAfterEvents = 6
        let mark = watcher.count
        try rig.pushToTalk(control)
        guard let incomplete = watcher.wait(for: Event.ReplyIncomplete.self, after: mark) else { return }
        XCTAssertNotNil(incomplete["data"]?["turn_id"]?.stringValue)
        XCTAssertNotNil(watcher.wait(for: Event.PlaybackFinished.self, after: mark, where: { $0["interrupted"] == true }))
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark))
        // The backend had the turn: it is not sent again and not left in the spool.
        XCTAssertEqual(rig.chatRequests.count, 1)
        XCTAssertEqual(try spoolCount(control), 0)
        // The daemon goes on: the next turn works.
        rig.sim.simulator.faults.dropAfterEvents = nil
        let next = watcher.count
        _ = try control.request(Command.Say.self, ["text": "Let me say it again"])
        XCTAssertNotNil(watcher.wait(for: Event.ReplyFinished.self, after: next))
    }

    func testTheBackendDownThenBackDeliversTheTurnFromTheSpool() throws {
        let (watcher, control) = try kioskInSession()
        rig.sim.goDown()
        let mark = watcher.count
        try rig.pushToTalk(control)
        guard let id = spooledTurn(watcher, after: mark) else { return }
        XCTAssertNotNil(watcher.wait(for: Event.TurnRetrying.self, after: mark, timeout: 30))
        // While the backend is away the turn is on disk.
        let listed = try control.request(Command.SpoolList.self)["turns"]?.arrayValue ?? []
        XCTAssertEqual(listed.first?["id"]?.stringValue, id)
        try rig.sim.comeBack()
        XCTAssertNotNil(watcher.wait(for: Event.TurnAccepted.self, after: mark, timeout: 30, where: { $0["turn_id"]?.stringValue == id }))
        XCTAssertNotNil(watcher.wait(for: Event.ReplyFinished.self, after: mark))
        XCTAssertEqual(keys()[id]?["segments"], 1)
        XCTAssertEqual(try spoolCount(control), 0)
        // One retry loop: the delivery's. The stream inside each attempt is tried once.
        XCTAssertTrue(watcher.all(Event.ReplyRetrying.self, after: mark).isEmpty, "a turn's upload retried inside its own retry: \(watcher.names(after: mark))")
    }

    func testAnUndeliverableTurnIsReportedPendingAndTheClientDecides() throws {
        let (watcher, control) = try kioskInSession(arguments: ["--turn-retry-s", "2"])
        rig.sim.goDown()
        let mark = watcher.count
        try rig.pushToTalk(control)
        guard let pending = watcher.wait(for: Event.TurnPending.self, after: mark, timeout: 40),
              let id = pending["data"]?["turn_id"]?.stringValue else { return }
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark))
        XCTAssertEqual(try control.request(Command.SpoolList.self)["turns"]?.arrayValue?.first?["state"], "pending")
        // The UI sends it again once the backend is back.
        try rig.sim.comeBack()
        let again = watcher.count
        _ = try control.request(Command.SpoolRetry.self, ["turn_id": .string(id)])
        XCTAssertNotNil(watcher.wait(for: Event.TurnAccepted.self, after: again, where: { $0["turn_id"]?.stringValue == id }))
        XCTAssertNotNil(watcher.wait(for: Event.ReplyFinished.self, after: again))
        XCTAssertEqual(keys()[id]?["segments"], 1)
        // Discarding needs a turn that exists.
        XCTAssertEqual(control.failure(Command.SpoolDiscard.self, ["turn_id": .string(id)])?.code, .badArguments)
        XCTAssertEqual(control.failure(Command.SpoolRetry.self, ["turn_id": "../../etc/passwd"])?.code, .badArguments)
    }

    func testKilledMidUploadTheTurnIsRecoveredAtRestartAndDeliveredOnce() throws {
        var (watcher, control) = try kioskInSession()
        // The backend is slow to answer: the upload is in flight when the daemon dies.
        rig.sim.simulator.faults.latencyMs = 5_000
        let mark = watcher.count
        let arrived = rig.sim.arrived.value
        try rig.pushToTalk(control)
        guard let id = spooledTurn(watcher, after: mark) else { return }
        XCTAssertNotNil(watcher.wait(for: Event.TurnUploading.self, after: mark))
        XCTAssertTrue(rig.sim.arrived.wait(timeout: 10) { $0 > arrived }, "the upload never reached the backend")
        watcher.stop()
        rig.daemon.process.terminate(signal: SIGKILL)
        rig.sim.simulator.faults.latencyMs = 0

        try rig.startDaemon()
        XCTAssertTrue(rig.daemon.waitForLog("wait for delivery: \(id)"), rig.daemon.log)
        watcher = try rig.watcher()
        control = try rig.daemon.client()
        let listed = try control.request(Command.SpoolList.self)["turns"]?.arrayValue ?? []
        XCTAssertEqual(listed.map { $0["id"]?.stringValue }, [id])
        let sessionID = listed.first?["session_id"]?.stringValue
        // The UI chooses to send it: the conversation it belongs to goes on.
        _ = try control.request(Command.SpoolRetry.self, ["turn_id": .string(id)])
        XCTAssertEqual(watcher.wait(for: Event.SessionResumed.self)?["data"]?["session_id"]?.stringValue, sessionID)
        XCTAssertNotNil(watcher.wait(for: Event.TurnAccepted.self, where: { $0["turn_id"]?.stringValue == id }))
        XCTAssertNotNil(watcher.wait(for: Event.ReplyFinished.self))
        // The first attempt is answered (to nobody) once the backend's delay has passed.
        XCTAssertTrue(Poll.until(timeout: 15) { self.keys()[id]?["requests"] == 2 }, "the resent turn did not carry its first key: \(keys())")
        XCTAssertEqual(keys()[id]?["segments"], 1, "the turn was delivered twice")
        XCTAssertEqual(try spoolCount(control), 0)
    }

    func testSIGTERMWhileRecordingSpoolsTheTurn() throws {
        let (_, control) = try kioskInSession()
        _ = try control.request(Command.TurnStart.self)
        let before = rig.microphone.spoken.value
        rig.microphone.say(KioskRig.learner)
        XCTAssertTrue(rig.microphone.spoken.wait(timeout: 10) { $0 >= before + KioskRig.learner.count })
        XCTAssertEqual(rig.daemon.process.terminate(signal: SIGTERM), 0)
        XCTAssertTrue(rig.daemon.log.contains("spooled at shutdown"), rig.daemon.log)
        try rig.startDaemon()
        let listed = try rig.daemon.client().request(Command.SpoolList.self)["turns"]?.arrayValue ?? []
        XCTAssertEqual(listed.count, 1)
        XCTAssertEqual(rig.chatRequests.count, 0)
    }
}
