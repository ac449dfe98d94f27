import FoundationEssentials

/// The learner of cue practice, as `learner.get`, the sign-in commands and `status` show it.
/// No token ever appears here.
public struct LearnerState: Codable, Sendable, Equatable {
    public var signedIn: Bool
    public var email: String?
    public var accountId: Int?
    public var profileId: Int?
    /// The language practised (the active profile's).
    public var language: String?
    /// The languages the backend offers (`app_config`); empty until it was reached.
    public var languages: [String]

    public init(signedIn: Bool = false, email: String? = nil, accountId: Int? = nil, profileId: Int? = nil, language: String? = nil,
                languages: [String] = []) {
        self.signedIn = signedIn
        self.email = email
        self.accountId = accountId
        self.profileId = profileId
        self.language = language
        self.languages = languages
    }
}

/// A cue card: the question to answer aloud. `details` is the backend's markdown, given as
/// text (a client shows it as text, never as HTML).
public struct CueCard: Codable, Sendable, Equatable {
    public var cueId: Int
    public var title: String
    public var details: String

    public init(cueId: Int, title: String, details: String) {
        self.cueId = cueId
        self.title = title
        self.details = details
    }
}

/// Where a recording's transcript or evaluation is: `none` (not asked, or failed: the
/// backend has no failed state), `processing`, `ready`.
public enum CueResultStatus: String, Codable, Sendable, CaseIterable, WireEnumerable {
    case none, processing, ready
}

/// A recorded answer on the backend with what is known of its results.
public struct CueRecording: Codable, Sendable, Equatable {
    public var recordingId: Int
    public var cueId: Int
    public var cueTitle: String?
    public var createdAt: String?
    public var durationS: Double?
    public var transcriptStatus: CueResultStatus
    public var transcript: String?
    public var evaluationStatus: CueResultStatus
    public var evaluation: ChatterboxEvaluation?

    public init(recordingId: Int, cueId: Int, cueTitle: String? = nil, createdAt: String? = nil, durationS: Double? = nil, transcriptStatus: CueResultStatus, transcript: String? = nil, evaluationStatus: CueResultStatus, evaluation: ChatterboxEvaluation? = nil) {
        self.recordingId = recordingId
        self.cueId = cueId
        self.cueTitle = cueTitle
        self.createdAt = createdAt
        self.durationS = durationS
        self.transcriptStatus = transcriptStatus
        self.transcript = transcript
        self.evaluationStatus = evaluationStatus
        self.evaluation = evaluation
    }
}

/// Cue practice's own state: what the recorder does for it, and the answers not yet
/// uploaded.
public struct CuePracticeState: Codable, Sendable, Equatable {
    public enum Stage: String, Codable, Sendable, CaseIterable, WireEnumerable {
        /// Nothing recorded now.
        case ready
        /// Hands-free: waiting for speech.
        case listening
        case recording
    }

    public var stage: Stage
    /// The cue being answered while recording.
    public var cueId: Int?
    /// Answers spooled and not yet on the backend.
    public var pending: Int

    public init(stage: Stage, cueId: Int? = nil, pending: Int) {
        self.stage = stage
        self.cueId = cueId
        self.pending = pending
    }
}
