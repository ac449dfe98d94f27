import Dispatch

/// Time as the session's pieces see it: what time it is, and work to run later on a queue.
/// The daemon's is Dispatch's monotonic clock (``DispatchScheduler``); the pieces' tests hold
/// one whose time they move themselves, so that retries, polls, drains and deadlines run in
/// memory in milliseconds and in an order the test decides (as `StreamingPlayer(clock:)`
/// lets the jitter tests set the network's time).
protocol SessionScheduler: Sendable {
    /// Monotonic nanoseconds.
    var now: UInt64 { get }
    /// Runs `body` on `queue` once `delay` seconds have passed.
    func after(_ delay: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void)
}

/// Dispatch's clock and timers.
struct DispatchScheduler: SessionScheduler {
    var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    func after(_ delay: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        queue.asyncAfter(deadline: .now() + delay, execute: body)
    }
}
