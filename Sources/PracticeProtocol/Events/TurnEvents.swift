import FoundationEssentials
import Glibc

// A turn from the microphone to the backend, and the spool (topic `session`).

extension Event {
    public struct TurnStarted: ProtocolEvent {
        public static let name = "turn.started"
        public static let topic = EventTopic.session
        public static let summary = "Recording began: `push_to_talk` (`turn.start`), `hands_free` (`listen`), or `voice_barge_in` (the learner spoke over the tutor on an echo-cancelled microphone: the reply was stopped, the turn records like `hands_free`)."
        public enum Mode: String, Codable, Sendable, CaseIterable, WireEnumerable {
            case pushToTalk = "push_to_talk"
            case handsFree = "hands_free"
            case voiceBargeIn = "voice_barge_in"
        }
        public var mode: Mode

        public init(mode: Mode) {
            self.mode = mode
        }
    }

    public struct TurnRecorded: ProtocolEvent {
        public static let name = "turn.recorded"
        public static let topic = EventTopic.session
        public static let summary = "The recorder ended the turn (`end_reason`: released, endOfSpeech, maximumLength, finished, pause_ceiling, or background_speech, a turn then discarded; `finished_probability`: smart-turn's last answer, when it was asked; `end_wait_ms`: for a hands-free turn that ended by itself at a pause, how long after the learner's last word)."
        public var durationS: Double
        public var speechS: Double
        public var rms: Double
        public var endReason: TurnEndReason
        public var finishedProbability: Double?
        public var endWaitMs: Int?

        public init(durationS: Double, speechS: Double, rms: Double, endReason: TurnEndReason, finishedProbability: Double? = nil,
                    endWaitMs: Int? = nil) {
            self.durationS = durationS
            self.speechS = speechS
            self.rms = rms
            self.endReason = endReason
            self.finishedProbability = finishedProbability
            self.endWaitMs = endWaitMs
        }
    }

    public struct TurnDiscarded: ProtocolEvent {
        public static let name = "turn.discarded"
        public static let topic = EventTopic.session
        public static let summary = "The turn ends without being sent: `no_speech` (below the RMS gate, no speech by Silero, or only the room's: `background_speech`), `cancelled`, or `device_error` (with `message`)."
        public enum Reason: String, Codable, Sendable, CaseIterable, WireEnumerable {
            case noSpeech = "no_speech"
            case cancelled
            case deviceError = "device_error"
        }
        public var reason: Reason
        /// The turn's RMS, for `no_speech` after a recording.
        public var rms: Double?
        public var message: String?

        public init(reason: Reason, rms: Double? = nil, message: String? = nil) {
            self.reason = reason
            self.rms = rms
            self.message = message
        }
    }

    public struct TurnSpooled: ProtocolEvent {
        public static let name = "turn.spooled"
        public static let topic = EventTopic.session
        public static let summary = "The turn's WAV is on disk (fsynced). Its upload does not wait for the disk: it goes out from memory at once, and this comes when the write is durable, before the turn's `turn.accepted`, `turn.rejected` or `turn.pending`."
        public var turnId: String
        public var bytes: Int

        public init(turnId: String, bytes: Int) {
            self.turnId = turnId
            self.bytes = bytes
        }
    }

    public struct TurnSpoolFailed: ProtocolEvent {
        public static let name = "turn.spool_failed"
        public static let topic = EventTopic.session
        public static let summary = "The turn could not be written to the spool; it is sent from memory."
        public var turnId: String
        public var message: String

        public init(turnId: String, message: String) {
            self.turnId = turnId
            self.message = message
        }
    }

    public struct TurnUploading: ProtocolEvent {
        public static let name = "turn.uploading"
        public static let topic = EventTopic.session
        public static let summary = "An upload of the turn begins (attempt 1, or a retry)."
        public var turnId: String
        public var bytes: Int
        public var attempt: Int

        public init(turnId: String, bytes: Int, attempt: Int) {
            self.turnId = turnId
            self.bytes = bytes
            self.attempt = attempt
        }
    }

    public struct TurnUpload: ProtocolEvent {
        public static let name = "turn.upload"
        public static let topic = EventTopic.session
        public static let summary = "Upload progress in bytes."
        public var turnId: String?
        public var sent: Int
        public var total: Int

        public init(turnId: String? = nil, sent: Int, total: Int) {
            self.turnId = turnId
            self.sent = sent
            self.total = total
        }
    }

    public struct TurnAccepted: ProtocolEvent {
        public static let name = "turn.accepted"
        public static let topic = EventTopic.session
        public static let summary = "The backend took the turn: it leaves the spool and is never sent again."
        public var turnId: String
        public var attempt: Int

        public init(turnId: String, attempt: Int) {
            self.turnId = turnId
            self.attempt = attempt
        }
    }

    public struct TurnRetrying: ProtocolEvent {
        public static let name = "turn.retrying"
        public static let topic = EventTopic.session
        public static let summary = "The backend could not take the turn; it is sent again after `delay_s`."
        public var turnId: String
        public var attempt: Int
        public var delayS: Double
        public var message: String

        public init(turnId: String, attempt: Int, delayS: Double, message: String) {
            self.turnId = turnId
            self.attempt = attempt
            self.delayS = delayS
            self.message = message
        }
    }

    public struct TurnPending: ProtocolEvent {
        public static let name = "turn.pending"
        public static let topic = EventTopic.session
        public static let summary = "The turn was not delivered and waits in the spool (`reason`: undelivered, session_gone, interrupted); `spool.retry` sends it."
        public enum Reason: String, Codable, Sendable, CaseIterable, WireEnumerable {
            case undelivered
            case sessionGone = "session_gone"
            case interrupted
        }
        public var turnId: String
        public var reason: Reason
        public var message: String
        /// Attempts made, for `undelivered`.
        public var attempts: Int?

        public init(turnId: String, reason: Reason, message: String, attempts: Int? = nil) {
            self.turnId = turnId
            self.reason = reason
            self.message = message
            self.attempts = attempts
        }
    }

    public struct TurnRejected: ProtocolEvent {
        public static let name = "turn.rejected"
        public static let topic = EventTopic.session
        public static let summary = "The backend refused the turn (a 4xx): it is removed from the spool, sending it again cannot help."
        public var turnId: String
        public var message: String

        public init(turnId: String, message: String) {
            self.turnId = turnId
            self.message = message
        }
    }

    public struct TurnFailed: ProtocolEvent {
        public static let name = "turn.failed"
        public static let topic = EventTopic.session
        public static let summary = "A typed turn (`say`) failed before an answer."
        public var message: String
        public var retryable: Bool

        public init(message: String, retryable: Bool) {
            self.message = message
            self.retryable = retryable
        }
    }

    public struct TurnUnanswered: ProtocolEvent {
        public static let name = "turn.unanswered"
        public static let topic = EventTopic.session
        public static let summary = "The backend answered the turn without an answer (`outcome`, see docs/sessions.md); told, never hidden."
        public var turnId: String?
        public var outcome: ReplyOutcome
        public var hint: String
        public var afterInterruption: Bool
        public var transcript: String?

        public init(turnId: String? = nil, outcome: ReplyOutcome, hint: String, afterInterruption: Bool, transcript: String? = nil) {
            self.turnId = turnId
            self.outcome = outcome
            self.hint = hint
            self.afterInterruption = afterInterruption
            self.transcript = transcript
        }
    }

    public struct SpoolRecovered: ProtocolEvent {
        public static let name = "spool.recovered"
        public static let topic = EventTopic.session
        public static let summary = "At start: turns an earlier run left in the spool."
        public var turns: [SpoolEntry]

        public init(turns: [SpoolEntry]) {
            self.turns = turns
        }
    }

    public struct SpoolItemSetAside: ProtocolEvent {
        public static let name = "spool.set_aside"
        public static let topic = EventTopic.session
        public static let summary = "A spooled turn or cue answer that cannot be sent (its record unreadable, its audio damaged) was moved to the spool's quarantine folder, not deleted."
        public var kind: SpoolSetAside.Kind
        public var id: String
        public var reason: String
        public var path: String

        public init(_ entry: SpoolSetAside) {
            kind = entry.kind
            id = entry.id
            reason = entry.reason
            path = entry.path
        }
    }

    public struct SpoolDiscarded: ProtocolEvent {
        public static let name = "spool.discarded"
        public static let topic = EventTopic.session
        public static let summary = "A client discarded a spooled turn (`spool.discard`)."
        public var turnId: String

        public init(turnId: String) {
            self.turnId = turnId
        }
    }
}
