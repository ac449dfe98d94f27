import AudioKernel
import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport
import XCTest

/// 64 clients follow every topic, level metering included, while real turns run; one more
/// client stops reading. Every reader gets every event in order and on time; the one that
/// stopped is disconnected and nobody else notices.
final class LoadTests: XCTestCase {
    var rig: KioskRig!

    override func tearDown() {
        rig?.stop()
        rig = nil
    }

    /// One reader: every line it received with the time it was read. Lines are parsed
    /// only at the end, so that the time measured is the daemon's delivery, not the cost of
    /// 64 JSON decoders sharing this machine's two cores.
    final class Reader: @unchecked Sendable {
        let client: ControlClient
        private let lines = Awaitable([(line: [UInt8], readAt: Int64)]())
        /// The newest `seq` seen, for waiting on the reader.
        let newest = Awaitable(0)
        private let running = Awaitable(true)
        private var thread: TestThread?

        init(client: ControlClient) throws {
            self.client = client
            _ = try client.request(Command.Subscribe.self, ["topics": .array(ProtocolCatalog.subscribableTopicNames.map { .string($0) })])
            _ = try client.request(Command.LevelWatch.self)
            // The thread alone reads the client from here on.
            struct Owned: @unchecked Sendable { let client: ControlClient }
            let owned = Owned(client: client)
            thread = TestThread(name: "load-reader") { [lines, newest, running] in
                while running.value {
                    guard let line = try? owned.client.readLine(timeout: 0.2) else { continue }
                    let now = Monotonic.now()
                    lines.update { $0.append((line, now)) }
                    // The seq is the first number after `"seq":`, which the daemon writes first.
                    if let seq = Reader.seq(in: line) { newest.update { $0 = seq } }
                }
            }
        }

        static func seq(in line: [UInt8]) -> Int? {
            let key = Array("\"seq\":".utf8)
            guard let start = line.indices.first(where: { line[$0...].starts(with: key) }) else { return nil }
            var value = 0
            var index = start + key.count
            while index < line.count, (0x30...0x39).contains(line[index]) {
                value = value * 10 + Int(line[index] - 0x30)
                index += 1
            }
            return value
        }

        func stop() {
            running.update { $0 = false }
            if thread?.join(timeout: 10) == false { XCTFail("a reader's thread did not end") }
        }

        /// The events received: seq, name, and how late each was read (ns).
        var received: [(seq: Int, event: String, lateNs: Int64)] {
            lines.value.compactMap { entry in
                // The per-client state snapshot reuses the current seq: left out of the order checks.
                guard let event = try? JSONDecoder().decode(JSONValue.self, from: Data(entry.line)), event["type"] == "event", event["topic"] != "state",
                      let seq = event["seq"]?.intValue, let published = event["mono_ns"]?.intValue else { return nil }
                return (seq, event["event"]?.stringValue ?? "", entry.readAt - Int64(published))
            }
        }
    }

    func testSixtyFourReadersGetEveryEventInOrderWhileOneThatStopsReadingIsDropped() throws {
        let turns = ProofRun.size("PRACTICED_LOAD_TURNS", default: 4)
        rig = try KioskRig(arguments: ["--socket-max-clients", "80", "--socket-client-queue-bytes", "16384", "--audio-level-interval-ms", "20"])
        let watcher = try rig.watcher()
        let control = try rig.daemon.client()
        let readers = try (0..<64).map { _ in try Reader(client: rig.daemon.client()) }
        defer { readers.forEach { $0.stop() } }

        // The client that stops reading: a small socket buffer, everything subscribed.
        let stalled = try rig.daemon.client()
        var small: Int32 = 4096
        setsockopt(stalled.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        _ = try stalled.request(Command.Subscribe.self, ["topics": .array(ProtocolCatalog.subscribableTopicNames.map { .string($0) })])
        _ = try stalled.request(Command.LevelWatch.self)

        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel"])
        XCTAssertNotNil(watcher.waitForStage("ready", timeout: 30))
        for turn in 0..<turns {
            let mark = watcher.count
            let id = try XCTUnwrap(rig.speakHandsFree(ProofRun.speech(seconds: 1.2, variant: turn), control: control, watcher: watcher))
            XCTAssertNotNil(watcher.outcome(of: id, after: mark, timeout: 30, accepting: TurnOutcome.final))
            XCTAssertNotNil(watcher.waitForStage("ready", after: mark))
        }
        let statistics = try control.request(Command.Status.self)
        XCTAssertGreaterThanOrEqual(statistics["counters"]?["slow_clients_dropped"]?.intValue ?? 0, 1, "the stalled client was not dropped")
        // The stalled client's connection was closed by the daemon: reading drains what
        // the socket held, then meets the end.
        var ended = false
        let deadline = Date().addingTimeInterval(10)
        while !ended, Date() < deadline {
            do { _ = try stalled.readLine(timeout: 1) } catch .timedOut { continue } catch { ended = true }
        }
        XCTAssertTrue(ended, "the stalled client is still connected")

        // The last event every reader must have: publish one and wait for all of them.
        let last = watcher.count
        _ = try control.request(Command.SessionClose.self)
        XCTAssertNotNil(watcher.waitForStage("idle", after: last))
        guard let closing = watcher.events.value.dropFirst(last).first(where: { $0["event"] == "session.stage" })?["seq"]?.intValue else {
            return XCTFail("no stage event")
        }
        for (index, reader) in readers.enumerated() {
            XCTAssertTrue(reader.newest.wait(timeout: 10) { $0 >= closing }, "reader \(index) fell behind")
        }
        readers.forEach { $0.stop() }

        // Every reader saw the same events, in order, without a gap (all follow every topic).
        let received = readers.map(\.received)
        let first = received.compactMap { $0.first?.seq }.max() ?? 0
        let reference = received[0].filter { $0.seq >= first && $0.seq <= closing }.map(\.seq)
        XCTAssertEqual(reference, Array(first...closing), "reader 0 missed events")
        var lateness: [Double] = []
        for (index, events) in received.enumerated() {
            XCTAssertEqual(events.map(\.seq), events.map(\.seq).sorted(), "reader \(index) got events out of order")
            XCTAssertEqual(events.filter { $0.seq >= first && $0.seq <= closing }.map(\.seq), reference, "reader \(index) missed events")
            lateness += events.map { Double($0.lateNs) / 1e6 }
        }
        let levels = received[0].filter { $0.event == "level" }.count
        let delivery = Percentiles(lateness)
        ProofRun.report("load: 64 readers, \(turns) turns, \(reference.count) events each (\(levels) level), delivery ms \(delivery)")
        XCTAssertGreaterThan(levels, 100, "level metering was not on")
        // The goal is a p99 under 5 ms (see docs/performance.md); this bound only catches a reader
        // held up behind the stalled one, which would take seconds.
        XCTAssertLessThan(delivery.p99, 100)
    }
}
