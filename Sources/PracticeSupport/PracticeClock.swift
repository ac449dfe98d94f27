import AudioKernel
import Dispatch

/// Time as every piece of the daemon's flows sees it: what time it is, work to run later on
/// a queue, and timers that can be pushed back without allocating (a reply stream's idle
/// deadline moves at every chunk). The one clock of the flows, their pieces and the reply
/// streams: Dispatch's in the daemon (``DispatchClock``); a test holds one whose time it
/// moves itself, so that a minute of retries, ten minutes of polls or a 120 s deadline run
/// in milliseconds, in the order the test decides.
package protocol PracticeClock: MonotonicClock {
    /// Runs `body` on `queue` once `delay` seconds have passed.
    func after(_ delay: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void)
    /// A timer that runs `handler` on `queue` once its deadline passes (none until scheduled).
    func makeTimer(on queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void) -> any PracticeTimer
}

/// A deadline that can be set, moved and cancelled (``PracticeClock/makeTimer(on:_:)``).
package protocol PracticeTimer: AnyObject, Sendable {
    /// Sets (or moves) the deadline to `seconds` from now.
    func schedule(after seconds: Double)
    func cancel()
}

/// Dispatch's monotonic clock; its timers are timer sources (rescheduled, never reallocated).
package struct DispatchClock: PracticeClock {
    package init() {}

    package var now: UInt64 { UptimeClock().now }

    package func after(_ delay: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        queue.asyncAfter(deadline: .now() + delay, execute: body)
    }

    package func makeTimer(on queue: DispatchQueue, _ handler: @escaping @Sendable () -> Void) -> any PracticeTimer {
        DispatchTimer(queue: queue, handler: handler)
    }
}

package final class DispatchTimer: PracticeTimer, @unchecked Sendable {
    private let source: DispatchSourceTimer

    package init(queue: DispatchQueue, handler: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: queue)
        source.setEventHandler(handler: handler)
        source.resume()
    }

    package func schedule(after seconds: Double) { source.schedule(deadline: .now() + seconds) }
    package func cancel() { source.cancel() }
}

package extension PracticeClock {
    /// Suspends the calling task for `seconds` of this clock's time (a REST call's retry
    /// waits here, so a test's clock runs a minute of retries at once); a cancelled task
    /// wakes at once and throws.
    func sleep(_ seconds: Double) async throws(CancellationError) {
        let wake = Locked<(fired: Bool, continuation: CheckedContinuation<Void, Never>?)>((false, nil))
        @Sendable func fire() {
            let continuation = wake.withLock { state in
                defer { state = (true, nil) }
                return state.fired ? nil : state.continuation
            }
            continuation?.resume()
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let early = wake.withLock { state in
                    if state.fired { return true }
                    state.continuation = continuation
                    return false
                }
                if early { return continuation.resume() }
                after(seconds, on: sleepQueue) { fire() }
            }
        } onCancel: {
            fire()
        }
        if Task.isCancelled { throw CancellationError() }
    }
}

/// Where a sleeping task's wake-up runs: it only resumes the task.
private let sleepQueue = DispatchQueue(label: "practiced.clock.sleep")
