import AudioKernel
import Foundation
import PracticeControl
import PracticeKit
import PracticeProtocol
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
        let error = try XCTUnwrap(daemon.client().failure(Command.Play.self, ["path": "/dev/zero"]))
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
        let error = try XCTUnwrap(client.failure(Command.Play.self, ["path": .string(fifo)]))
        XCTAssertEqual(error.code, .fileError)
        // Not wedged: another client plays a real file.
        let played = try daemon.client().request(Command.Play.self, ["path": .string("\(SimulatorHarness.samplesDirectory)/reply-2.wav")])
        XCTAssertEqual(try XCTUnwrap(played["duration_s"]?.doubleValue), 3.206, accuracy: 0.01)
        XCTAssertEqual(try client.request(Command.Ping.self)["pong"], true)
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
        let refused = try XCTUnwrap(daemon.client().failure(Command.Play.self, ["path": .string(huge)]))
        XCTAssertEqual(refused.code, .fileError)
        XCTAssertTrue(refused.message.contains("play.max_bytes"), refused.message)

        // Two hours at 24 kHz: streamed as the player drains, never held whole.
        let long = try sparseWAV("two-hours.wav", dataBytes: 24_000 * 2 * 7_200)
        let client = try daemon.client()
        _ = try client.request(Command.Subscribe.self, ["topics": ["playback"]])
        let before = try resident(daemon)
        let played = try client.request(Command.Play.self, ["path": .string(long)])
        XCTAssertEqual(played["duration_s"], 7_200)
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackStarted.self))
        // A few seconds in, the daemon holds no more than before (the file is 346 MB).
        let deadline = Date().addingTimeInterval(3)
        var peak = before
        while Date() < deadline {
            peak = max(peak, try resident(daemon))
            usleep(100_000)
        }
        XCTAssertLessThan(peak - before, 24 << 20, "resident memory grew by \(peak - before) bytes")
        XCTAssertEqual(try client.request(Command.PlaybackStop.self)["stopped"], true)
        XCTAssertEqual(client.waitForEvent(Event.PlaybackFinished.self)?["data"]?["interrupted"], true)
    }

    /// A filesystem that never answers (a FUSE mount whose `open` hangs, as a stalled NFS
    /// or USB mount does) costs each `play` of it `play.timeout_ms` and nothing more: other
    /// clients are served meanwhile, the threads stuck in the kernel are bounded (once four
    /// are stuck, `play` says so at once, without starting a fifth), and when the mount
    /// dies they come back, playback works again and the daemon still stops on SIGTERM.
    func testAStalledFilesystemCostsOnlyTheRequestAndStuckOpensAreBounded() throws {
        // A machine without the FUSE device (some containers) cannot mount one at all.
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/dev/fuse"), "no /dev/fuse here: a FUSE mount cannot be made")
        let mount = try StalledMount()
        let daemon = try DaemonHarness(arguments: ["--play-directories", "\(mount.mountPoint):\(SimulatorHarness.samplesDirectory)",
                                                   "--play-timeout-ms", "500"])
        let polite = try daemon.client(timeout: 5)
        let threadsBefore = try ProcessStatistics(pid: daemon.process.pid).threads

        let first = Date()
        let error = try XCTUnwrap(daemon.client(timeout: 5).failure(Command.Play.self, ["path": .string(mount.stalledFile)]))
        XCTAssertEqual(error.code, .fileError)
        XCTAssertTrue(error.retryable)
        XCTAssertTrue(error.message.contains("not opened within 500 ms"), error.message)
        XCTAssertLessThan(Date().timeIntervalSince(first), 2)

        // Eight clients ask for the stalled file over and over: each request is answered
        // within the timeout, and a polite client's ping is never held up.
        let answered = Awaitable([Double]())
        let group = DispatchGroup()
        let socket = daemon.socketPath, stalled = mount.stalledFile
        for _ in 0..<8 {
            DispatchQueue.global().async(group: group) {
                guard let client = try? ControlClient(path: socket, timeout: 5) else { return }
                for _ in 0..<5 {
                    let asked = Date()
                    if (try? client.request(Command.Play.self, ["path": .string(stalled)], timeout: 5)) == nil {
                        answered.update { $0.append(Date().timeIntervalSince(asked)) }
                    }
                }
            }
        }
        var pings: [Double] = []
        while group.wait(timeout: .now() + 0.05) == .timedOut {
            let asked = Date()
            XCTAssertEqual(try polite.request(Command.Ping.self, timeout: 2)["pong"], true)
            pings.append(Date().timeIntervalSince(asked))
        }
        XCTAssertEqual(answered.value.count, 40, "every play of the stalled file failed with an answer")
        XCTAssertLessThan(answered.value.max() ?? 99, 2, "a play answered late: \(answered.value.sorted().suffix(3))")
        XCTAssertLessThan(pings.max() ?? 0, 0.5, "pings during the stall: \(pings.sorted().suffix(3))")
        let stuck = try ProcessStatistics(pid: daemon.process.pid).threads - threadsBefore
        XCTAssertLessThanOrEqual(stuck, 8, "threads stuck in the stalled filesystem: \(stuck)")

        // With four opens stuck, a healthy file is refused too, at once and saying why.
        let busy = try XCTUnwrap(polite.failure(Command.Play.self, ["path": .string("\(SimulatorHarness.samplesDirectory)/reply-2.wav")]))
        XCTAssertEqual(busy.code, .fileError)
        XCTAssertTrue(busy.retryable)
        XCTAssertTrue(busy.message.contains("still opening"), busy.message)

        // The mount dies: the stuck opens fail, their slots come back.
        mount.release()
        XCTAssertTrue(Poll.until(timeout: 10) {
            (try? polite.request(Command.Play.self, ["path": .string("\(SimulatorHarness.samplesDirectory)/reply-2.wav")])) != nil
        }, "play did not recover after the mount went away")
        XCTAssertTrue(daemon.waitForLog("not opened within 500 ms"), "the stall is logged")
        kill(daemon.process.pid, SIGTERM)
        XCTAssertEqual(daemon.process.waitForExit(timeout: 10), 0)
    }
}
