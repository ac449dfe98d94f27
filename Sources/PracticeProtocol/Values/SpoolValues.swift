import FoundationEssentials

/// A turn or cue answer the spool set aside instead of sending or deleting it: its record
/// cannot be read, or its audio no longer matches the size and checksum its record keeps (a
/// disk that lost a file's tail). Its files are moved, whole, into the spool's
/// `quarantine/` folder for a person to look at; `spool.list` and `spool.set_aside` tell it.
public struct SpoolSetAside: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable, WireEnumerable {
        case turn
        case cueAnswer = "cue_answer"
    }

    public var kind: Kind
    /// The turn's or answer's id (the file's name when no record could be read).
    public var id: String
    public var reason: String
    /// The quarantine folder its files are in.
    public var path: String
    /// Seconds since 1970 when it was set aside.
    public var setAsideAt: Double

    public init(kind: Kind, id: String, reason: String, path: String, setAsideAt: Double) {
        self.kind = kind
        self.id = id
        self.reason = reason
        self.path = path
        self.setAsideAt = setAsideAt
    }
}

/// A cue answer in the spool, as `spool.list` shows it.
public struct CueSpoolEntry: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable, CaseIterable, WireEnumerable {
        /// Waiting for its turn (or for a sign-in).
        case pending
        /// Being uploaded now.
        case uploading
        /// The backend refused it in this run: kept, not sent again until the next start or
        /// sign-in (`cue.discard` removes it).
        case refused
    }

    public var answerId: String
    public var cueId: Int
    public var profileId: Int
    /// Seconds since 1970 when it was recorded.
    public var recordedAt: Double
    public var durationS: Double
    public var bytes: Int
    public var state: State
    /// Why its last upload failed, when one did.
    public var lastError: String?

    public init(answerId: String, cueId: Int, profileId: Int, recordedAt: Double, durationS: Double, bytes: Int, state: State, lastError: String?) {
        self.answerId = answerId
        self.cueId = cueId
        self.profileId = profileId
        self.recordedAt = recordedAt
        self.durationS = durationS
        self.bytes = bytes
        self.state = state
        self.lastError = lastError
    }
}
