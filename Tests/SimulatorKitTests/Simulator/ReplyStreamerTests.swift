import Foundation
import PracticeSupport
@testable import SimulatorKit
import XCTest

/// What the simulator saves of a turn is there before its client can see the reply end: a
/// client that asks for the review as soon as its stream ends finds the turn's segment.
/// (Saved after the last chunk, the segment raced the client's next request, and the
/// conformance suite's correction of segment 1 was answered 404 on a loaded machine.)
final class ReplyStreamerTests: XCTestCase {
    private func socketPair() -> (server: Int32, client: Int32) {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        return (fds[0], fds[1])
    }

    /// Bytes the client can read now, without waiting.
    private func readable(_ fd: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard n > 0 else { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func streamer(_ configure: (inout SimulatorConfiguration) -> Void = { _ in }) -> ReplyStreamer {
        var configuration = SimulatorConfiguration()
        configuration.pace = 0
        configure(&configuration)
        return ReplyStreamer(configuration: configuration, faults: configuration.faults, clock: SimulatedClock())
    }

    private let events = [ReplyEvent(name: "transcript", data: ["text": "I go to the park."]),
                          ReplyEvent(name: "done", data: [:])]

    func testTheTurnIsSavedBeforeTheLastChunkLeaves() throws {
        let (server, client) = socketPair()
        defer { close(server); close(client) }
        var seenAtSave: String?
        let end = streamer().write(events, to: HTTPResponseWriter(fd: server, keepAlive: true, clock: DispatchClock())) {
            seenAtSave = readable(client)
        }
        XCTAssertEqual(end, .finished)
        let before = try XCTUnwrap(seenAtSave, "the save ran")
        XCTAssertTrue(before.contains("event: done"), "every event was out before the save: \(before)")
        XCTAssertFalse(before.hasSuffix("0\r\n\r\n"), "the last chunk was not: \(before)")
        XCTAssertTrue(readable(client).hasSuffix("0\r\n\r\n"), "and it followed")
    }

    func testAReplyCutByTheFaultPlanIsSavedBeforeTheConnectionDrops() throws {
        let (server, client) = socketPair()
        defer { close(server); close(client) }
        var peerOpenAtSave: Bool?
        let end = streamer { $0.faults.dropAfterEvents = 1 }.write(events, to: HTTPResponseWriter(fd: server, keepAlive: true, clock: DispatchClock())) {
            _ = readable(client)
            // Still connected: a read finds nothing (EAGAIN), not the end of the stream.
            var byte: UInt8 = 0
            peerOpenAtSave = recv(client, &byte, 1, Int32(MSG_DONTWAIT)) < 0 && errno == EAGAIN
        }
        XCTAssertEqual(end, .dropped)
        XCTAssertEqual(peerOpenAtSave, true)
    }
}
