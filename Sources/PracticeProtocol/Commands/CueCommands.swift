import FoundationEssentials

// Answered by cue practice (backend.kind = chatterbox): sign-in, the learner, cue cards,
// recorded answers, their transcripts and evaluations.

extension Command {
    public enum SignInRequestCode: ControlCommand {
        public static let name = "signin.request_code"
        public static let route = CommandRoute.cue
        public static let beginsVisit = true
        public static let summary = "Mails the learner a 6-digit sign-in code (then `signin.code`)."
        public struct Arguments: Codable, Sendable {
            public var email: String

            public init(email: String) {
                self.email = email
            }
        }
        public struct Result: Codable, Sendable {
            public var sent: Bool

            public init(sent: Bool) {
                self.sent = sent
            }
        }
    }

    public enum SignInCode: ControlCommand {
        public static let name = "signin.code"
        public static let route = CommandRoute.cue
        public static let beginsVisit = true
        public static let summary = "Signs in with the code the learner typed; a wrong one is `refused` with reason `invalid_login_code`."
        public struct Arguments: Codable, Sendable {
            public var email: String
            public var code: String

            public init(email: String, code: String) {
                self.email = email
                self.code = code
            }
        }
        public typealias Result = LearnerState
    }

    public enum SignInRequestLink: ControlCommand {
        public static let name = "signin.request_link"
        public static let route = CommandRoute.cue
        public static let beginsVisit = true
        public static let summary = "Mails the learner a magic link, for deployments whose link hands its token to the kiosk (then `signin.link`)."
        public struct Arguments: Codable, Sendable {
            public var email: String

            public init(email: String) {
                self.email = email
            }
        }
        public typealias Result = SignInRequestCode.Result
    }

    public enum SignInLink: ControlCommand {
        public static let name = "signin.link"
        public static let route = CommandRoute.cue
        public static let beginsVisit = true
        public static let summary = "Signs in with a magic link's token (single use: `invalid_magic_link` the second time)."
        public struct Arguments: Codable, Sendable {
            /// The `token=` of the mailed link.
            public var token: String

            public init(token: String) {
                self.token = token
            }
        }
        public typealias Result = LearnerState
    }

    public enum SignOut: ControlCommand {
        public static let name = "signout"
        public static let route = CommandRoute.cue
        public static let summary = "Forgets the learner's tokens; recordings not yet uploaded stay spooled for the next sign-in."
        public typealias Arguments = NoArguments
        public typealias Result = LearnerState
    }

    public enum LearnerGet: ControlCommand {
        public static let name = "learner.get"
        public static let route = CommandRoute.cue
        public static let summary = "The learner: signed in or not, account, profile, language, the languages on offer."
        public typealias Arguments = NoArguments
        public typealias Result = LearnerState
    }

    public enum LearnerLanguage: ControlCommand {
        public static let name = "learner.language"
        public static let route = CommandRoute.cue
        public static let summary = "Chooses the language the learner practises (one of `languages`): its profile becomes the active one."
        public struct Arguments: Codable, Sendable {
            public var language: String

            public init(language: String) {
                self.language = language
            }
        }
        public typealias Result = LearnerState
    }

    public enum CuesGet: ControlCommand {
        public static let name = "cues.get"
        public static let route = CommandRoute.cue
        public static let summary = "The current cue cards (`shuffle`: a new batch); offline, the last batch kept, marked stale."
        public struct Arguments: Codable, Sendable {
            public var shuffle: Bool?

            public init(shuffle: Bool? = nil) {
                self.shuffle = shuffle
            }
        }
        public struct Result: Codable, Sendable {
            public var cues: [CueCard]
            public var stale: Bool
            public var ageS: Double?
            public var error: String?

            public init(cues: [CueCard], stale: Bool, ageS: Double? = nil, error: String? = nil) {
                self.cues = cues
                self.stale = stale
                self.ageS = ageS
                self.error = error
            }
        }
    }

    public enum CueGet: ControlCommand {
        public static let name = "cue.get"
        public static let route = CommandRoute.cue
        public static let summary = "One cue card with the learner's recordings of it (the phone app's too); offline, the last answer kept."
        public struct Arguments: Codable, Sendable {
            public var cueId: Int

            public init(cueId: Int) {
                self.cueId = cueId
            }
        }
        public struct Result: Codable, Sendable {
            public var cue: CueCard
            public var recordings: [CueRecording]
            public var stale: Bool
            public var ageS: Double?
            public var error: String?

            public init(cue: CueCard, recordings: [CueRecording], stale: Bool, ageS: Double? = nil, error: String? = nil) {
                self.cue = cue
                self.recordings = recordings
                self.stale = stale
                self.ageS = ageS
                self.error = error
            }
        }
    }

    public enum CueRecord: ControlCommand {
        public static let name = "cue.record"
        public static let route = CommandRoute.cue
        public static let needsDevices = true
        public static let hearsLearner = true
        public static let summary = "Records an answer to a cue: push-to-talk (end with `cue.stop`) or hands-free (`hands_free`: ends on silence)."
        public struct Arguments: Codable, Sendable {
            public var cueId: Int
            public var handsFree: Bool?

            public init(cueId: Int, handsFree: Bool? = nil) {
                self.cueId = cueId
                self.handsFree = handsFree
            }
        }
        public typealias Result = CuePracticeState
    }

    public enum CueStop: ControlCommand {
        public static let name = "cue.stop"
        public static let route = CommandRoute.cue
        public static let summary = "Ends the answer being recorded; it is spooled, encoded as AAC-LC and uploaded."
        public typealias Arguments = NoArguments
        public typealias Result = CuePracticeState
    }

    public enum CueCancel: ControlCommand {
        public static let name = "cue.cancel"
        public static let route = CommandRoute.cue
        public static let summary = "Drops the answer being recorded."
        public typealias Arguments = NoArguments
        public typealias Result = CuePracticeState
    }

    public enum CueHistory: ControlCommand {
        public static let name = "cue.history"
        public static let route = CommandRoute.cue
        public static let summary = "The learner's recordings, newest first (at most `limit`, 20 by default), with their results."
        public struct Arguments: Codable, Sendable {
            public var limit: Int?

            public init(limit: Int? = nil) {
                self.limit = limit
            }
        }
        public struct Result: Codable, Sendable {
            public var recordings: [CueRecording]
            /// Recordings the backend holds beyond `limit`.
            public var more: Int

            public init(recordings: [CueRecording], more: Int) {
                self.recordings = recordings
                self.more = more
            }
        }
    }

    public enum CueResults: ControlCommand {
        public static let name = "cue.results"
        public static let route = CommandRoute.cue
        public static let summary = "Asks again for a recording's transcript and evaluation (after `cue.results_failed`, or for one from the phone); events follow."
        public struct Arguments: Codable, Sendable {
            public var recordingId: Int

            public init(recordingId: Int) {
                self.recordingId = recordingId
            }
        }
        public typealias Result = CueRecording
    }

    public enum CueDiscard: ControlCommand {
        public static let name = "cue.discard"
        public static let route = CommandRoute.cue
        public static let summary = "Deletes a spooled cue answer that is not being uploaded (a refused one, or one not to be sent); `spool.list` names them."
        public struct Arguments: Codable, Sendable {
            public var answerId: String

            public init(answerId: String) {
                self.answerId = answerId
            }
        }
        public struct Result: Codable, Sendable {
            public var discarded: String

            public init(discarded: String) {
                self.discarded = discarded
            }
        }
    }

    public enum CuePlay: ControlCommand {
        public static let name = "cue.play"
        public static let route = CommandRoute.cue
        public static let needsDevices = true
        public static let summary = "Plays a recording through the kiosk's speaker (downloaded from the backend: the kiosk's or the phone's AAC-LC), at `rate` (0.5 to 2.0, 1.0 by default; the same pitch)."
        public struct Arguments: Codable, Sendable {
            public var recordingId: Int
            public var rate: Double?

            public init(recordingId: Int, rate: Double? = nil) {
                self.recordingId = recordingId
                self.rate = rate
            }
        }
        public struct Result: Codable, Sendable {
            public var recordingId: Int
            /// How long it plays at its rate.
            public var durationS: Double
            public var rate: Double

            public init(recordingId: Int, durationS: Double, rate: Double = 1) {
                self.recordingId = recordingId
                self.durationS = durationS
                self.rate = rate
            }
        }
    }
}
