import Foundation
import PracticeControl
import PracticeKit
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// Every command of practiced/1 against the daemon as a real process, practice-sim as its
/// backend over real TCP, and the null microphone and a WAV file as its devices.
final class DaemonCommandTests: XCTestCase {
    func testHelloPingStatusConfigAndMetrics() throws {
        let sim = try SimulatorHarness()
        let daemon = try DaemonHarness(backend: sim.baseURL)
        XCTAssertTrue(daemon.startupMessages.joined().contains("STATUS="), "READY=1 comes with a status line")
        let client = try daemon.client()
        XCTAssertEqual(client.hello["protocol"], "practiced/1")
        XCTAssertEqual(client.hello["server"]?.stringValue, "practiced \(PracticeDaemon.version)")
        XCTAssertEqual(client.hello["max_line_bytes"], .int(65_536))

        XCTAssertEqual(try client.request(Command.Hello.self, ["protocol": "practiced/1.4", "client": "ui 2.0"])["protocol"], "practiced/1",
                       "a newer minor version is accepted; unknown fields are ignored")
        XCTAssertEqual(try client.request(Command.Ping.self)["pong"], .bool(true))
        // Typed: the command's name from its type, its result read as its result type.
        XCTAssertTrue(try client.send(Command.Ping.self).pong)
        let typed = try client.send(Command.Status.self)
        XCTAssertEqual([typed.devices.capture.state, typed.devices.playback.state], [.running, .running])
        XCTAssertNil(typed.devices.capture.error)

        let status = try client.request(Command.Status.self)
        XCTAssertEqual(status["backend"]?["reachable"], .bool(true))
        XCTAssertEqual(status["backend"]?["url"]?.stringValue, sim.baseURL.absoluteString)
        XCTAssertEqual(status["devices"]?["capture"]?["state"], "running")
        XCTAssertEqual(status["devices"]?["playback"]?["state"], "running")
        XCTAssertEqual(status["session"]?["spool"]?["turns"], .int(0))
        XCTAssertEqual(status["user_id"]?.stringValue?.count, 9, "a generated 9-digit user id")
        XCTAssertEqual(status["clients"], .int(1))

        let config = try client.request(Command.ConfigGet.self)
        XCTAssertEqual(config["capture.device"], "null:")
        XCTAssertEqual(config["socket.path"]?.stringValue, daemon.socketPath)
        XCTAssertEqual(config["speech.threshold"], "300")

        let metrics = try XCTUnwrap(try client.request(Command.Metrics.self)["text"]?.stringValue)
        XCTAssertTrue(metrics.contains("# TYPE practiced_control_requests_total counter"))
        XCTAssertTrue(metrics.contains("practiced_control_requests_total{command=\"ping\"} 2"), metrics)
        XCTAssertTrue(metrics.contains("practiced_clients 1"))
        XCTAssertTrue(metrics.contains("practiced_backend_probe_seconds_bucket{le=\"+Inf\"} 1"), "the status probe's latency")
    }

    func testDevicesAndTopics() throws {
        let sim = try SimulatorHarness()
        let daemon = try DaemonHarness(backend: sim.baseURL)
        let client = try daemon.client()
        let checked = ProtocolConformance.checked
        let devices = try client.request(Command.Devices.self, timeout: 30)
        XCTAssertNotNil(devices["capture"]?.arrayValue)
        XCTAssertNotNil(devices["playback"]?.arrayValue)
        XCTAssertNotNil(devices["errors"]?.arrayValue, "no sound card here: what could not be listed is named, not fatal")
        let topics = try client.request(Command.Topics.self)
        XCTAssertEqual(topics["stale"], .bool(false))
        XCTAssertEqual(topics["topics"]?.arrayValue?.count, 6)

        // Offline: the cached list, marked stale.
        sim.simulator.shutdown()
        sim.server.stop()
        let offline = try client.request(Command.Topics.self, timeout: 60)
        XCTAssertEqual(offline["stale"], .bool(true))
        XCTAssertEqual(offline["topics"]?.arrayValue?.count, 6)
        XCTAssertEqual(ProtocolConformance.checked.results, checked.results + 3, "each result was checked against its command's schema")
    }

    func testPlayStreamsAFileToTheSpeakerAndReportsStartAndFinish() throws {
        let daemon = try DaemonHarness()
        let listener = try daemon.client()
        _ = try listener.request(Command.Subscribe.self, ["topics": ["playback"]])
        let snapshot = try XCTUnwrap(listener.waitForEvent(DaemonSnapshot.self))
        XCTAssertEqual(snapshot["topic"], "state")
        XCTAssertEqual(snapshot["data"]?["playing"], .bool(false))

        let path = "\(SimulatorHarness.samplesDirectory)/reply-2.wav"
        let played = try daemon.client().request(Command.Play.self, ["path": .string(path)])
        XCTAssertEqual(try XCTUnwrap(played["duration_s"]?.doubleValue), 3.206, accuracy: 0.01)
        XCTAssertNotNil(listener.waitForEvent(Event.PlaybackStarted.self))
        let finished = try XCTUnwrap(listener.waitForEvent(Event.PlaybackFinished.self, timeout: 15))
        XCTAssertEqual(finished["data"]?["interrupted"], .bool(false))
        XCTAssertEqual(try XCTUnwrap(finished["data"]?["played_s"]?.doubleValue), 3.206, accuracy: 0.05)
    }

    func testPlaybackStopInterruptsWithinAFewPeriods() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.client()
        _ = try client.request(Command.Subscribe.self, ["topics": ["playback"]])
        _ = try client.request(Command.Play.self, ["path": .string("\(SimulatorHarness.samplesDirectory)/greeting.wav")])
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackStarted.self))
        XCTAssertEqual(try client.request(Command.PlaybackStop.self)["stopped"], .bool(true))
        let finished = try XCTUnwrap(client.waitForEvent(Event.PlaybackFinished.self))
        XCTAssertEqual(finished["data"]?["interrupted"], .bool(true))
        XCTAssertLessThan(try XCTUnwrap(finished["data"]?["played_s"]?.doubleValue), 4.5, "stopped before the end of 5 s")
        XCTAssertEqual(try client.request(Command.PlaybackStop.self)["stopped"], .bool(false), "stop when idle is harmless")
    }

    func testLevelWatchStreamsInputLevels() throws {
        let daemon = try DaemonHarness(arguments: ["--audio-level-interval-ms", "20"])
        let client = try daemon.client()
        let result = try client.request(Command.LevelWatch.self)
        XCTAssertEqual(result["interval_ms"], .int(20))
        XCTAssertEqual(result["capture"], "running")
        var levels: [Double] = []
        var seqs: [Int] = []
        while levels.count < 10, let event = client.waitForEvent(Event.Level.self, timeout: 5) {
            levels.append(try XCTUnwrap(event["data"]?["rms_dbfs"]?.doubleValue))
            seqs.append(try XCTUnwrap(event["seq"]?.intValue))
        }
        XCTAssertEqual(levels.count, 10)
        XCTAssertTrue(levels.allSatisfy { $0 <= -100 }, "the null microphone is silent: \(levels)")
        XCTAssertEqual(seqs, seqs.sorted(), "seq is monotonic")
    }

    func testUnsubscribeStopsEvents() throws {
        let daemon = try DaemonHarness(arguments: ["--audio-level-interval-ms", "20"])
        let client = try daemon.client()
        _ = try client.request(Command.Subscribe.self, ["topics": ["level"]])
        XCTAssertNotNil(client.waitForEvent(Event.Level.self))
        XCTAssertEqual(try client.request(Command.Unsubscribe.self, ["topics": ["level"]])["topics"], .array([]))
        // Drain what was sent before the reply; then nothing more comes.
        while (try? client.nextEvent(timeout: 0.2)) != nil {}
        XCTAssertThrowsError(try client.nextEvent(timeout: 0.5)) { XCTAssertEqual($0 as? ControlClient.Failure, .timedOut) }
    }
}
