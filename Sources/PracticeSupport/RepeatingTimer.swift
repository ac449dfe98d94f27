import AudioKernel
import Dispatch

/// Runs `body` on `queue` every `interval` seconds of `clock` until cancelled. The clock's
/// timers are one-shot (a test's clock moves them by hand), so this one is re-armed after
/// each run: a run that comes late does not bunch the next ones up. The device keeper's and
/// the control server's periodic checks run on it.
package final class RepeatingTimer: Sendable {
    private let interval: Double
    private let body: @Sendable () -> Void
    /// The armed timer; nil once cancelled, so that a run already under way arms no next.
    private let armed = Locked<(any PracticeTimer)?>(nil)

    package init(clock: any PracticeClock, every interval: Double, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.body = body
        let timer = clock.makeTimer(on: queue) { [weak self] in self?.run() }
        armed.withLock { $0 = timer }
        timer.schedule(after: interval)
    }

    private func run() {
        body()
        armed.withLock { $0 }?.schedule(after: interval)
    }

    /// No run starts after this returns, but one already running finishes.
    package func cancel() {
        let timer = armed.withLock { armed in
            defer { armed = nil }
            return armed
        }
        timer?.cancel()
    }
}
