import FoundationEssentials

// The backend's JSON shapes (shared/docs/backend-contract.md). Keys are snake_case on the
// wire; the client's decoder and encoder convert them, so the Swift names are camelCase.
// Every type decodes leniently where the real server varies: unknown fields are ignored,
// statuses and issue types it may add later decode as `.other`, and legacy weak points
// (plain strings) are skipped.

public struct Topic: Codable, Equatable, Sendable {
    public var id: String
    public var labelEn: String
    public var labelZh: String
    public var promptHint: String

    public init(id: String, labelEn: String, labelZh: String, promptHint: String) {
        self.id = id
        self.labelEn = labelEn
        self.labelZh = labelZh
        self.promptHint = promptHint
    }
}

public enum SessionMode: String, Codable, Sendable {
    case conversation
    case review
}

/// A session status; statuses the client does not know decode as `.other`.
public enum SessionStatus: Codable, Equatable, Sendable, CustomStringConvertible {
    case active, reviewing, reviewed, completing, completed, ended
    case other(String)

    public init(rawValue: String) {
        switch rawValue {
        case "active": self = .active
        case "reviewing": self = .reviewing
        case "reviewed": self = .reviewed
        case "completing": self = .completing
        case "completed": self = .completed
        case "ended": self = .ended
        default: self = .other(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .active: return "active"
        case .reviewing: return "reviewing"
        case .reviewed: return "reviewed"
        case .completing: return "completing"
        case .completed: return "completed"
        case .ended: return "ended"
        case .other(let value): return value
        }
    }

    public var description: String { rawValue }

    public init(from decoder: Decoder) throws { self.init(rawValue: try decoder.singleValueContainer().decode(String.self)) }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

public struct CreateSessionRequest: Codable, Equatable, Sendable {
    public var userId: String
    public var userName: String?
    /// Required in conversation mode; `nil` (sent as JSON null) in review mode.
    public var topicId: String?
    public var mode: SessionMode

    public init(userId: String, userName: String? = nil, topicId: String?, mode: SessionMode) {
        self.userId = userId
        self.userName = userName
        self.topicId = topicId
        self.mode = mode
    }

    // topic_id is sent as null rather than left out, as the iOS client does.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userId, forKey: .userId)
        try container.encodeIfPresent(userName, forKey: .userName)
        try container.encode(topicId, forKey: .topicId)
        try container.encode(mode, forKey: .mode)
    }
}

public struct CreatedSession: Codable, Equatable, Sendable {
    public var sessionId: String
    public var createdAt: String

    public init(sessionId: String, createdAt: String) {
        self.sessionId = sessionId
        self.createdAt = createdAt
    }
}

/// The answer to `DELETE /sessions/{id}`.
public struct EndedTalk: Codable, Equatable, Sendable {
    public var sessionId: String
    public var status: SessionStatus
    public var mode: SessionMode?

    public init(sessionId: String, status: SessionStatus, mode: SessionMode? = nil) {
        self.sessionId = sessionId
        self.status = status
        self.mode = mode
    }
}

/// The answer to `POST /sessions/{id}/end`.
public struct EndedSession: Codable, Equatable, Sendable {
    public var sessionId: String
    public var status: SessionStatus

    public init(sessionId: String, status: SessionStatus) {
        self.sessionId = sessionId
        self.status = status
    }
}

public enum IssueType: Codable, Equatable, Sendable {
    case grammar, naturalness, sentenceStructure
    case other(String)

    public init(from decoder: Decoder) throws {
        let value = try decoder.singleValueContainer().decode(String.self)
        switch value {
        case "grammar": self = .grammar
        case "naturalness": self = .naturalness
        case "sentence_structure": self = .sentenceStructure
        default: self = .other(value)
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .grammar: try container.encode("grammar")
        case .naturalness: try container.encode("naturalness")
        case .sentenceStructure: try container.encode("sentence_structure")
        case .other(let value): try container.encode(value)
        }
    }
}

public struct Mark: Codable, Equatable, Sendable {
    public var id: Int
    public var issueTypes: [IssueType]
    public var original: String
    public var suggestion: String
    public var explanation: String

    public init(id: Int, issueTypes: [IssueType], original: String, suggestion: String, explanation: String) {
        self.id = id
        self.issueTypes = issueTypes
        self.original = original
        self.suggestion = suggestion
        self.explanation = explanation
    }
}

/// A correction as `POST /sessions/{id}/corrections` answers it (trace 20): the only shape
/// that names its segment.
public struct Correction: Codable, Equatable, Sendable {
    public var id: Int
    public var segmentId: Int
    public var userMessage: String
    public var correction: String
    public var explanation: String
    public var createdAt: String

    public init(id: Int, segmentId: Int, userMessage: String, correction: String, explanation: String, createdAt: String) {
        self.id = id
        self.segmentId = segmentId
        self.userMessage = userMessage
        self.correction = correction
        self.explanation = explanation
        self.createdAt = createdAt
    }
}

/// A correction inside `GET /review` (trace 21): the same fields but `segment_id`, which its
/// parent segment gives. Decoding the POST shape here is what made a review with a
/// correction unreadable ("missing segmentId").
public struct SegmentCorrection: Codable, Equatable, Sendable {
    public var id: Int
    public var userMessage: String
    public var correction: String
    public var explanation: String
    public var createdAt: String

    public init(id: Int, userMessage: String, correction: String, explanation: String, createdAt: String) {
        self.id = id
        self.userMessage = userMessage
        self.correction = correction
        self.explanation = explanation
        self.createdAt = createdAt
    }
}

public struct Segment: Codable, Equatable, Sendable {
    public var id: Int
    public var turnIndex: Int
    public var userText: String
    public var aiText: String
    public var aiMarks: [Mark]
    public var corrections: [SegmentCorrection]

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(Int.self, forKey: .id)
        turnIndex = try c.decode(Int.self, forKey: .turnIndex)
        userText = try c.decodeIfPresent(String.self, forKey: .userText) ?? ""
        aiText = try c.decodeIfPresent(String.self, forKey: .aiText) ?? ""
        aiMarks = try c.decodeIfPresent([Mark].self, forKey: .aiMarks) ?? []
        corrections = try c.decodeIfPresent([SegmentCorrection].self, forKey: .corrections) ?? []
    }
}

/// Each dimension may be null (the model had nothing to say); null is passed on as null.
public struct Weaknesses: Codable, Equatable, Sendable {
    public var grammar: String?
    public var naturalness: String?
    public var sentenceStructure: String?

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(grammar, forKey: .grammar)
        try c.encode(naturalness, forKey: .naturalness)
        try c.encode(sentenceStructure, forKey: .sentenceStructure)
    }

    public init(grammar: String? = nil, naturalness: String? = nil, sentenceStructure: String? = nil) {
        self.grammar = grammar
        self.naturalness = naturalness
        self.sentenceStructure = sentenceStructure
    }
}

public struct Summary: Codable, Equatable, Sendable {
    public var strengths: [String]
    public var weaknesses: Weaknesses
    public var overall: String

    public init(strengths: [String], weaknesses: Weaknesses, overall: String) {
        self.strengths = strengths
        self.weaknesses = weaknesses
        self.overall = overall
    }
}

public struct Review: Codable, Equatable, Sendable {
    public var sessionId: String
    public var status: SessionStatus
    public var segments: [Segment]
    /// Null until generated, and still null when generation failed.
    public var summary: Summary?

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sessionId, forKey: .sessionId)
        try c.encode(status, forKey: .status)
        try c.encode(segments, forKey: .segments)
        try c.encode(summary, forKey: .summary)  // null, not left out
    }

    /// Whether any segment carries marks.
    public var hasMarks: Bool { segments.contains { !$0.aiMarks.isEmpty } }

    public init(sessionId: String, status: SessionStatus, segments: [Segment], summary: Summary? = nil) {
        self.sessionId = sessionId
        self.status = status
        self.segments = segments
        self.summary = summary
    }
}

public struct CorrectionRequest: Codable, Equatable, Sendable {
    public var segmentId: Int
    public var userMessage: String

    public init(segmentId: Int, userMessage: String) {
        self.segmentId = segmentId
        self.userMessage = userMessage
    }
}

public struct WeakPointExample: Codable, Equatable, Sendable {
    public var wrong: String
    public var correct: String

    public init(wrong: String, correct: String) {
        self.wrong = wrong
        self.correct = correct
    }
}

public struct WeakPoint: Codable, Equatable, Sendable {
    public var pattern: String
    public var examples: [WeakPointExample]

    public init(pattern: String, examples: [WeakPointExample]) {
        self.pattern = pattern
        self.examples = examples
    }
}

public struct QuickReviewItem: Codable, Equatable, Sendable {
    public var chinese: String
    public var english: String

    public init(chinese: String, english: String) {
        self.chinese = chinese
        self.english = english
    }
}

public struct ProfileData: Codable, Equatable, Sendable {
    /// Free-form facts; kept as text.
    public var personalFacts: [String]
    /// dimension → patterns. Weak points that old servers stored as plain strings are skipped.
    public var weakPoints: [String: [WeakPoint]]
    public var commonErrors: [String]
    public var progressNotes: String
    public var quickReview: [QuickReviewItem]

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        personalFacts = (try? c.decodeIfPresent([LenientText].self, forKey: .personalFacts))?.compactMap(\.text) ?? []
        commonErrors = (try? c.decodeIfPresent([LenientText].self, forKey: .commonErrors))?.compactMap(\.text) ?? []
        progressNotes = (try? c.decodeIfPresent(String.self, forKey: .progressNotes)) ?? ""
        quickReview = (try? c.decodeIfPresent([QuickReviewItem].self, forKey: .quickReview)) ?? []
        let raw = (try? c.decodeIfPresent([String: [LenientWeakPoint]].self, forKey: .weakPoints)) ?? [:]
        weakPoints = raw.mapValues { $0.compactMap(\.weakPoint) }
    }

    /// A list item that is text, or something else (dropped).
    private struct LenientText: Decodable {
        var text: String?
        init(from decoder: Decoder) throws { text = try? decoder.singleValueContainer().decode(String.self) }
    }

    /// A weak point in the current shape, or a legacy plain string (dropped).
    private struct LenientWeakPoint: Decodable {
        var weakPoint: WeakPoint?
        init(from decoder: Decoder) throws { weakPoint = try? WeakPoint(from: decoder) }
    }
}

public struct UserProfile: Codable, Equatable, Sendable {
    public var userId: String
    public var userName: String?
    /// CEFR level (A1...C2), or nil before the first evaluation.
    public var level: String?
    public var learningGoal: String?
    public var profileData: ProfileData
    public var updatedAt: String?
    /// True when any weak-point pattern has three or more examples.
    public var needsReview: Bool

    // The server's nulls go to clients as nulls (trace 29: a new user has no name, level or
    // goal); a synthesized encoder would leave the keys out.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(userId, forKey: .userId)
        try c.encode(userName, forKey: .userName)
        try c.encode(level, forKey: .level)
        try c.encode(learningGoal, forKey: .learningGoal)
        try c.encode(profileData, forKey: .profileData)
        try c.encode(updatedAt, forKey: .updatedAt)
        try c.encode(needsReview, forKey: .needsReview)
    }

    public init(userId: String, userName: String? = nil, level: String? = nil, learningGoal: String? = nil, profileData: ProfileData, updatedAt: String? = nil, needsReview: Bool) {
        self.userId = userId
        self.userName = userName
        self.level = level
        self.learningGoal = learningGoal
        self.profileData = profileData
        self.updatedAt = updatedAt
        self.needsReview = needsReview
    }
}
