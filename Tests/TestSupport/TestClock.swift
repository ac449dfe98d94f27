import Dispatch
import Foundation
import PracticeSupport

/// The flows' clock in a test (``PracticeClock``). Real by default (Dispatch's, for tests
/// that only need things to happen); in ``manual(start:)`` mode time stands still until the
/// test moves it with ``advance(by:)``, which runs what fell due, in order, on its queue:
/// work asked for later (``after(_:on:_:)``) and timers whose deadline passed (a reply
/// stream's idle and total deadlines). A minute of retries takes a millisecond, and the
/// test sees every step.
package final class TestClock: PracticeClock, @unchecked Sendable {
    /// A timer in manual mode: its deadline, moved by the code under test, read by ``advance(by:)``.
    package final class Timer: PracticeTimer, @unchecked Sendable {
        unowned let clock: TestClock
        package let queue: DispatchQueue
        package let handler: @Sendable () -> Void
        package var deadline: UInt64?

        package init(clock: TestClock, queue: DispatchQueue, handler: @escaping @Sendable () -> Void) {
            self.clock = clock
            self.queue = queue
            self.handler = handler
        }

        package func schedule(after seconds: Double) { clock.lock.withLock { deadline = (clock.manualTime ?? 0) + UInt64(max(0, seconds) * 1e9) } }
        package func cancel() { clock.lock.withLock { deadline = nil } }
    }

    private let lock = NSLock()
    private var manualTime: UInt64?
    private var pending: [(due: UInt64, order: Int, queue: DispatchQueue, body: @Sendable () -> Void)] = []
    private var timers: [Timer] = []
    private var order = 0

    /// Stops the clock at `start`: from now on only ``advance(by:)`` moves it.
    package init() {}

    package func manual(start: UInt64 = 1_000_000_000) { lock.withLock { manualTime = start } }

    package var now: UInt64 { lock.withLock { manualTime } ?? DispatchTime.now().uptimeNanoseconds }

    /// The delays asked for so far, in seconds from when they were asked (manual mode).
    package private(set) var delays: [Double] = []
    private let asked = Awaitable(0)

    /// Waits until `count` delays have been asked for (manual mode); false at the deadline.
    package func waitForDelays(_ count: Int, timeout: Double = 10) -> Bool { asked.wait(timeout: timeout) { $0 >= count } }

    package func after(_ delay: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        let scheduled: Bool = lock.withLock {
            guard let time = manualTime else { return false }
            order += 1
            delays.append(delay)
            pending.append((time + UInt64(max(0, delay) * 1e9), order, queue, body))
            return true
        }
        if scheduled { asked.update { $0 += 1 } } else { queue.asyncAfter(deadline: .now() + delay, execute: body) }
    }

    package func makeTimer(on queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void) -> any PracticeTimer {
        guard lock.withLock({ manualTime != nil }) else { return DispatchTimer(queue: queue, handler: handler) }
        let timer = Timer(clock: self, queue: queue, handler: handler)
        lock.withLock { timers.append(timer) }
        return timer
    }

    /// Moves the clock `seconds` ahead, running everything due by then (and what that
    /// schedules within the window) on its queue, earliest first.
    package func advance(by seconds: Double) {
        let end = now + UInt64(seconds * 1e9)
        while let (queue, body) = next(dueBy: end) {
            queue.sync { body() }
        }
        lock.withLock { manualTime = end }
    }

    /// The earliest work or timer due by `end`, taken off the list, the clock moved to it.
    private func next(dueBy end: UInt64) -> (DispatchQueue, @Sendable () -> Void)? {
        lock.withLock {
            let work = pending.indices.filter { pending[$0].due <= end }
                .min { (pending[$0].due, pending[$0].order) < (pending[$1].due, pending[$1].order) }
            let timer = timers.filter { ($0.deadline ?? .max) <= end }.min { $0.deadline! < $1.deadline! }
            if let work, timer.map({ pending[work].due <= $0.deadline! }) ?? true {
                let item = pending.remove(at: work)
                manualTime = max(manualTime ?? 0, item.due)
                return (item.queue, item.body)
            }
            guard let timer else { return nil }
            manualTime = max(manualTime ?? 0, timer.deadline!)
            timer.deadline = nil
            return (timer.queue, timer.handler)
        }
    }

    /// Work waiting for the clock (timers not counted).
    package var waiting: Int { lock.withLock { pending.count } }
}
