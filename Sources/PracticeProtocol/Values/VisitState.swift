import FoundationEssentials

/// Who the kiosk's learner is to TalkCo (`kiosk.visits`).
public enum VisitIdentity: String, Codable, Sendable, CaseIterable, WireEnumerable {
    /// A public kiosk: every visit is a new learner, with a fresh TalkCo user id (the backend
    /// makes an empty profile for it), no configured name, and Chatterbox signed out at its end.
    case shared
    /// One learner's own kiosk (a home, a classroom's device): the configured identity for
    /// every visit, its profile and sign-in kept across visits.
    case personal
}

/// Where the kiosk's visit stands (`status.visit`, the snapshot).
public enum VisitPhase: String, Codable, Sendable, CaseIterable, WireEnumerable {
    /// Nobody is using the kiosk: the attract screen.
    case none
    /// A learner is using it.
    case active
    /// Nobody touched or spoke for `kiosk.idle_warning_s`: "Still there?" counts down
    /// `kiosk.idle_reset_s`.
    case warning
    /// The visit ended; what it left in flight (a turn being delivered, an answer being
    /// uploaded) is finishing, and its learner is then forgotten (`visit.ended`).
    case ending
}

/// Why a visit ended (`visit.ended`, the `practiced_visits_total` metric).
public enum VisitEndReason: String, Codable, Sendable, CaseIterable, WireEnumerable {
    /// The learner said so ("I'm done", `visit.end`).
    case done
    /// Nobody touched or spoke through the warning.
    case idle
    /// The Chatterbox learner signed out.
    case signout
    /// The daemon stopped or restarted mid-visit; ended at the next start.
    case restart
}

/// The kiosk's visit, as `status.visit`, the snapshot and `visit.*` answers show it.
public struct VisitState: Codable, Sendable, Equatable {
    public var phase: VisitPhase
    /// The visit's own id (random, never a learner's): null with no visit.
    public var visitId: String?
    public var identity: VisitIdentity
    /// Seconds since the visit began (null with no visit).
    public var durationS: Double?
    /// Seconds since the learner was last heard, touched the screen or waited on something in flight.
    public var idleS: Double?
    /// While `warning`: seconds until the visit ends.
    public var secondsLeft: Double?
    /// `kiosk.idle_warning_s` (0: no idle reset) and `kiosk.idle_reset_s`.
    public var idleWarningS: Int
    public var idleResetS: Int

    public init(phase: VisitPhase, visitId: String? = nil, identity: VisitIdentity, durationS: Double? = nil, idleS: Double? = nil,
                secondsLeft: Double? = nil, idleWarningS: Int, idleResetS: Int) {
        self.phase = phase
        self.visitId = visitId
        self.identity = identity
        self.durationS = durationS
        self.idleS = idleS
        self.secondsLeft = secondsLeft
        self.idleWarningS = idleWarningS
        self.idleResetS = idleResetS
    }
}
