import Foundation
import PracticeKit
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

    func testSixtyFourFloodingClientsLeaveAWellBehavedPingFast() throws {
        let daemon = try DaemonHarness(arguments: ["--socket-max-clients", "70"])
        let flooding = Awaitable(true)
        let answered = Awaitable(0)
        var threads: [Thread] = []
        for index in 0..<64 {
            let fd = try Self.connect(daemon.socketPath)
            // A reader that drops what it reads, so that the flooder is not cut off as slow.
            threads.append(Thread {
                var buffer = [UInt8](repeating: 0, count: 65_536)
                var lines = 0
                while true {
                    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if n <= 0 { break }
                    lines += buffer[0..<n].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
                }
                answered.update { $0 += lines }
            })
            threads.append(Thread {
                let batch = Array((Self.lines.shuffled() + Self.lines.shuffled()).joined(separator: "\n").utf8) + [0x0A]
                var sent = 0
                while flooding.value {
                    let n = batch.withUnsafeBytes { send(fd, $0.baseAddress! + sent % batch.count, batch.count - sent % batch.count, Int32(MSG_NOSIGNAL)) }
                    if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { continue }  // held back: try again
                    if n <= 0 { break }
                    sent += n
                }
                shutdown(fd, Int32(SHUT_RDWR))
                _ = index
            })
        }
        threads.forEach { $0.start() }
        // Let the flood build up, then measure a well-behaved client.
        usleep(500_000)
        let client = try daemon.client()
        var latencies: [Double] = []
        for _ in 0..<400 {
            let start = DispatchTime.now().uptimeNanoseconds
            XCTAssertEqual(try client.request("ping")["pong"], true)
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            usleep(5_000)
        }
        flooding.update { $0 = false }
        for thread in threads { while !thread.isFinished { usleep(1_000) } }
        latencies.sort()
        let p50 = latencies[latencies.count / 2], p99 = latencies[latencies.count * 99 / 100], worst = latencies.last!
        print("figures: ping under a 64-client flood: p50 \(p50) ms, p99 \(p99) ms, max \(worst) ms; \(answered.value) flood replies")
        // The goal (10 ms) is the shipped binary's; a debug daemon runs several times
        // slower and is held to a looser bound (CI runs this on both).
        let goal = ShippedBinaries.isOverridden ? 10.0 : 100.0
        XCTAssertLessThan(p99, goal, "a well-behaved client waited for the flood")
        XCTAssertGreaterThan(answered.value, 1_000, "the flood was not served at all")
        // The daemon lives and answers; the flooders were held back, not served without end.
        XCTAssertEqual(try daemon.client().request("ping")["pong"], true)
        XCTAssertNotNil(try client.request("status")["counters"]?["throttled"])
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
        XCTAssertEqual(try other.request("ping")["pong"], true)
        XCTAssertLessThan(Date().timeIntervalSince(pinged), 0.5)
        var replies = 0
        while replies < 150, let message = try? fast.readMessage(timeout: 10) {
            if message["type"] == "reply" { replies += 1 }
        }
        XCTAssertEqual(replies, 150, "every held-back request is answered in the end")
        // A burst of 50, then 50 a second: about 2 s for the 100 beyond the burst.
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 1.5, "the rate limit did not hold the client back")
        XCTAssertGreaterThanOrEqual(try other.request("status")["counters"]?["throttled"]?.intValue ?? 0, 1)
        XCTAssertTrue(daemon.waitForLog("requests/s: held back"), "the throttling was not logged")
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
