import AudioKernel
import Foundation
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// `practicectl --wait-for` with commands other than the session's, against the daemon as a
/// real process (speaker: a WAV file paced in real time). Before, the option was honoured
/// for session commands only: `--wait-for playback.finished play chime.wav` returned in
/// 15 ms while the clip played on for a second, and a misspelt event waited for nothing.
final class WaitForTests: XCTestCase {
    private var scratch: String!

    override func setUp() { scratch = DaemonHarness.makeDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: scratch) }

    /// A clip of `seconds` of a quiet tone, world-readable (the daemon opens it as the caller).
    private func clip(_ name: String, seconds: Double, rate: Int = 24_000) -> String {
        let path = "\(scratch!)/\(name)"
        let format = WAVFormat(sampleRate: rate, channels: 1)
        let bytes = WAVFixture.file(format, frames: Int(seconds * Double(rate))) { i, _ in 0.25 * sin(2 * Double.pi * 440 * Double(i) / Double(rate)) }
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return path
    }

    /// Runs practicectl against `daemon`; the exit status, what it printed, and how long it took.
    private func practicectl(_ daemon: DaemonHarness, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String, seconds: Double) {
        let start = Date()
        let run = try DaemonHarness.practicectl(arguments, socket: daemon.socketPath)
        return (run.status, run.stdout, run.stderr, Date().timeIntervalSince(start))
    }

    func testPlayWaitsUntilItsClipHasBeenHeard() throws {
        let daemon = try DaemonHarness()
        let chime = clip("chime.wav", seconds: 1)
        let run = try practicectl(daemon, ["--wait-for", "playback.finished", "play", chime])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertGreaterThan(run.seconds, 1.0, "returned before the 1 s clip was played")
        XCTAssertLessThan(run.seconds, 5)
        XCTAssertTrue(run.stdout.contains("playback.started"), run.stdout)
        XCTAssertTrue(run.stdout.contains("playback.finished {\"interrupted\":false,\"mixed\":false,\"played_s\":1,"), run.stdout)

        // The same through `call`, the answer as JSON first.
        let called = try practicectl(daemon, ["--wait-for", "playback.finished", "call", "play", "{\"path\":\"\(chime)\"}"])
        XCTAssertEqual(called.status, 0, called.stderr)
        XCTAssertGreaterThan(called.seconds, 1.0)
        XCTAssertTrue(called.stdout.hasPrefix("{\"duration_s\":1,"), called.stdout)
    }

    func testTheWaitFollowsItsOwnClipNotTheSoundItReplaced() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.client()
        _ = try client.request(Command.Subscribe.self, ["topics": ["playback"]])
        _ = try client.request(Command.Play.self, ["path": .string(clip("long.wav", seconds: 5))])
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackStarted.self))
        // The new clip interrupts the long one: its `playback.finished` (interrupted) comes
        // first, and must not end the wait for the new clip's.
        let run = try practicectl(daemon, ["--wait-for", "playback.finished", "play", clip("short.wav", seconds: 0.8)])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertGreaterThan(run.seconds, 0.8, "ended on the replaced clip's finish: \(run.stdout)")
        XCTAssertFalse(run.stdout.contains("\"interrupted\":true"), "another sound's event was followed: \(run.stdout)")
        XCTAssertTrue(run.stdout.contains("\"interrupted\":false"), run.stdout)

        // stop and volume wait for their own events.
        _ = try client.request(Command.Play.self, ["path": .string(clip("again.wav", seconds: 5))])
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackStarted.self))
        let stopped = try practicectl(daemon, ["--wait-for", "playback.finished", "stop"])
        XCTAssertEqual(stopped.status, 0, stopped.stderr)
        XCTAssertTrue(stopped.stdout.contains("\"interrupted\":true"), stopped.stdout)
        let volume = try practicectl(daemon, ["--wait-for", "volume.changed", "volume", "50%"])
        XCTAssertEqual(volume.status, 0, volume.stderr)
        XCTAssertTrue(volume.stdout.contains("volume.changed {\"db\":-6,\"level\":0.5}"), volume.stdout)
    }

    func testAnUnknownEventIsAUsageErrorAndNothingIsSent() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.client()
        let run = try practicectl(daemon, ["--wait-for", "playback.finishd", "play", clip("chime.wav", seconds: 0.2)])
        XCTAssertEqual(run.status, 64)
        XCTAssertTrue(run.stderr.contains("'playback.finishd' is not an event of practiced/1"), run.stderr)
        XCTAssertTrue(run.stderr.contains("playback.finished"), "the known events are named: \(run.stderr)")
        XCTAssertFalse(run.stderr.contains("usage:"), "the list, not the whole usage")
        // A wait on an event of no topic, and on `level`, which follows for ever.
        XCTAssertEqual(try practicectl(daemon, ["--wait-for", "snapshot", "ping"]).status, 64)
        let level = try practicectl(daemon, ["--wait-for", "speech.started", "level"])
        XCTAssertEqual(level.status, 64)
        XCTAssertTrue(level.stderr.contains("does not apply"), level.stderr)
        // None of them sent its command: the daemon counts no play and no ping.
        let metrics = try XCTUnwrap(try client.request(Command.Metrics.self)["text"]?.stringValue)
        XCTAssertFalse(metrics.contains("command=\"play\""), metrics)
        XCTAssertFalse(metrics.contains("command=\"ping\""), metrics)
    }

    func testAClipThatCannotBeReadToItsEndFailsTheWait() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.client()
        _ = try client.request(Command.Subscribe.self, ["topics": ["playback"]])
        // 300 s at 8 kHz: the player's queue (120 s, rounded up to a power of two: 174.8 s)
        // fills from the file at once, and the rest is read as it plays. The file is cut to
        // 60 s under it: the reader meets the cut on its way there, or at its next read.
        // (With 150 s the whole clip fit in the queue, and a reader quicker than the cut, on
        // a loaded machine, read it all: no failure to report, 1 run in 5.)
        let path = clip("cut.wav", seconds: 300, rate: 8_000)
        let waiting = DispatchQueue(label: "practicectl")
        let socket = daemon.socketPath
        let result = Awaitable<(status: Int32, stdout: String, stderr: String)?>(nil)
        waiting.async {
            let run = try? DaemonHarness.practicectl(["--timeout", "200", "--wait-for", "playback.finished", "play", path], socket: socket)
            result.update { $0 = run }
        }
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackStarted.self))
        XCTAssertEqual(truncate(path, 44 + 60 * 8_000 * 2), 0)
        let failed = try XCTUnwrap(client.waitForEvent(Event.PlaybackFailed.self, timeout: 10), "no playback.failed")
        XCTAssertEqual(failed["data"]?["path"]?.stringValue, path)
        XCTAssertTrue(failed["data"]?["message"]?.stringValue?.contains("the file ended at byte") == true, "\(failed)")
        XCTAssertTrue(result.wait(timeout: 10) { $0 != nil }, "practicectl went on waiting after playback.failed")
        let run = try XCTUnwrap(result.value)
        XCTAssertEqual(run.status, 1, "exit 1 on the clip's failure: \(run.stdout) \(run.stderr)")
        XCTAssertTrue(run.stdout.contains("playback.failed"), run.stdout)
        XCTAssertTrue(daemon.waitForLog("the file ended at byte"), "the failure is logged")
        _ = try client.request(Command.PlaybackStop.self)
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackFinished.self), "what was read played until stopped")
    }
}
