import Dispatch
import FoundationEssentials
import PracticeProtocol
import PracticeSupport

/// The session on the backend, as every piece of the session sees it.
struct ActiveSession: Sendable {
    var id: String
    var mode: SessionMode
    var topicID: String?
    /// Turns the backend accepted.
    var turns = 0
}

/// What the pieces of the session (``TurnDelivery``, ``ReplyPlayback``, ``ReviewPolling``,
/// ``LearnerData``) share, owned by ``SessionController``: the stage, the session's
/// identity, the events. The pieces and the context run on `queue` only.
protocol SessionContext: AnyObject, Sendable {
    var queue: DispatchQueue { get }
    var stage: SessionStage { get }
    var active: ActiveSession? { get }
    /// Bumped when a session ends or is closed: answers for an older epoch are dropped.
    var epoch: Int { get }
    var settings: SessionSettings { get }
    var metrics: Metrics { get }
    var logger: Logger { get }
    /// Whether the daemon is stopping: nothing new starts.
    var stopping: Bool { get }
    /// The clock and timers of the pieces.
    var scheduler: any PracticeClock { get }

    /// Moves the stage (a move ``SessionStage`` does not allow is refused and logged).
    func move(to next: SessionStage)
    func publish(_ event: any ProtocolEvent)
    /// Something `status` and `session.get` show changed.
    func stateChanged()
    /// The session cannot go on: activity stops, `session.failed`, stage `failed`.
    func fail(_ reason: Event.SessionFailed.Reason, error: String)
    /// The backend accepted a turn of the session.
    func countAcceptedTurn()
    /// Takes up the session of a turn from an earlier run (`spool.retry` from idle).
    func resume(_ session: ActiveSession)
}

extension SessionContext {
    /// Counts a turn by how it ended (the `practiced_turns_total` metric).
    func countTurn(_ outcome: String) {
        metrics.increment(.turns, outcome)
    }

    /// Monotonic nanoseconds, by the scheduler's clock.
    var now: UInt64 { scheduler.now }

    func observe(_ metric: Metric, since start: UInt64, now: UInt64? = nil) {
        // Clamped: a wrapped difference would put 1.8e10 s in the histogram.
        metrics.observe(metric, seconds: max(0, milliseconds(from: start, to: now ?? self.now) / 1e3))
    }

    // The pieces hold their context unowned (it owns them); work they leave for later
    // goes through these, which keep the context alive until it has run.

    /// Runs `body` on the queue soon.
    func async(_ body: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            withExtendedLifetime(self) { body() }
        }
    }

    /// Runs `body` on the queue after `delay` seconds (by the scheduler's clock).
    func after(_ delay: Double, _ body: @escaping @Sendable () -> Void) {
        scheduler.after(delay, on: queue) { [self] in
            withExtendedLifetime(self) { body() }
        }
    }

    /// Runs a backend call off the queue and hands its result back on the queue.
    func call<Backend: Sendable, T: Sendable>(_ backend: Backend, _ body: @escaping @Sendable (Backend) async throws(BackendError) -> T,
                                              then: @escaping @Sendable (Result<T, BackendError>) -> Void) {
        Task { [self] in
            let result: Result<T, BackendError>
            do throws(BackendError) { result = .success(try await body(backend)) } catch { result = .failure(error) }
            async { then(result) }
        }
    }
}

/// A figure rounded to three decimals, as the events report them.
func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

/// From one uptime (ns) to another, in milliseconds; negative when `end` came first (times
/// taken on different threads), never a trap on an unsigned subtraction.
func milliseconds(from start: UInt64, to end: UInt64) -> Double { (Double(end) - Double(start)) / 1e6 }
