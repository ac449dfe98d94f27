import FoundationEssentials

// Cue practice (topic `cue`): sign-in, an answer's walk from the microphone to the backend,
// its transcript and evaluation.

extension Event {
    public struct SignInChanged: ProtocolEvent {
        public static let name = "signin.changed"
        public static let topic = EventTopic.cue
        public static let summary = "Signed in or out; `reason` says why sign-in is needed (a refused refresh, a second 401, signed out)."
        public var learner: LearnerState
        public var reason: String?

        public init(learner: LearnerState, reason: String? = nil) {
            self.learner = learner
            self.reason = reason
        }
    }

    public struct CueRecordingStarted: ProtocolEvent {
        public static let name = "cue.recording"
        public static let topic = EventTopic.cue
        public static let summary = "Recording an answer to `cue_id` started (`hands_free`: waiting for speech first)."
        public var cueId: Int
        public var handsFree: Bool

        public init(cueId: Int, handsFree: Bool) {
            self.cueId = cueId
            self.handsFree = handsFree
        }
    }

    public struct CueRecorded: ProtocolEvent {
        public static let name = "cue.recorded"
        public static let topic = EventTopic.cue
        public static let summary = "The recorder ended the answer (`end_reason`: released, endOfSpeech or maximumLength)."
        public var cueId: Int
        public var durationS: Double
        public var speechS: Double
        public var rms: Double
        public var endReason: TurnEndReason

        public init(cueId: Int, durationS: Double, speechS: Double, rms: Double, endReason: TurnEndReason) {
            self.cueId = cueId
            self.durationS = durationS
            self.speechS = speechS
            self.rms = rms
            self.endReason = endReason
        }
    }

    public struct CueDiscarded: ProtocolEvent {
        public static let name = "cue.discarded"
        public static let topic = EventTopic.cue
        public static let summary = "The answer ends without being kept: `no_speech` (below the RMS gate), `cancelled`, `device_error`."
        public var cueId: Int
        public var reason: TurnDiscarded.Reason
        public var rms: Double?
        public var message: String?

        public init(cueId: Int, reason: TurnDiscarded.Reason, rms: Double? = nil, message: String? = nil) {
            self.cueId = cueId
            self.reason = reason
            self.rms = rms
            self.message = message
        }
    }

    public struct CueAnswerDiscarded: ProtocolEvent {
        public static let name = "cue.answer_discarded"
        public static let topic = EventTopic.cue
        public static let summary = "A client discarded a spooled answer (`cue.discard`): it is deleted and never uploaded."
        public var answerId: String
        public var cueId: Int

        public init(answerId: String, cueId: Int) {
            self.answerId = answerId
            self.cueId = cueId
        }
    }

    public struct CueSpooled: ProtocolEvent {
        public static let name = "cue.spooled"
        public static let topic = EventTopic.cue
        public static let summary = "The answer is on disk as AAC-LC in MPEG-4 (`answer_id`), safe from a restart or an outage, and goes up next."
        public var answerId: String
        public var cueId: Int
        public var bytes: Int
        public var durationS: Double

        public init(answerId: String, cueId: Int, bytes: Int, durationS: Double) {
            self.answerId = answerId
            self.cueId = cueId
            self.bytes = bytes
            self.durationS = durationS
        }
    }

    public struct CueSpoolFailed: ProtocolEvent {
        public static let name = "cue.spool_failed"
        public static let topic = EventTopic.cue
        public static let summary = "The answer could not be kept on disk (encoding or the disk): it is lost, and says why."
        public var cueId: Int
        public var message: String

        public init(cueId: Int, message: String) {
            self.cueId = cueId
            self.message = message
        }
    }

    public struct CueUploadStep: ProtocolEvent {
        public static let name = "cue.upload"
        public static let topic = EventTopic.cue
        public static let summary = "An answer's upload moved on: `intent`, `put`, `complete`, `found` (its recording on the backend)."
        public enum Step: String, Codable, Sendable, CaseIterable, WireEnumerable {
            case intent, put, complete, found
        }
        public var answerId: String
        public var cueId: Int
        public var step: Step

        public init(answerId: String, cueId: Int, step: Step) {
            self.answerId = answerId
            self.cueId = cueId
            self.step = step
        }
    }

    public struct CueUploaded: ProtocolEvent {
        public static let name = "cue.uploaded"
        public static let topic = EventTopic.cue
        public static let summary = "The answer is the backend's recording `recording_id`; the spooled copy is removed, results are asked for."
        public var answerId: String
        public var cueId: Int
        public var recordingId: Int

        public init(answerId: String, cueId: Int, recordingId: Int) {
            self.answerId = answerId
            self.cueId = cueId
            self.recordingId = recordingId
        }
    }

    public struct CueUploadRetrying: ProtocolEvent {
        public static let name = "cue.upload_retrying"
        public static let topic = EventTopic.cue
        public static let summary = "The upload failed for now (backend, network, a 409); it is tried again after `delay_s`, the answer stays spooled."
        public var answerId: String
        public var attempt: Int
        public var delayS: Double
        public var error: String

        public init(answerId: String, attempt: Int, delayS: Double, error: String) {
            self.answerId = answerId
            self.attempt = attempt
            self.delayS = delayS
            self.error = error
        }
    }

    public struct CueUploadFailed: ProtocolEvent {
        public static let name = "cue.upload_failed"
        public static let topic = EventTopic.cue
        public static let summary = "The backend refused the answer (`reason`: its hint or code), or sign-in is needed; it stays spooled for the next start or sign-in."
        public var answerId: String
        public var cueId: Int
        public var reason: String?
        public var error: String

        public init(answerId: String, cueId: Int, reason: String? = nil, error: String) {
            self.answerId = answerId
            self.cueId = cueId
            self.reason = reason
            self.error = error
        }
    }

    public struct CueTranscript: ProtocolEvent {
        public static let name = "cue.transcript"
        public static let topic = EventTopic.cue
        public static let summary = "A recording's transcript moved on (`processing`, `ready` with `transcript`)."
        public var recordingId: Int
        public var status: CueResultStatus
        public var transcript: String?

        public init(recordingId: Int, status: CueResultStatus, transcript: String? = nil) {
            self.recordingId = recordingId
            self.status = status
            self.transcript = transcript
        }
    }

    public struct CueEvaluation: ProtocolEvent {
        public static let name = "cue.evaluation"
        public static let topic = EventTopic.cue
        public static let summary = "A recording's evaluation moved on (`processing`, `ready` with the whole `evaluation`)."
        public var recordingId: Int
        public var status: CueResultStatus
        public var evaluation: ChatterboxEvaluation?

        public init(recordingId: Int, status: CueResultStatus, evaluation: ChatterboxEvaluation? = nil) {
            self.recordingId = recordingId
            self.status = status
            self.evaluation = evaluation
        }
    }

    public struct CueResultsFailed: ProtocolEvent {
        public static let name = "cue.results_failed"
        public static let topic = EventTopic.cue
        public static let summary = "The transcript or evaluation fell back to `none` after `attempts` requests (or never came): `cue.results` asks again."
        public enum Step: String, Codable, Sendable, CaseIterable, WireEnumerable {
            case transcription, evaluation
        }
        public var recordingId: Int
        public var step: Step
        public var attempts: Int
        public var error: String?

        public init(recordingId: Int, step: Step, attempts: Int, error: String? = nil) {
            self.recordingId = recordingId
            self.step = step
            self.attempts = attempts
            self.error = error
        }
    }
}
