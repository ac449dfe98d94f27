import Foundation
import PracticeControl
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// 64 clients flood every command at once while one well-behaved client pings: each
/// client's requests are served in turn, a few in flight and at a bounded rate, so the
/// flood costs the others nothing they notice.
final class FloodTests: XCTestCase {
    /// Every command, the worst arguments among them, and lines that are not requests.
    static let lines: [String] = [
        #"{"id":1,"command":"ping"}"#, #"{"id":2,"command":"status"}"#, #"{"id":3,"command":"devices"}"#,
        #"{"id":4,"command":"topics"}"#, #"{"id":5,"command":"profile"}"#, #"{"id":6,"command":"session.get"}"#,
        #"{"id":7,"command":"spool.list"}"#, #"{"id":8,"command":"config.get"}"#, #"{"id":9,"command":"metrics"}"#,
        #"{"id":10,"command":"play","args":{"path":"/dev/zero"}}"#, #"{"id":11,"command":"play","args":{"path":"/etc/shadow"}}"#,
        #"{"id":12,"command":"say","args":{"text":"hello"}}"#, #"{"id":13,"command":"session.start","args":{"topic_id":"travel"}}"#,
        #"{"id":14,"command":"session.close"}"#, #"{"id":15,"command":"subscribe","args":{"topics":["session"]}}"#,
        #"{"id":16,"command":"playback.stop"}"#, #"{"id":17,"command":"level.watch","args":{"enabled":false}}"#,
        #"{"id":18,"command":"spool.retry","args":{"turn_id":"../../etc/passwd"}}"#, #"{"id":19,"command":"turn.start"}"#,
        #"{"id":20,"command":"review.get"}"#, "not json at all", #"{"id":21,"command":"no.such.command"}"#, "[1,2,3]",
    ]

    static let probe = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/ping-probe/ping-probe.py").path

    func testSixtyFourFloodingClientsLeaveAWellBehavedPingFast() throws {
        let daemon = try DaemonHarness(arguments: ["--socket-max-clients", "70"])
        let flooding = Awaitable(true)
        let answered = Awaitable(0)
        let flooders = Awaitable(0)
        var threads: [TestThread] = []
        for index in 0..<64 {
            let fd = try Self.connect(daemon.socketPath)
            // A reader that drops what it reads, so that the flooder is not cut off as slow.
            threads.append(TestThread {
                var buffer = [UInt8](repeating: 0, count: 65_536)
                var lines = 0
                while true {
                    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if n <= 0 { break }
                    lines += buffer[0..<n].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
                }
                answered.update { $0 += lines }
            })
            threads.append(TestThread {
                let batch = Array((Self.lines.shuffled() + Self.lines.shuffled()).joined(separator: "\n").utf8) + [0x0A]
                var sent = 0
                var counted = false
                while flooding.value {
                    let n = batch.withUnsafeBytes { send(fd, $0.baseAddress! + sent % batch.count, batch.count - sent % batch.count, Int32(MSG_NOSIGNAL)) }
                    if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { continue }  // held back: try again
                    if n <= 0 { break }
                    sent += n
                    if !counted, sent >= batch.count {
                        counted = true
                        flooders.update { $0 += 1 }
                    }
                }
                shutdown(fd, Int32(SHUT_RDWR))
                _ = index
            })
        }
        // The flood is up once every flooder has sent a whole batch; then a well-behaved client,
        // in a process of its own: among this process's 128 flooding threads a probe measured
        // the harness (p99 23.7-31.8 ms) while one outside saw the daemon's 2.1 ms.
        let probe = try ChildProcess(executable: "/usr/bin/python3", arguments: [Self.probe, daemon.socketPath, "400"],
                                     environment: ["PATH": "/usr/bin:/bin"], stdoutPath: nil, stderrPath: daemon.directory + "/probe.err")
        let figures = probe.readLine(timeout: 120) ?? ""
        XCTAssertEqual(probe.waitForExit(timeout: 10), 0, DaemonHarness.read(daemon.directory + "/probe.err"))
        let values = figures.split(separator: " ").compactMap { Double($0) }
        guard values.count == 3 else { return XCTFail("the probe said '\(figures)': \(DaemonHarness.read(daemon.directory + "/probe.err"))") }
        let (p50, p99, worst) = (values[0], values[1], values[2])
        let client = try daemon.client()
        flooding.update { $0 = false }
        for thread in threads { XCTAssertTrue(thread.join(timeout: 30), "a client's thread did not end") }
        ProofRun.report("ping under a 64-client flood: p50 \(p50) ms, p99 \(p99) ms, max \(worst) ms; \(answered.value) flood replies")
        // The goal (p99 10 ms, the shipped binary on a quiet machine) is a figure, measured by
        // `bash .ci/proof flood`. With the suite's other tests beside it on two cores (CI runs
        // four at a time) the test holds the property: the flood never makes a well-behaved
        // client wait for it, a quarter of a second at the 99th percentile.
        let goal = Double(ProofRun.size("PRACTICED_FLOOD_P99_MS", default: 250))
        XCTAssertLessThan(p99, goal, "a well-behaved client waited for the flood")
        XCTAssertGreaterThan(answered.value, 1_000, "the flood was not served at all")
        // The daemon lives and answers; the flooders were held back, not served without end.
        XCTAssertEqual(try daemon.client().request(Command.Ping.self)["pong"], true)
        XCTAssertNotNil(try client.request(Command.Status.self)["counters"]?["throttled"])
    }

    /// Clients that come and go by the thousand, each leaving in a different way (after its
    /// reply, with its request unread, half-closed, at once, in the middle of a line),
    /// while others flood and follow events. libdispatch's epoll sources crashed the daemon
    /// under this churn (a SIGSEGV in `_dispatch_unote_register_muxed` and "Source
    /// finalized twice"); its own epoll thread must keep it alive and answering.
    func testClientsThatComeAndGoByTheThousandNeverCrashTheDaemon() throws {
        let daemon = try DaemonHarness(arguments: ["--socket-max-clients", "64"])
        let seconds = Double(ProcessInfo.processInfo.environment["PRACTICED_CHURN_SECONDS"] ?? "") ?? 8
        let deadline = Date().addingTimeInterval(seconds)
        let socketPath = daemon.socketPath
        let connections = Awaitable(0)
        let hello = Array(#"{"id":1,"command":"subscribe","args":{"topics":["session","device","playback"]}}"#.utf8) + [0x0A]
        let batch = Array((Self.lines + Self.lines).joined(separator: "\n").utf8) + [0x0A]
        var threads: [TestThread] = []
        for worker in 0..<12 {
            threads.append(TestThread {
                var buffer = [UInt8](repeating: 0, count: 4_096)
                var round = worker
                while Date() < deadline {
                    round += 1
                    guard let fd = try? Self.connect(socketPath) else { continue }
                    connections.update { $0 += 1 }
                    _ = hello.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    switch round % 6 {
                    case 0:  // reads its reply, then leaves
                        _ = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    case 1:  // leaves with replies unread: the close is a reset
                        _ = batch.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        var hard = linger(l_onoff: 1, l_linger: 0)
                        setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, socklen_t(MemoryLayout<linger>.size))
                    case 2:  // half-closes, then reads what comes until the end
                        _ = batch.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        shutdown(fd, Int32(SHUT_WR))
                        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
                        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                        while buffer.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, 0) }) > 0 {}
                    case 3:  // in the middle of a line
                        _ = batch.withUnsafeBytes { send(fd, $0.baseAddress, $0.count / 2, Int32(MSG_NOSIGNAL)) }
                    case 4:  // floods for a moment
                        for _ in 0..<4 { _ = batch.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
                        _ = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    default:  // at once
                        break
                    }
                    close(fd)
                }
            })
        }
        // Meanwhile a well-behaved client keeps being answered.
        let client = try daemon.client()
        var pings = 0
        while Date() < deadline {
            XCTAssertEqual(try client.request(Command.Ping.self)["pong"], true, "after \(connections.value) connections")
            pings += 1
            guard daemon.process.isRunning else { break }
        }
        for thread in threads { XCTAssertTrue(thread.join(timeout: 30), "a client's thread did not end") }
        print("figures: \(connections.value) connections in \(seconds) s, \(pings) pings answered meanwhile")
        XCTAssertTrue(daemon.process.isRunning, "the daemon died (status \(daemon.process.status ?? -1)): \(daemon.log.suffix(2_000))")
        XCTAssertGreaterThan(connections.value, 1_000, "too few connections to stand for churn")
        XCTAssertEqual(try daemon.client().request(Command.Ping.self)["pong"], true)
        // Every client that left was let go: none is left behind.
        let waited = Date()
        let released = Poll.until(timeout: 3) { ((try? client.request(Command.Status.self)["clients"]?.intValue) ?? -1) == 1 }
        print("figures: released after \(Date().timeIntervalSince(waited)) s")
        XCTAssertTrue(released, "clients still held: \(Self.heldClients(in: daemon.log))")
    }

    /// A client over its request rate is held back (its lines wait unread), told in the
    /// log and the counters; another client meanwhile is served at once.
    func testAClientOverItsRateIsHeldBackAndOthersAreNot() throws {
        let daemon = try DaemonHarness(arguments: ["--socket-requests-per-s", "50"])
        let fast = try daemon.client()
        let lines = (0..<150).map { #"{"id":\#($0),"command":"ping"}"# }.joined(separator: "\n") + "\n"
        let started = Date()
        try fast.send(Array(lines.utf8))
        // Meanwhile another client is not slowed.
        let other = try daemon.client()
        let pinged = Date()
        XCTAssertEqual(try other.request(Command.Ping.self)["pong"], true)
        XCTAssertLessThan(Date().timeIntervalSince(pinged), 0.5)
        var replies = 0
        while replies < 150, let message = try? fast.readMessage(timeout: 10) {
            if message["type"] == "reply" { replies += 1 }
        }
        XCTAssertEqual(replies, 150, "every held-back request is answered in the end")
        // A burst of 50, then 50 a second: about 2 s for the 100 beyond the burst.
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 1.5, "the rate limit did not hold the client back")
        XCTAssertGreaterThanOrEqual(try other.request(Command.Status.self)["counters"]?["throttled"]?.intValue ?? 0, 1)
        XCTAssertTrue(daemon.waitForLog("requests/s: held back"), "the throttling was not logged")
    }

    /// The daemon's log lines of each client it logged as connected and never as closed.
    static func heldClients(in log: String) -> String {
        let lines = log.split(separator: "\n")
        func id(_ line: Substring, after marker: String) -> String? {
            guard let range = line.range(of: marker) else { return nil }
            return line[range.upperBound...].split(whereSeparator: { $0 == " " || $0 == ":" }).first.map(String.init)
        }
        let connected = Set(lines.filter { $0.contains(" connected: pid") }.compactMap { id($0, after: "client ") })
        let closed = Set(lines.filter { $0.contains(" closed") }.compactMap { id($0, after: "client ") })
        let held = connected.subtracting(closed)
        return held.sorted().map { client in
            "client \(client): " + lines.filter { $0.contains("client \(client) ") || $0.contains("client \(client):") }.suffix(6).joined(separator: " | ")
        }.joined(separator: "\n")
    }

    static func connect(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let result = UnixListener.withAddress(path) { Glibc.connect(fd, $0, $1) }
        guard result == 0 else { throw HarnessError(message: "connect \(path): errno \(errno)") }
        // Sends give up after 50 ms, so that a held-back flooder notices the end of the test.
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }
}
