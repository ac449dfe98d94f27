import FoundationEssentials
import Glibc

// The session's life: created, its stage, ended, failed (topic `session`).

extension Event {
    public struct SessionStage: ProtocolEvent {
        public static let name = "session.stage"
        public static let topic = EventTopic.session
        public static let summary = "The session moved to another stage (see docs/sessions.md for the table of moves)."
        public var stage: PracticeProtocol.SessionStage
        public var previous: PracticeProtocol.SessionStage
        public var sessionId: String?
        public var mode: SessionMode?

        public init(stage: PracticeProtocol.SessionStage, previous: PracticeProtocol.SessionStage, sessionId: String? = nil, mode: SessionMode? = nil) {
            self.stage = stage
            self.previous = previous
            self.sessionId = sessionId
            self.mode = mode
        }
    }

    public struct SessionCreated: ProtocolEvent {
        public static let name = "session.created"
        public static let topic = EventTopic.session
        public static let summary = "The backend created the session; the greeting follows."
        public var sessionId: String
        public var mode: SessionMode
        public var topicId: String?

        public init(sessionId: String, mode: SessionMode, topicId: String? = nil) {
            self.sessionId = sessionId
            self.mode = mode
            self.topicId = topicId
        }
    }

    public struct SessionResumed: ProtocolEvent {
        public static let name = "session.resumed"
        public static let topic = EventTopic.session
        public static let summary = "`spool.retry` of a turn from an earlier run took up its session again."
        public var sessionId: String
        public var mode: SessionMode

        public init(sessionId: String, mode: SessionMode) {
            self.sessionId = sessionId
            self.mode = mode
        }
    }

    public struct SessionFailed: ProtocolEvent {
        public static let name = "session.failed"
        public static let topic = EventTopic.session
        public static let summary = "The session cannot go on (`reason`); `session.close` or a new `session.start`."
        public enum Reason: String, Codable, Sendable, CaseIterable, WireEnumerable {
            /// The backend did not create the session.
            case startFailed = "start_failed"
            /// The backend no longer knows the session (404, or its upstream gone).
            case sessionGone = "session_gone"
        }
        public var reason: Reason
        public var message: String
        public var sessionId: String?

        public init(reason: Reason, message: String, sessionId: String? = nil) {
            self.reason = reason
            self.message = message
            self.sessionId = sessionId
        }
    }

    public struct SessionEnded: ProtocolEvent {
        public static let name = "session.ended"
        public static let topic = EventTopic.session
        public static let summary = "The talk ended (`session.end`); in conversation mode the review is generated next."
        public var sessionId: String
        public var status: SessionStatus
        public var mode: SessionMode

        public init(sessionId: String, status: SessionStatus, mode: SessionMode) {
            self.sessionId = sessionId
            self.status = status
            self.mode = mode
        }
    }

    public struct SessionEndFailed: ProtocolEvent {
        public static let name = "session.end_failed"
        public static let topic = EventTopic.session
        public static let summary = "`session.end` failed; the session is back in `ready` and may try again."
        public var message: String

        public init(message: String) {
            self.message = message
        }
    }

    public struct SessionCompleted: ProtocolEvent {
        public static let name = "session.completed"
        public static let topic = EventTopic.session
        public static let summary = "The session is completed on the server: its summary (null when unavailable, `note` says why) and review."
        public var sessionId: String?
        public var summary: Summary?
        public var note: String
        public var review: Review?

        public init(sessionId: String? = nil, summary: Summary? = nil, note: String, review: Review? = nil) {
            self.sessionId = sessionId
            self.summary = summary
            self.note = note
            self.review = review
        }
    }
}
