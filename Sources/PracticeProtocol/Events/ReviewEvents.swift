import FoundationEssentials
import Glibc

// The review of a conversation: its generation, corrections, the summary (topic `session`).

extension Event {
    public struct ReviewProgress: ProtocolEvent {
        public static let name = "review.progress"
        public static let topic = EventTopic.session
        public static let summary = "One poll of the review: what it holds so far, or the poll's error (`error`, `errors_in_a_row`)."
        public var polls: Int
        public var finishing: Bool
        public var status: SessionStatus?
        public var segments: Int?
        public var marks: Int?
        /// Whether the summary is there.
        public var summary: Bool?
        public var error: String?
        public var errorsInARow: Int?

        public init(polls: Int, finishing: Bool, status: SessionStatus? = nil, segments: Int? = nil, marks: Int? = nil, summary: Bool? = nil,
                    error: String? = nil, errorsInARow: Int? = nil) {
            self.polls = polls
            self.finishing = finishing
            self.status = status
            self.segments = segments
            self.marks = marks
            self.summary = summary
            self.error = error
            self.errorsInARow = errorsInARow
        }
    }

    /// The review, as the backend wrote it, with its marks.
    public struct ReviewReady: ProtocolEvent {
        public static let name = "review.ready"
        public static let topic = EventTopic.session
        public static let summary = "The review has marks (or the backend finished it): its segments, marks and corrections."
        public var review: Review

        public init(review: Review) { self.review = review }
        // The payload is the review itself, not an object holding it.
        public init(from decoder: Decoder) throws { review = try decoder.singleValueContainer().decode(Review.self) }
        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(review)
        }
    }

    /// `review.failed` and `review.finish_failed` share their shape.
    public struct ReviewFailed: ProtocolEvent {
        public static let name = "review.failed"
        public static let topic = EventTopic.session
        public static let summary = "Polling for the review gave up; `actions` lists what the UI can offer."
        public var message: String
        public var actions: [String]
        public init(message: String) {
            self.message = message
            actions = reviewActions
        }
    }

    public struct ReviewFinishFailed: ProtocolEvent {
        public static let name = "review.finish_failed"
        public static let topic = EventTopic.session
        public static let summary = "`review.finish` or its polling for the summary failed; `actions` lists what the UI can offer."
        public var message: String
        public var actions: [String]
        public init(message: String) {
            self.message = message
            actions = reviewActions
        }
    }

    /// What a UI can offer after a failure in the review flow: nothing strands the learner.
    public static let reviewActions = ["review.get", "review.finish", "session.close"]

    public struct CorrectionAdded: ProtocolEvent {
        public static let name = "correction.added"
        public static let topic = EventTopic.session
        public static let summary = "The backend answered `correction.ask`: the correction, as it wrote it."
        public var correction: Correction

        public init(correction: Correction) { self.correction = correction }
        public init(from decoder: Decoder) throws { correction = try decoder.singleValueContainer().decode(Correction.self) }
        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(correction)
        }
    }

    public struct CorrectionFailed: ProtocolEvent {
        public static let name = "correction.failed"
        public static let topic = EventTopic.session
        public static let summary = "`correction.ask` failed."
        public var segmentId: Int
        public var message: String

        public init(segmentId: Int, message: String) {
            self.segmentId = segmentId
            self.message = message
        }
    }
}
