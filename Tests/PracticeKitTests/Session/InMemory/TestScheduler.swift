import Dispatch
import Foundation
@testable import PracticeKit

/// The session's clock in a test. Real by default (Dispatch's timers, for tests that only
/// need things to happen); in ``manual`` mode time stands still until the test moves it with
/// ``advance(by:)``, which runs what fell due, in order, on its queue: a minute of retries
/// takes a millisecond, and the test sees every step.
final class TestScheduler: SessionScheduler, @unchecked Sendable {
    private let lock = NSLock()
    private var manualTime: UInt64?
    private var pending: [(due: UInt64, order: Int, queue: DispatchQueue, body: @Sendable () -> Void)] = []
    private var order = 0

    /// Stops the clock at `start`: from now on only ``advance(by:)`` moves it.
    func manual(start: UInt64 = 1_000_000_000) { lock.withLock { manualTime = start } }

    var now: UInt64 { lock.withLock { manualTime } ?? DispatchTime.now().uptimeNanoseconds }

    /// The delays asked for so far, in seconds from when they were asked (manual mode).
    private(set) var delays: [Double] = []

    func after(_ delay: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        let scheduled: Bool = lock.withLock {
            guard let time = manualTime else { return false }
            order += 1
            delays.append(delay)
            pending.append((time + UInt64(max(0, delay) * 1e9), order, queue, body))
            return true
        }
        if !scheduled { queue.asyncAfter(deadline: .now() + delay, execute: body) }
    }

    /// Moves the clock `seconds` ahead, running everything due by then (and what that
    /// schedules within the window) on its queue, earliest first.
    func advance(by seconds: Double) {
        let end = now + UInt64(seconds * 1e9)
        while true {
            let next: (due: UInt64, order: Int, queue: DispatchQueue, body: @Sendable () -> Void)? = lock.withLock {
                guard let index = pending.indices.filter({ pending[$0].due <= end })
                    .min(by: { (pending[$0].due, pending[$0].order) < (pending[$1].due, pending[$1].order) }) else { return nil }
                let item = pending.remove(at: index)
                manualTime = max(manualTime ?? 0, item.due)
                return item
            }
            guard let next else { break }
            next.queue.sync { next.body() }
        }
        lock.withLock { manualTime = end }
    }

    /// Work waiting for the clock.
    var waiting: Int { lock.withLock { pending.count } }
}
