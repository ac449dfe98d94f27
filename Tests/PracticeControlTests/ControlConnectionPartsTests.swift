@testable import PracticeControl
@testable import PracticeKit
import XCTest

/// The control connection's line framing and request pacing, without a socket: bytes in,
/// lines out; a clock the test sets.
final class LineFramerTests: XCTestCase {
    func testLinesAreTheSameHoweverTheBytesAreCut() {
        let text = Array("{\"id\":1,\"command\":\"ping\"}\n\n{\"id\":2,\"command\":\"status\"}\nhalf".utf8)
        var whole = LineFramer(), lines: [[UInt8]] = []
        XCTAssertEqual(whole.frame(text[...], into: &lines), .fine)
        XCTAssertEqual(lines.map { String(decoding: $0, as: UTF8.self) }, ["{\"id\":1,\"command\":\"ping\"}", "", "{\"id\":2,\"command\":\"status\"}"])
        XCTAssertEqual(whole.partialCount, 4)
        // Every cut into two, and byte by byte.
        for cut in 0...text.count {
            var framer = LineFramer(), cutLines: [[UInt8]] = []
            _ = framer.frame(text[0..<cut], into: &cutLines)
            _ = framer.frame(text[cut...], into: &cutLines)
            XCTAssertEqual(cutLines, lines, "cut at \(cut)")
        }
        var bytewise = LineFramer(), byteLines: [[UInt8]] = []
        for byte in text { _ = bytewise.frame([byte][...], into: &byteLines) }
        XCTAssertEqual(byteLines, lines)
        // The partial line is completed by the next bytes.
        _ = whole.frame(Array(" done\n".utf8)[...], into: &lines)
        XCTAssertEqual(lines.last.map { String(decoding: $0, as: UTF8.self) }, "half done")
    }

    func testALineOverTheLimitWholeOrPartialIsTooLong() {
        var framer = LineFramer(maximumLineBytes: 8), lines: [[UInt8]] = []
        XCTAssertEqual(framer.frame(Array("12345678\n".utf8)[...], into: &lines), .fine, "the limit itself is allowed")
        XCTAssertEqual(framer.frame(Array("123456789\nnext\n".utf8)[...], into: &lines), .lineTooLong)
        XCTAssertEqual(lines.count, 1, "nothing after the long line is framed")
        var partial = LineFramer(maximumLineBytes: 8), none: [[UInt8]] = []
        XCTAssertEqual(partial.frame(Array("12345".utf8)[...], into: &none), .fine)
        XCTAssertEqual(partial.frame(Array("6789".utf8)[...], into: &none), .lineTooLong, "no newline needed to know")
        XCTAssertEqual(partial.partialCount, 0)
    }

    func testFramingStopsWhenTheConnectionStopsTakingLines() {
        var framer = LineFramer(), lines: [[UInt8]] = []
        var taken = 0
        _ = framer.frame(Array("a\nb\nc\n".utf8)[...], into: &lines) {
            defer { taken += 1 }
            return taken < 2
        }
        XCTAssertEqual(lines, [[0x61], [0x62]])
    }
}

final class RequestPacerTests: XCTestCase {
    private let second: UInt64 = 1_000_000_000

    func testAFullBucketThenTheRate() {
        var pacer = RequestPacer(now: 0)
        // A second's worth at once (20 a second), then one every 50 ms.
        for i in 0..<20 { XCTAssertNil(pacer.take(now: 0, rate: 20), "request \(i)") }
        XCTAssertEqual(pacer.take(now: 0, rate: 20) ?? 0, 0.05, accuracy: 1e-9)
        XCTAssertEqual(pacer.take(now: second / 40, rate: 20) ?? 0, 0.025, accuracy: 1e-9, "half a token back after 25 ms")
        XCTAssertNil(pacer.take(now: second / 20, rate: 20))
        XCTAssertNotNil(pacer.take(now: second / 20, rate: 20))
    }

    func testTheBucketNeverHoldsMoreThanASecondAndTimeNeverRunsBack() {
        var pacer = RequestPacer(now: 0)
        XCTAssertNil(pacer.take(now: 0, rate: 5))
        // An hour idle refills one second's worth, not an hour's.
        for _ in 0..<5 { XCTAssertNil(pacer.take(now: 3_600 * second, rate: 5)) }
        XCTAssertNotNil(pacer.take(now: 3_600 * second, rate: 5))
        // A clock reading from before the last is taken as no time at all.
        XCTAssertNotNil(pacer.take(now: 0, rate: 5))
    }

    func testALowerRateAfterAReloadAppliesAtOnce() {
        var pacer = RequestPacer(now: 0)
        for _ in 0..<2 { XCTAssertNil(pacer.take(now: 0, rate: 100)) }
        // The bucket is capped to the new second's worth (2), 98 tokens left before: 1 after this.
        XCTAssertNil(pacer.take(now: 0, rate: 2))
        XCTAssertNil(pacer.take(now: 0, rate: 2))
        XCTAssertNotNil(pacer.take(now: 0, rate: 2))
    }
}

/// Whose line the control server serves next: the client served least lately, so that a
/// client asking now and then is not held behind every flooding client's line.
final class ServiceSchedulerTests: XCTestCase {
    /// A client with `lines` waiting; each turn serves one at the test's clock.
    private final class Client: ServiceClient {
        let name: String
        var lines: Int
        var serviceKey = -Double.infinity
        unowned let scheduler: ServiceScheduler
        let log: (String) -> Void
        let now: () -> UInt64

        init(_ name: String, lines: Int, scheduler: ServiceScheduler, now: @escaping () -> UInt64, log: @escaping (String) -> Void) {
            self.name = name
            self.lines = lines
            self.scheduler = scheduler
            self.now = now
            self.log = log
        }

        func takeTurn() {
            lines -= 1
            scheduler.served(self, now: now())
            log(name)
            if lines > 0 { scheduler.add(self) }
        }
    }

    private let queue = DispatchQueue(label: "test.scheduler")
    private var served: [String] = []
    private var clock: UInt64 = 1_000_000_000

    /// Lets the queue run its turns until `count` lines were served (at most 10 s).
    private func waitForServed(_ count: Int) -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + 10_000_000_000
        while queue.sync(execute: { served.count }) < count {
            if DispatchTime.now().uptimeNanoseconds > deadline { return false }
        }
        return true
    }

    private func client(_ name: String, lines: Int, _ scheduler: ServiceScheduler) -> Client {
        Client(name, lines: lines, scheduler: scheduler, now: { [unowned self] in clock }) { [unowned self] in served.append($0) }
    }

    func testAClientThatAsksNowAndThenGoesBeforeFloodingClients() {
        let scheduler = ServiceScheduler(queue: queue)
        // Flooding for as long as the test runs.
        let flooders = (0..<8).map { client("flood\($0)", lines: .max, scheduler) }
        defer { queue.sync { for flooder in flooders { flooder.lines = 0 } } }
        queue.sync { for flooder in flooders { scheduler.add(flooder) } }
        // The flood has been served a while.
        XCTAssertTrue(waitForServed(40))
        // A ping arrives: it is served at the next turn (one already posted may go first),
        // not after a line of each of the 8 flooders.
        // Counted in the same turn of the queue as the ping is added: between two looks a
        // preempted test thread would see the flood served on (CI saw 1,391 lines).
        let ping = client("ping", lines: 1, scheduler)
        let before = queue.sync {
            scheduler.add(ping)
            return served.count
        }
        XCTAssertTrue(waitForServed(before + 3))
        let after = queue.sync { Array(served[before...]) }
        XCTAssertLessThanOrEqual(after.firstIndex(of: "ping") ?? 99, 1, "the ping waited behind \(after.prefix(10))")
    }

    func testFloodingClientsShareTheServiceEvenly() {
        let scheduler = ServiceScheduler(queue: queue)
        let flooders = (0..<4).map { client("flood\($0)", lines: 50, scheduler) }
        queue.sync { for flooder in flooders { scheduler.add(flooder) } }
        XCTAssertTrue(waitForServed(200))
        // In any window of 20 lines, each client has had its 5.
        for start in stride(from: 0, to: 200, by: 20) {
            let window = served[start..<start + 20]
            for flooder in flooders { XCTAssertEqual(window.filter { $0 == flooder.name }.count, 5, "lines \(start)-\(start + 19)") }
        }
    }

    func testServiceLongAgoCountsLessThanServiceNow() {
        let scheduler = ServiceScheduler(queue: queue)
        let earlier = client("earlier", lines: 1_000, scheduler)
        let now = client("now", lines: 1_000, scheduler)
        // `earlier` had 200 lines five seconds ago; `now` had 20 lines this second.
        for _ in 0..<200 { scheduler.served(earlier, now: clock) }
        clock += 5_000_000_000
        for _ in 0..<20 { scheduler.served(now, now: clock) }
        XCTAssertLessThan(earlier.serviceKey, now.serviceKey, "200 e^-5 = 1.3 lines now: less than 20")
    }
}
