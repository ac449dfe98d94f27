import Dispatch

/// Time as a reply stream keeps its deadlines: what time it is, and timers on the stream's
/// queue that can be pushed back at every chunk without allocating. Dispatch's in the
/// daemon (``DispatchStreamClock``); the stream's tests hold one whose time they move, so
/// that a 30 s idle deadline or a 120 s total one fires in a millisecond, at the moment
/// the test chooses.
protocol StreamClock: Sendable {
    /// Monotonic nanoseconds.
    var now: UInt64 { get }
    /// A timer that runs `handler` on `queue` once its deadline passes (none until scheduled).
    func makeTimer(on queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void) -> any StreamTimer
}

protocol StreamTimer: AnyObject, Sendable {
    /// Sets (or moves) the deadline to `seconds` from now.
    func schedule(after seconds: Double)
    func cancel()
}

/// Dispatch's clock; its timers are timer sources (rescheduled, never reallocated).
struct DispatchStreamClock: StreamClock {
    var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    func makeTimer(on queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void) -> any StreamTimer {
        DispatchStreamTimer(queue: queue, handler: handler)
    }
}

final class DispatchStreamTimer: StreamTimer, @unchecked Sendable {
    private let source: DispatchSourceTimer

    init(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: queue)
        source.setEventHandler(handler: handler)
        source.resume()
    }

    func schedule(after seconds: Double) { source.schedule(deadline: .now() + seconds) }
    func cancel() { source.cancel() }
}
