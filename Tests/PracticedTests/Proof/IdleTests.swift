import Foundation
import PracticeControl
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// An idle kiosk runs for weeks: the daemon closes the devices when nothing needs them,
/// wakes only a few times a second, and opens them again the moment a session starts.
final class IdleTests: XCTestCase {
    var rig: KioskRig!

    override func tearDown() {
        rig?.stop()
        rig = nil
    }

    private func waitForDevices(_ state: String, _ watcher: EventWatcher, after mark: Int, timeout: Double = 15) -> Bool {
        var seen: Set<String> = []
        _ = watcher.events.wait(timeout: timeout) { list in
            seen = Set(list.dropFirst(mark).filter { $0["event"]?.stringValue == "device.state" && $0["data"]?["state"]?.stringValue == state }
                .compactMap { $0["data"]?["direction"]?.stringValue })
            return seen.count == 2
        }
        return seen.count == 2
    }

    func testIdleDevicesAreClosedTheDaemonSleepsAndASessionOpensThemAgain() throws {
        rig = try KioskRig(arguments: ["--audio-idle-close-s", "1"])
        let watcher = try rig.watcher(topics: ["session", "playback", "device"])
        let control = try rig.daemon.client()
        XCTAssertTrue(waitForDevices("idle", watcher, after: 0), "devices not closed when idle: \(watcher.names())")
        XCTAssertEqual(try control.request(Command.Status.self)["devices"]?["capture"]?["state"], "idle")

        let idle = try ProcessStatistics.idle(pid: rig.daemon.process.pid, seconds: 5)
        ProofRun.report(String(format: "idle daemon: %.1f wake-ups/s, %.3f %% of a core", idle.wakeupsPerSecond, idle.coreShare * 100))
        // The control server's 1 s idle-client check and the 2 s device keeper, with slack
        // for the clients' own requests; an open device alone would be 100+ per second.
        XCTAssertLessThan(idle.wakeupsPerSecond, 10)

        // A session needs them: opened before the greeting, which plays.
        let mark = watcher.count
        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel"])
        XCTAssertTrue(waitForDevices("running", watcher, after: mark))
        XCTAssertNotNil(watcher.wait(for: Event.ReplyAudioStarted.self, after: mark))
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark))
        // Held through the session (longer than the idle delay), released after it.
        let id = try XCTUnwrap(rig.speakHandsFree(ProofRun.speech(seconds: 1, variant: 0), control: control, watcher: watcher))
        XCTAssertNotNil(watcher.outcome(of: id, after: mark, timeout: 30, accepting: ["reply.finished"]))
        XCTAssertFalse(watcher.all(Event.DeviceState.self, after: mark).contains { $0["state"] == "idle" }, "devices closed during the session")
        let closed = watcher.count
        _ = try control.request(Command.SessionClose.self)
        XCTAssertTrue(waitForDevices("idle", watcher, after: closed))
    }

    /// A rig whose devices close after 1 s idle, closed; then a client that watches the level
    /// (`level.watch`), which opens them and receives levels. The device watcher and that client.
    private func watchingTheLevel() throws -> (EventWatcher, ControlClient) {
        rig = try KioskRig(arguments: ["--audio-idle-close-s", "1"])
        let watcher = try rig.watcher(topics: ["device"])
        XCTAssertTrue(waitForDevices("idle", watcher, after: 0))
        let meter = try rig.daemon.client()
        let mark = watcher.count
        _ = try meter.request(Command.LevelWatch.self, ["enabled": true])
        XCTAssertTrue(waitForDevices("running", watcher, after: mark))
        XCTAssertNotNil(meter.waitForEvent(Event.Level.self))
        return (watcher, meter)
    }

    func testALevelWatcherKeepsTheDevicesOpen() throws {
        let (watcher, meter) = try watchingTheLevel()
        // A level watcher is a need: the devices stay open past the idle delay while it
        // watches (three keeper rounds), and close after it leaves.
        let kept = watcher.count
        XCTAssertNotNil(meter.waitForEvent(Event.Level.self, timeout: 1))
        XCTAssertFalse(watcher.events.wait(timeout: 6) { $0.dropFirst(kept).contains { $0["event"] == "device.state" } },
                       "devices closed under a level watcher")
        _ = try meter.request(Command.Unsubscribe.self, ["topics": ["level", "speech"]])
        XCTAssertTrue(waitForDevices("idle", watcher, after: kept))
    }

    /// `level.watch` with `enabled: false` is how a page stops watching (the learner UI does
    /// when it leaves the conversation): the microphone must then close. Before, it answered
    /// `watching: false` and left the client subscribed, so the devices stayed open.
    func testALevelWatchTurnedOffLetsTheDevicesClose() throws {
        let (watcher, meter) = try watchingTheLevel()
        let unwatched = watcher.count
        XCTAssertEqual(try meter.request(Command.LevelWatch.self, ["enabled": false])["watching"], false)
        XCTAssertTrue(waitForDevices("idle", watcher, after: unwatched), "the devices stayed open after the watch was turned off")
    }
}
