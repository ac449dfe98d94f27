import FoundationEssentials
import Glibc

// The reply to a greeting or a turn: its stream, its sound, its end (topic `session`).

extension Event {
    public struct Transcript: ProtocolEvent {
        public static let name = "transcript"
        public static let topic = EventTopic.session
        public static let summary = "What the backend heard the learner say."
        public var text: String
        public var turnId: String?

        public init(text: String, turnId: String? = nil) {
            self.text = text
            self.turnId = turnId
        }
    }

    public struct ReplyText: ProtocolEvent {
        public static let name = "reply.text"
        public static let topic = EventTopic.session
        public static let summary = "The tutor's words, released with the sound (or at the end when there is none)."
        public var text: String
        public var turnId: String?
        public var greeting: Bool

        public init(text: String, turnId: String? = nil, greeting: Bool) {
            self.text = text
            self.turnId = turnId
            self.greeting = greeting
        }
    }

    public struct ReplyAudioStarted: ProtocolEvent {
        public static let name = "reply.audio_started"
        public static let topic = EventTopic.session
        public static let summary = "The reply's first sample reached the speaker."
        public var turnId: String?

        public init(turnId: String? = nil) {
            self.turnId = turnId
        }
    }

    public struct ReplyRetrying: ProtocolEvent {
        public static let name = "reply.retrying"
        public static let topic = EventTopic.session
        public static let summary = "The request for a reply is sent again after `delay_s` (nothing reached the backend yet)."
        public var turnId: String?
        public var attempt: Int
        public var delayS: Double
        public var message: String

        public init(turnId: String? = nil, attempt: Int, delayS: Double, message: String) {
            self.turnId = turnId
            self.attempt = attempt
            self.delayS = delayS
            self.message = message
        }
    }

    public struct ReplyTiming: ProtocolEvent {
        public static let name = "reply.timing"
        public static let topic = EventTopic.session
        public static let summary = "A step's duration as the backend reports it (its `timing` events)."
        public var step: String
        public var seconds: Double
        public var turnId: String?

        public init(step: String, seconds: Double, turnId: String? = nil) {
            self.step = step
            self.seconds = seconds
            self.turnId = turnId
        }
    }

    public struct ReplyMalformed: ProtocolEvent {
        public static let name = "reply.malformed"
        public static let topic = EventTopic.session
        public static let summary = "An SSE event of the reply could not be read; the stream goes on."
        public var type: String
        public var reason: String

        public init(type: String, reason: String) {
            self.type = type
            self.reason = reason
        }
    }

    public struct ReplyIncomplete: ProtocolEvent {
        public static let name = "reply.incomplete"
        public static let topic = EventTopic.session
        public static let summary = "The stream broke after the backend took the turn: the sound stops, the turn is not sent again."
        public var message: String
        public var turnId: String?
        public var responseText: String?

        public init(message: String, turnId: String? = nil, responseText: String? = nil) {
            self.message = message
            self.turnId = turnId
            self.responseText = responseText
        }
    }

    public struct ReplyWaiting: ProtocolEvent {
        public static let name = "reply.waiting"
        public static let topic = EventTopic.session
        public static let summary = "The next upload waits (at most `timeout_s`) for a stopped reply's stream to end upstream."
        public var turnId: String?
        public var reason: String
        public var timeoutS: Double

        public init(turnId: String? = nil, reason: String, timeoutS: Double) {
            self.turnId = turnId
            self.reason = reason
            self.timeoutS = timeoutS
        }
    }

    public struct ReplyDrained: ProtocolEvent {
        public static let name = "reply.drained"
        public static let topic = EventTopic.session
        public static let summary = "A stopped reply's stream ended (or was hung up after its deadline: `timed_out`)."
        public var turnId: String?
        public var greeting: Bool
        public var timedOut: Bool
        public var complete: Bool
        public var drainedMs: Double

        public init(turnId: String? = nil, greeting: Bool, timedOut: Bool, complete: Bool, drainedMs: Double) {
            self.turnId = turnId
            self.greeting = greeting
            self.timedOut = timedOut
            self.complete = complete
            self.drainedMs = drainedMs
        }
    }

    /// The end of a reply, played out or interrupted. An interrupted reply (barge-in,
    /// `playback.stop`) carries no playback figures: those members are null.
    public struct ReplyFinished: ProtocolEvent {
        public static let name = "reply.finished"
        public static let topic = EventTopic.session
        public static let summary = "The reply ended: played out, or `interrupted`; with its outcome and latency figures."
        public var turnId: String?
        public var greeting: Bool
        public var interrupted: Bool
        /// Whether the stream ended with `done`.
        public var complete: Bool
        /// `answered`, an unanswered outcome, or `interrupted`.
        public var outcome: String
        public var playedS: Double?
        public var underruns: Int?
        /// The jitter buffer's lead when the reply's sound started, and the lead the next
        /// reply will start with (grown after underruns, shrinking while the network is steady).
        public var leadMs: Int?
        public var nextLeadMs: Int?
        public var audioBytes: Int?
        /// Whether the backend saved the turn for the review.
        public var saved: Bool?
        public var firstAudioToSoundMs: Double?
        public var endToUploadMs: Double?
        public var roundTripMs: Double?
        /// Negative when the sound ran out before the stream's last event.
        public var streamEndToFinishedMs: Double?
        public var serverTimings: [String: Double]?

        public static func interrupted(turnId: String?, greeting: Bool) -> ReplyFinished {
            ReplyFinished(turnId: turnId, greeting: greeting, interrupted: true, complete: false, outcome: "interrupted")
        }

        public init(turnId: String?, greeting: Bool, interrupted: Bool, complete: Bool, outcome: String, playedS: Double? = nil,
                    underruns: Int? = nil, audioBytes: Int? = nil, saved: Bool? = nil) {
            self.turnId = turnId
            self.greeting = greeting
            self.interrupted = interrupted
            self.complete = complete
            self.outcome = outcome
            self.playedS = playedS
            self.underruns = underruns
            self.audioBytes = audioBytes
            self.saved = saved
        }
    }

    public struct GreetingFailed: ProtocolEvent {
        public static let name = "greeting.failed"
        public static let topic = EventTopic.session
        public static let summary = "The greeting could not be fetched; the session goes on in `ready`."
        public var message: String

        public init(message: String) {
            self.message = message
        }
    }

    public struct GreetingUnanswered: ProtocolEvent {
        public static let name = "greeting.unanswered"
        public static let topic = EventTopic.session
        public static let summary = "The greeting came without an answer (`outcome`)."
        public var outcome: ReplyOutcome
        public var hint: String

        public init(outcome: ReplyOutcome, hint: String) {
            self.outcome = outcome
            self.hint = hint
        }
    }
}
