import AudioKernel
import Dispatch
import Foundation
@testable import PracticeNet
import TestSupport
import XCTest

/// The daemon's epoll thread as its sockets use it: readiness on the owner's queue, only
/// while wanted, never after a cancel, a hang-up heard while nothing is wanted, and churn
/// across queues (what killed the daemon on Dispatch's sources).
final class DescriptorWatchTests: XCTestCase {
    /// A connected pair of non-blocking Unix stream sockets.
    private static func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw Errno.current }
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        return (fds[0], fds[1])
    }

    private static func send(_ fd: Int32, bytes: Int = 1) {
        let data = [UInt8](repeating: 0x2A, count: bytes)
        XCTAssertEqual(data.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }, bytes)
    }

    func testReadableRunsOnItsQueueWhileBytesWaitAndOnlyWhileWanted() throws {
        let (a, b) = try Self.socketPair()
        defer { close(a); close(b) }
        let queue = DispatchQueue(label: "test.watch")
        let calls = Awaitable(0)
        // One byte per call: bytes left unread fire again (level triggered).
        let watch = DescriptorWatch(fd: a, queue: queue, onReadable: {
            dispatchPrecondition(condition: .onQueue(queue))
            var byte: UInt8 = 0
            _ = recv(a, &byte, 1, 0)
            calls.update { $0 += 1 }
        })
        queue.sync { watch.setReading(true) }
        Self.send(b, bytes: 3)
        XCTAssertTrue(calls.wait(timeout: 5) { $0 == 3 }, "\(calls.value) calls for 3 bytes")
        XCTAssertFalse(calls.wait(timeout: 0.2) { $0 > 3 }, "called with nothing to read")

        queue.sync { watch.setReading(false) }
        Self.send(b)
        XCTAssertFalse(calls.wait(timeout: 0.2) { $0 > 3 }, "called while reading was not wanted")
        queue.sync { watch.setReading(true) }
        XCTAssertTrue(calls.wait(timeout: 5) { $0 == 4 }, "the byte that came meanwhile was not heard")
        queue.sync { watch.cancel() }
    }

    /// A writable socket is writable on every turn of the loop: it must wake nobody unless a
    /// write waits.
    func testWritableRunsOnlyWhileAWriteWaits() throws {
        let (a, b) = try Self.socketPair()
        defer { close(a); close(b) }
        let queue = DispatchQueue(label: "test.watch")
        let calls = Awaitable(0)
        var watch: DescriptorWatch?
        watch = DescriptorWatch(fd: a, queue: queue, onReadable: {}, onWritable: {
            calls.update { $0 += 1 }
            watch?.setWriting(false)
        })
        queue.sync { watch?.setWriting(true) }
        XCTAssertTrue(calls.wait(timeout: 5) { $0 == 1 })
        XCTAssertFalse(calls.wait(timeout: 0.2) { $0 > 1 }, "a writable socket kept waking its owner")
        queue.sync { watch?.setWriting(true) }
        XCTAssertTrue(calls.wait(timeout: 5) { $0 == 2 })
        queue.sync { watch?.cancel() }
    }

    /// After `cancel` the descriptor may be closed at once and its number reused: the old
    /// handler never runs, the new watch hears its own socket.
    func testACancelledWatchNeverRunsAgainAndItsNumberMayBeReused() throws {
        let (a, b) = try Self.socketPair()
        let queue = DispatchQueue(label: "test.watch")
        let old = Awaitable(0)
        let first = DescriptorWatch(fd: a, queue: queue, onReadable: { old.update { $0 += 1 } })
        queue.sync { first.setReading(true) }
        Self.send(b)  // readable now: the handler (which never reads) may run many times before the cancel
        let atCancel = queue.sync {
            first.cancel()
            close(a)
            return old.value
        }
        close(b)
        let (c, d) = try Self.socketPair()
        defer { close(c); close(d) }
        XCTAssertTrue(c == a || d == a, "the number was not reused (\(a) against \(c), \(d)): the test proves less")
        let reused = c == a ? c : d, peer = c == a ? d : c
        let new = Awaitable(0)
        let second = DescriptorWatch(fd: reused, queue: queue, onReadable: {
            var byte: UInt8 = 0
            _ = recv(reused, &byte, 1, 0)
            new.update { $0 += 1 }
        })
        queue.sync { second.setReading(true) }
        Self.send(peer)
        XCTAssertTrue(new.wait(timeout: 5) { $0 == 1 })
        XCTAssertEqual(old.value, atCancel, "the cancelled watch's handler ran after the cancel")
        queue.sync { second.cancel() }
    }

    /// A client that leaves while its requests wait unread (reading not wanted) is heard.
    func testAHangUpWhileNothingIsWantedIsHeardOnce() throws {
        let (a, b) = try Self.socketPair()
        defer { close(a) }
        let queue = DispatchQueue(label: "test.watch")
        let hangUps = Awaitable(0), reads = Awaitable(0)
        let watch = DescriptorWatch(fd: a, queue: queue, onReadable: { reads.update { $0 += 1 } },
                                    onHangUp: { hangUps.update { $0 += 1 } })
        queue.sync { watch.setReading(true); watch.setReading(false) }
        close(b)
        XCTAssertTrue(hangUps.wait(timeout: 5) { $0 == 1 }, "the hang-up was not heard")
        XCTAssertFalse(hangUps.wait(timeout: 0.2) { $0 > 1 }, "a lasting hang-up fired again")
        XCTAssertEqual(reads.value, 0)
        queue.sync { watch.cancel() }
    }

    /// Sockets made, heard and closed by the thousand from four queues at once.
    func testChurnFromFourQueuesLosesNoEvent() throws {
        let heard = Awaitable(0)
        let rounds = 2_500
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            let queue = DispatchQueue(label: "test.watch.\(worker)")
            for _ in 0..<rounds {
                guard let (a, b) = try? Self.socketPair() else { return XCTFail("socketpair") }
                let fired = DispatchSemaphore(value: 0)
                var watch: DescriptorWatch?
                watch = DescriptorWatch(fd: a, queue: queue, onReadable: {
                    var byte: UInt8 = 0
                    if recv(a, &byte, 1, 0) == 1 { fired.signal() }
                }, onWritable: { watch?.setWriting(false) })
                queue.sync { watch?.setReading(true); watch?.setWriting(true) }
                Self.send(b)
                if fired.wait(timeout: .now() + 5) == .success { heard.update { $0 += 1 } }
                queue.sync {
                    watch?.cancel()
                    close(a)
                }
                close(b)
                watch = nil
            }
        }
        XCTAssertEqual(heard.value, 4 * rounds)
    }
}
