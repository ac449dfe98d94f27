import AudioKernel
import Dispatch
import FoundationEssentials
import PracticeProtocol
import PracticeSupport

/// One stranger after another at a public kiosk: the daemon's visits. A visit begins with the
/// first touch after the attract screen (`visit.touch`) or the first command that practises,
/// and ends with "I'm done" (`visit.end`), a sign-out, or the idle reset: nobody touched or
/// spoke, and nothing was in flight (a reply, an upload, a review being generated, a sound),
/// for `kiosk.idle_warning_s` → `kiosk.idle_warning`, then `kiosk.idle_reset_s` more → the
/// end. A touch or speech withdraws the warning.
///
/// The end is in two steps: the phase goes `ending` at once (nothing new begins), the flow
/// delivers what the visit left in flight and forgets its learner, and only then does
/// `visit.ended` go out, so that a UI that clears itself on it finds nothing more to come.
/// A marker in the state directory says a visit is under way: a daemon that stopped mid-visit
/// ends it at its next start (``endLeftover(_:)``, reason `restart`).
///
/// Threads: everything on ``queue``; ``state`` may be read from any thread. The idle clock is
/// one timer at the next deadline, not a tick: an unattended kiosk wakes once a minute at most.
final class VisitKeeper: @unchecked Sendable {
    struct Settings: Equatable, Sendable {
        var identity: VisitIdentity
        /// 0: visits never end for idleness.
        var warningSeconds: Int
        var resetSeconds: Int
    }

    struct Hooks: Sendable {
        /// Whether something the learner waits on is in flight.
        var busy: @Sendable () -> Bool
        /// A visit begins: the learner's identity for it is set up (a fresh TalkCo id when shared).
        var begin: @Sendable (VisitIdentity) -> Void
        /// The visit ended: the flow closes it, forgets its learner, and calls back once what
        /// it left in flight is delivered.
        var end: @Sendable (VisitEndReason, VisitIdentity, @escaping @Sendable () -> Void) -> Void
        var publish: @Sendable (any ProtocolEvent) -> Void
    }

    private struct Visit {
        var id: String
        var startedAt: UInt64
        var lastActivity: UInt64
        var warnedAt: UInt64?
        var ending: VisitEndReason?
    }

    let queue = DispatchQueue(label: "practiced.visit")
    private let clock: any PracticeClock
    private let hooks: Hooks
    private let metrics: Metrics
    private let logger: Logger
    private let marker: VisitMarker
    private var timer: (any PracticeTimer)!
    /// On `queue`.
    private var settings: Settings
    private var visit: Visit?
    /// The identity the next visit takes (a reload mid-visit changes the next one only).
    private var pendingIdentity: VisitIdentity?
    /// What ``state`` is computed from, copied on every change (read from any thread).
    private let published: Locked<(settings: Settings, visit: Visit?, next: VisitIdentity?)>
    /// A flow that has not finished its end by then is not waited for any longer (logged).
    static let endingLimitSeconds = 120.0

    init(settings: Settings, stateDirectory: String, clock: any PracticeClock, metrics: Metrics, logger: Logger, hooks: Hooks) {
        self.settings = settings
        self.clock = clock
        self.hooks = hooks
        self.metrics = metrics
        self.logger = logger
        marker = VisitMarker(stateDirectory: stateDirectory, logger: logger)
        published = Locked((settings, nil, nil))
        timer = clock.makeTimer(on: queue) { [weak self] in self?.deadlinePassed() }
        metrics.set(.visitActive, to: 0)
    }

    /// The visit as `status` and the snapshot show it (any thread).
    var state: VisitState {
        let (settings, visit, next) = published.withLock { $0 }
        return Self.state(settings, visit, next: next, now: clock.now)
    }

    /// New settings (SIGHUP): the idle clock follows the new times at once; a visit under
    /// way keeps its identity, and the next one takes the new.
    func update(_ new: Settings) {
        queue.async { [self] in
            if visit == nil { settings.identity = new.identity } else if new.identity != settings.identity { pendingIdentity = new.identity }
            settings.warningSeconds = new.warningSeconds
            settings.resetSeconds = new.resetSeconds
            rearm()
            refresh()
        }
    }

    // MARK: - What the learner does

    /// `visit.touch` (on `queue`): begins a visit, or keeps the one under way alive.
    func touch() throws(ControlError) -> VisitState {
        if visit?.ending != nil {
            throw ControlError(.invalidState, "the last visit is still ending (what it left in flight is being delivered)", retryable: true)
        }
        learnerActed(begins: true)
        return currentState()
    }

    /// Anything the learner did or the kiosk did for them (a command that practises, speech
    /// heard, a stage reached, a reply's end), from any thread: the idle clock starts again;
    /// `begins`: a visit begins if none is under way (a command that practises).
    func noticed(begins: Bool) {
        queue.async { [self] in learnerActed(begins: begins) }
    }

    /// `visit.end`, a sign-out, the reset (on `queue`): the visit ends; the answer is its
    /// state now (`ending`, or `none` when there was no visit).
    @discardableResult
    func end(_ reason: VisitEndReason) -> VisitState {
        guard var current = visit, current.ending == nil else { return currentState() }
        current.ending = reason
        if current.warnedAt != nil { metrics.increment(.idleWarnings, reason == .idle ? "reset" : "resumed") }
        visit = current
        timer.cancel()
        refresh()
        logger.notice("visit \(current.id) ending (\(reason)) after \(Int(seconds(since: current.startedAt))) s")
        let identity = settings.identity, id = current.id
        let finished = Locked(false)
        let finish: @Sendable () -> Void = { [weak self] in
            guard finished.withLock({ done in defer { done = true }; return !done }) else { return }
            self?.queue.async { [weak self] in self?.ended(id, reason) }
        }
        clock.after(Self.endingLimitSeconds, on: queue) { [weak self] in
            guard finished.withLock({ !$0 }) else { return }
            self?.logger.warning("visit \(id): its flow had not finished ending after \(Int(Self.endingLimitSeconds)) s; ended without it")
            finish()
        }
        hooks.end(reason, identity, finish)
        return currentState()
    }

    /// At start, before clients: a visit an earlier run left under way (it stopped or
    /// crashed mid-visit) ends now, counted and logged; whether there was one.
    @discardableResult
    func endLeftover() -> Bool {
        guard let leftover = marker.leftover() else { return false }
        logger.notice("visit \(leftover) was under way when the daemon last stopped: ended now (restart)")
        metrics.increment(.visits, VisitEndReason.restart.rawValue)
        marker.clear()
        return true
    }

    // MARK: - The idle clock

    private func learnerActed(begins: Bool) {
        let now = clock.now
        if visit == nil {
            guard begins else { return }
            begin(at: now)
            return
        }
        guard var current = visit, current.ending == nil else { return }
        current.lastActivity = now
        let wasWarned = current.warnedAt != nil
        current.warnedAt = nil
        visit = current
        rearm()
        refresh()
        if wasWarned {
            metrics.increment(.idleWarnings, "resumed")
            logger.info("visit \(current.id): the learner is still there")
            hooks.publish(Event.VisitResumed(visit: currentState()))
        }
    }

    private func begin(at now: UInt64) {
        if let next = pendingIdentity { settings.identity = next; pendingIdentity = nil }
        let id = Self.newID()
        visit = Visit(id: id, startedAt: now, lastActivity: now)
        hooks.begin(settings.identity)
        marker.write(id)
        metrics.set(.visitActive, to: 1)
        logger.notice("visit \(id) began (\(settings.identity) identity)")
        rearm()
        refresh()
        hooks.publish(Event.VisitStarted(visit: currentState()))
    }

    private func ended(_ id: String, _ reason: VisitEndReason) {
        guard let current = visit, current.id == id else { return }
        let length = seconds(since: current.startedAt)
        visit = nil
        marker.clear()
        metrics.increment(.visits, reason.rawValue)
        metrics.observe(.visitLength, seconds: length)
        metrics.set(.visitActive, to: 0)
        logger.notice("visit \(id) ended (\(reason)) after \(Int(length)) s: its learner is forgotten")
        refresh()
        hooks.publish(Event.VisitEnded(reason: reason, visitId: id, durationS: (length * 10).rounded() / 10))
    }

    /// When `visit`'s next step is due: the end once warned, else the warning.
    private func due(_ visit: Visit) -> UInt64 {
        visit.warnedAt.map { $0 + UInt64(settings.resetSeconds) * 1_000_000_000 }
            ?? visit.lastActivity + UInt64(settings.warningSeconds) * 1_000_000_000
    }

    /// The timer at the next deadline: the warning, or the end.
    private func rearm() {
        guard let current = visit, current.ending == nil, settings.warningSeconds > 0 else { return timer.cancel() }
        let (due, now) = (due(current), clock.now)
        timer.schedule(after: due > now ? Double(due - now) / 1e9 : 0)
    }

    private func deadlinePassed() {
        guard var current = visit, current.ending == nil, settings.warningSeconds > 0 else { return }
        let now = clock.now
        if hooks.busy() {
            // Waiting on the kiosk is not being away: the clock starts once it is done (the
            // events of its end count as activity too).
            return learnerActed(begins: false)
        }
        guard now >= due(current) else { return rearm() }
        if current.warnedAt != nil {
            logger.notice("visit \(current.id): nobody touched or spoke through the warning")
            end(.idle)
            return
        }
        current.warnedAt = now
        visit = current
        logger.info("visit \(current.id): idle for \(settings.warningSeconds) s; warned, ending in \(settings.resetSeconds) s")
        rearm()
        refresh()
        hooks.publish(Event.IdleWarning(secondsLeft: Double(settings.resetSeconds)))
    }

    // MARK: - The state

    private func currentState() -> VisitState { Self.state(settings, visit, next: pendingIdentity, now: clock.now) }

    private static func state(_ settings: Settings, _ visit: Visit?, next: VisitIdentity?, now: UInt64) -> VisitState {
        func seconds(since start: UInt64) -> Double { now > start ? ((Double(now - start) / 1e9) * 10).rounded() / 10 : 0 }
        guard let visit else {
            return VisitState(phase: .none, identity: next ?? settings.identity, idleWarningS: settings.warningSeconds, idleResetS: settings.resetSeconds)
        }
        let phase: VisitPhase = visit.ending != nil ? .ending : visit.warnedAt != nil ? .warning : .active
        let left = visit.warnedAt.map { max(0, Double(settings.resetSeconds) - seconds(since: $0)) }
        return VisitState(phase: phase, visitId: visit.id, identity: settings.identity, durationS: seconds(since: visit.startedAt),
                          idleS: seconds(since: visit.lastActivity), secondsLeft: left, idleWarningS: settings.warningSeconds,
                          idleResetS: settings.resetSeconds)
    }

    private func refresh() {
        let copy = (settings, visit, pendingIdentity)
        published.withLock { $0 = copy }
    }

    private func seconds(since start: UInt64) -> Double {
        let now = clock.now
        return now > start ? Double(now - start) / 1e9 : 0
    }

    /// 64 random bits: a visit's id names no learner and guesses none.
    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 16).leftPadded(to: 16)
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
