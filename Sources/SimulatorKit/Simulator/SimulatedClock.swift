import Foundation

/// The simulator's waits (latency, pacing, a hanging `/start`), all interruptible: on
/// shutdown every wait ends at once, so that stopping the server never waits for a paced
/// reply or a 30 s hang to run out.
final class SimulatedClock: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false

    /// Waits until `uptimeNanoseconds`; false when interrupted by ``stop()``.
    @discardableResult
    func wait(until uptimeNanoseconds: UInt64) -> Bool {
        let now = DispatchTime.now().uptimeNanoseconds
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
        wait(until: DispatchTime.now().uptimeNanoseconds + UInt64(max(0, milliseconds)) * 1_000_000)
    }

    var isStopped: Bool { condition.withLock { stopped } }

    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }
}
