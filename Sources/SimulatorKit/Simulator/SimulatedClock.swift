import Foundation
import PracticeSupport

/// The simulator's waits (latency, pacing, a hanging `/start`), all interruptible: on
/// shutdown every wait ends at once, so that stopping the server never waits for a paced
/// reply or a 30 s hang to run out. Its time is the one clock it is handed (Dispatch's
/// unless a test holds it).
final class SimulatedClock: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false
    private let time: any PracticeClock

    init(time: any PracticeClock = DispatchClock()) { self.time = time }

    /// Monotonic nanoseconds.
    var now: UInt64 { time.now }

    /// Waits until `uptimeNanoseconds`; false when interrupted by ``stop()``.
    @discardableResult
    func wait(until uptimeNanoseconds: UInt64) -> Bool {
        let now = self.now
        guard uptimeNanoseconds > now else { return !isStopped }
        let deadline = Date().addingTimeInterval(Double(uptimeNanoseconds - now) / 1e9)
        condition.lock()
        defer { condition.unlock() }
        while !stopped {
            if !condition.wait(until: deadline) { return true }
        }
        return false
    }

    /// Waits `milliseconds`; false when interrupted.
    @discardableResult
    func wait(milliseconds: Int) -> Bool {
        wait(until: now + UInt64(max(0, milliseconds)) * 1_000_000)
    }

    var isStopped: Bool { condition.withLock { stopped } }

    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }
}
