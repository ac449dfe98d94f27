import AudioKernel
import Foundation
import PracticeKit
import TestSupport
import XCTest

/// `play` with the worst files a socket client can name, against the daemon as a process:
/// each answered at once with a clear error, none read without end, none wedging playback,
/// none telling a stranger what a file holds or whether it exists.
final class PlayFileTests: XCTestCase {
    private var scratch: String!

    override func setUp() {
        scratch = DaemonHarness.makeDirectory()
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: scratch)
    }

    private func resident(_ daemon: DaemonHarness) throws -> Int { try ProcessStatistics(pid: daemon.process.pid).residentBytes }

    /// A WAV whose data is `bytes` long, without writing them: a sparse file of silence.
    private func sparseWAV(_ name: String, dataBytes: Int) throws -> String {
        let path = "\(scratch!)/\(name)"
        var header = try WAVEncoder.encode([Int16]())
        // RIFF and data sizes for the declared data.
        func put(_ value: UInt32, at offset: Int) { withUnsafeBytes(of: value.littleEndian) { header.replaceSubrange(offset..<(offset + 4), with: $0) } }
        put(UInt32(36 + dataBytes), at: 4)
        put(UInt32(dataBytes), at: 40)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(header)))
        XCTAssertEqual(truncate(path, off_t(header.count + dataBytes)), 0)
        return path
    }

    func testDevZeroIsRefusedAtOnceWithoutReading() throws {
        let daemon = try DaemonHarness()
        let before = try resident(daemon)
        let started = Date()
        let error = try XCTUnwrap(daemon.client().failure("play", ["path": "/dev/zero"]))
        XCTAssertEqual(error.code, .fileError)
        XCTAssertTrue(error.message.contains("not a regular file"), error.message)
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
        XCTAssertLessThan(try resident(daemon) - before, 16 << 20, "the daemon read /dev/zero")
    }

    func testAFIFOWithoutAWriterIsRefusedAndPlaybackGoesOn() throws {
        let daemon = try DaemonHarness()
        let fifo = "\(scratch!)/clip.wav"
        XCTAssertEqual(mkfifo(fifo, 0o644), 0)
        let client = try daemon.client(timeout: 5)
        let error = try XCTUnwrap(client.failure("play", ["path": .string(fifo)]))
        XCTAssertEqual(error.code, .fileError)
        // Not wedged: another client plays a real file.
        let played = try daemon.client().request("play", ["path": .string("\(SimulatorHarness.samplesDirectory)/reply-2.wav")])
        XCTAssertEqual(try XCTUnwrap(played["duration_s"]?.doubleValue), 3.206, accuracy: 0.01)
        XCTAssertEqual(try client.request("ping")["pong"], true)
    }

    func testAStrangersFilesAreDeniedAndTheAnswerRevealsNothing() throws {
        let sounds = "\(scratch!)/sounds"
        try FileManager.default.createDirectory(atPath: sounds, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: "\(SimulatorHarness.samplesDirectory)/reply-2.wav", toPath: "\(sounds)/chime.wav")
        let daemon = try DaemonHarness(arguments: ["--socket-group", "nogroup", "--play-directories", sounds])
        var answers: [String] = []
        for path in ["/etc/shadow", "/etc/passwd", "/nonexistent/secret.wav", "\(sounds)/../../../etc/shadow"] {
            let run = try DaemonHarness.practicectl(["--json", "call", "play", "{\"path\": \"\(path)\"}"], socket: daemon.socketPath, asUser: "65534")
            XCTAssertEqual(run.status, 77, "\(path): \(run.stdout) \(run.stderr)")  // permission denied
            answers.append(run.stderr + run.stdout)
        }
        XCTAssertEqual(Set(answers).count, 1, "the answers differ by file: \(answers)")
        XCTAssertTrue(answers[0].contains("not allowed"), answers[0])
        XCTAssertFalse(answers[0].contains("shadow") || answers[0].contains("passwd") || answers[0].contains("No such"), answers[0])
        // A file under play.directories plays for anyone in the socket group.
        let allowed = try DaemonHarness.practicectl(["play", "\(sounds)/chime.wav"], socket: daemon.socketPath, asUser: "65534")
        XCTAssertEqual(allowed.status, 0, allowed.stderr)
        XCTAssertTrue(daemon.waitForLog("play refused for uid 65534"), "refusals are logged")
    }

    func testAFileOverTheLimitIsRefusedAndATwoHourFilePlaysInConstantMemory() throws {
        // 1 GiB of declared samples: over the default limit of 1 GiB with its header.
        let huge = try sparseWAV("huge.wav", dataBytes: 1 << 30)
        let daemon = try DaemonHarness()
        let refused = try XCTUnwrap(daemon.client().failure("play", ["path": .string(huge)]))
        XCTAssertEqual(refused.code, .fileError)
        XCTAssertTrue(refused.message.contains("play.max_bytes"), refused.message)

        // Two hours at 24 kHz: streamed as the player drains, never held whole.
        let long = try sparseWAV("two-hours.wav", dataBytes: 24_000 * 2 * 7_200)
        let client = try daemon.client()
        _ = try client.request("subscribe", ["topics": ["playback"]])
        let before = try resident(daemon)
        let played = try client.request("play", ["path": .string(long)])
        XCTAssertEqual(played["duration_s"], 7_200)
        XCTAssertNotNil(client.waitForEvent("playback.started"))
        // A few seconds in, the daemon holds no more than before (the file is 346 MB).
        let deadline = Date().addingTimeInterval(3)
        var peak = before
        while Date() < deadline {
            peak = max(peak, try resident(daemon))
            usleep(100_000)
        }
        XCTAssertLessThan(peak - before, 24 << 20, "resident memory grew by \(peak - before) bytes")
        XCTAssertEqual(try client.request("playback.stop")["stopped"], true)
        XCTAssertEqual(client.waitForEvent("playback.finished")?["data"]?["interrupted"], true)
    }
}
