import FoundationEssentials

/// The session as `session.get`, `status` and the subscription snapshot show it.
public struct SessionState: Codable, Sendable, Equatable {
    public var stage: SessionStage
    public var sessionId: String?
    public var mode: SessionMode?
    public var topicId: String?
    /// Turns the backend accepted in this session.
    public var turns: Int
    public var spool: SpoolState
    /// The turn being sent now.
    public var delivering: String?

    public static let idle = SessionState(stage: .idle, sessionId: nil, mode: nil, topicId: nil, turns: 0,
                                          spool: SpoolState(turns: 0, bytes: 0, durable: false, error: nil), delivering: nil)

    public init(stage: SessionStage, sessionId: String?, mode: SessionMode?, topicId: String?, turns: Int, spool: SpoolState, delivering: String?) {
        self.stage = stage
        self.sessionId = sessionId
        self.mode = mode
        self.topicId = topicId
        self.turns = turns
        self.spool = spool
        self.delivering = delivering
    }
}

/// What waits in the turn spool.
public struct SpoolState: Codable, Sendable, Equatable {
    public var turns: Int
    public var bytes: Int
    /// False when turns live in memory only (no spool directory).
    public var durable: Bool
    /// Why there is no spool.
    public var error: String?

    public init(turns: Int, bytes: Int, durable: Bool, error: String?) {
        self.turns = turns
        self.bytes = bytes
        self.durable = durable
        self.error = error
    }
}

/// A turn in the spool, as `spool.list` and `spool.recovered` show it.
public struct SpoolEntry: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable, CaseIterable, WireEnumerable {
        case pending, sending
    }

    public var id: String
    public var sessionId: String
    public var mode: SessionMode
    /// Seconds since 1970 when it was recorded.
    public var recordedAt: Double
    public var duration: Double
    public var bytes: Int
    public var state: State

    public init(id: String, sessionId: String, mode: SessionMode, recordedAt: Double, duration: Double, bytes: Int, state: State) {
        self.id = id
        self.sessionId = sessionId
        self.mode = mode
        self.recordedAt = recordedAt
        self.duration = duration
        self.bytes = bytes
        self.state = state
    }
}
