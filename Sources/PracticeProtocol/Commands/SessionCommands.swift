import FoundationEssentials
import Glibc

// Answered by the session: the conversation, its turns, the review, the spool, the learner's data.

extension Command {
    public enum SessionStart: ControlCommand {
        public static let name = "session.start"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.idle, .completed, .failed]
        public static let needsDevices = true
        public static let hearsLearner = true
        public static let summary = "Starts a session (closing one in progress); answers when the backend created it, and the greeting follows."
        public struct Arguments: Codable, Sendable {
            /// `conversation` (the default) or `review`.
            public var mode: SessionMode?
            /// Required in conversation mode; ignored in review mode.
            public var topicId: String?

            public init(mode: SessionMode? = nil, topicId: String? = nil) {
                self.mode = mode
                self.topicId = topicId
            }
        }
        public typealias Result = SessionState
    }

    public enum SessionEnd: ControlCommand {
        public static let name = "session.end"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.ready]
        public static let summary = "Ends the talk; in conversation mode the review is generated and polled next."
        public typealias Arguments = NoArguments
        public struct Result: Codable, Sendable {
            /// The server's word for the session (active, reviewing, completing, … or a new one).
            public var status: SessionStatus
            public var mode: SessionMode

            public init(status: SessionStatus, mode: SessionMode) {
                self.status = status
                self.mode = mode
            }
        }
    }

    public enum SessionClose: ControlCommand {
        public static let name = "session.close"
        public static let route = CommandRoute.session
        public static let summary = "Leaves the session at once, whatever its stage; what is in flight is dropped (spooled turns stay)."
        public typealias Arguments = NoArguments
        public typealias Result = SessionState
    }

    public enum SessionGet: ControlCommand {
        public static let name = "session.get"
        public static let route = CommandRoute.session
        public static let summary = "The session's state."
        public typealias Arguments = NoArguments
        public typealias Result = SessionState
    }

    /// The stage a turn command left the session in.
    public struct StageResult: Codable, Sendable {
        public var stage: SessionStage

        public init(stage: SessionStage) {
            self.stage = stage
        }
    }

    public enum TurnStart: ControlCommand {
        public static let name = "turn.start"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.ready, .greeting, .replying]
        public static let needsDevices = true
        public static let hearsLearner = true
        public static let summary = "Push-to-talk: starts recording a turn (stopping a reply that plays)."
        public typealias Arguments = NoArguments
        public typealias Result = StageResult
    }

    public enum Listen: ControlCommand {
        public static let name = "listen"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.ready, .greeting, .replying]
        public static let needsDevices = true
        public static let hearsLearner = true
        public static let summary = "Hands-free: the recorder waits for speech and ends the turn on silence."
        public typealias Arguments = NoArguments
        public typealias Result = StageResult
    }

    public enum TurnStop: ControlCommand {
        public static let name = "turn.stop"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.recording, .listening]
        public static let summary = "Ends the turn being recorded; it is spooled and sent."
        public typealias Arguments = NoArguments
        public typealias Result = StageResult
    }

    public enum TurnCancel: ControlCommand {
        public static let name = "turn.cancel"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.recording, .listening]
        public static let summary = "Drops the turn being recorded."
        public typealias Arguments = NoArguments
        public typealias Result = StageResult
    }

    public enum Say: ControlCommand {
        public static let name = "say"
        public static let route = CommandRoute.session
        public static let beginsVisit = true
        public static let stages: Set<SessionStage>? = [.ready]
        public static let needsDevices = true
        public static let summary = "A typed turn (1 to 4,000 bytes of text) instead of a spoken one."
        public struct Arguments: Codable, Sendable {
            public var text: String

            public init(text: String) {
                self.text = text
            }
        }
        public typealias Result = StageResult
    }

    public enum ReviewGet: ControlCommand {
        public static let name = "review.get"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.reviewing, .reviewed, .finishing, .completed]
        public static let summary = "The session's review from the backend; offline, the last one read (`stale`)."
        public typealias Arguments = NoArguments
        public struct Result: Codable, Sendable {
            public var review: Review
            public var stale: Bool
            public var error: String?

            public init(review: Review, stale: Bool, error: String? = nil) {
                self.review = review
                self.stale = stale
                self.error = error
            }
        }
    }

    public enum CorrectionAsk: ControlCommand {
        public static let name = "correction.ask"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.reviewed, .completed]
        public static let summary = "Asks the tutor about one segment of the review; answers with the correction."
        public struct Arguments: Codable, Sendable {
            public var segmentId: Int
            public var message: String

            public init(segmentId: Int, message: String) {
                self.segmentId = segmentId
                self.message = message
            }
        }
        public typealias Result = Correction
    }

    public enum ReviewFinish: ControlCommand {
        public static let name = "review.finish"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.reviewed]
        public static let summary = "Finishes the review: the summary is generated and polled (`session.completed`)."
        public typealias Arguments = NoArguments
        public struct Result: Codable, Sendable {
            /// The server's word for the session.
            public var status: SessionStatus
            /// `already completed` when the server had completed the session before.
            public var note: String?

            public init(status: SessionStatus, note: String? = nil) {
                self.status = status
                self.note = note
            }
        }
    }

    public enum SpoolList: ControlCommand {
        public static let name = "spool.list"
        public static let route = CommandRoute.daemon
        public static let summary = "What the spool holds: the conversation's turns, cue answers, and what was set aside in its quarantine folder."
        public typealias Arguments = NoArguments
        public struct Result: Codable, Sendable {
            public var turns: [SpoolEntry]
            public var dir: String
            /// Cue answers waiting for upload (Chatterbox).
            public var answers: [CueSpoolEntry]
            /// Turns and answers that could not be sent (unreadable, damaged): kept, never sent.
            public var setAside: [SpoolSetAside]

            public init(turns: [SpoolEntry], dir: String, answers: [CueSpoolEntry], setAside: [SpoolSetAside]) {
                self.turns = turns
                self.dir = dir
                self.answers = answers
                self.setAside = setAside
            }
        }
    }

    /// The argument of the spool commands.
    public struct SpoolTurn: Codable, Sendable {
        public var turnId: String

        public init(turnId: String) {
            self.turnId = turnId
        }
    }

    public enum SpoolRetry: ControlCommand {
        public static let name = "spool.retry"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.idle, .ready]
        public static let summary = "Sends a spooled turn again (resuming its session when none is open)."
        public typealias Arguments = SpoolTurn
        public struct Result: Codable, Sendable {
            public var turnId: String
            public var stage: SessionStage

            public init(turnId: String, stage: SessionStage) {
                self.turnId = turnId
                self.stage = stage
            }
        }
    }

    public enum SpoolDiscard: ControlCommand {
        public static let name = "spool.discard"
        public static let route = CommandRoute.session
        public static let summary = "Deletes a spooled turn (not the one being sent)."
        public typealias Arguments = SpoolTurn
        public struct Result: Codable, Sendable {
            public var discarded: String

            public init(discarded: String) {
                self.discarded = discarded
            }
        }
    }

    public enum Topics: ControlCommand {
        public static let name = "topics"
        public static let route = CommandRoute.session
        public static let summary = "The conversation topics; offline, the last list read (`stale`, `age_s`)."
        public typealias Arguments = NoArguments
        public struct Result: Codable, Sendable {
            public var topics: [Topic]
            public var stale: Bool
            public var ageS: Double?
            public var error: String?

            public init(topics: [Topic], stale: Bool, ageS: Double? = nil, error: String? = nil) {
                self.topics = topics
                self.stale = stale
                self.ageS = ageS
                self.error = error
            }
        }
    }

    public enum Profile: ControlCommand {
        public static let name = "profile"
        public static let route = CommandRoute.session
        public static let summary = "The learner's profile (`get`, offline: the last one read), a new evaluation, or a new learning goal."
        public enum Action: String, Codable, Sendable, CaseIterable, WireEnumerable {
            case get, evaluate
            case learningGoal = "learning_goal"
        }
        public struct Arguments: Codable, Sendable {
            /// `get` (the default), `evaluate` or `learning_goal`.
            public var action: Action?
            public var learningGoal: String?

            public init(action: Action? = nil, learningGoal: String? = nil) {
                self.action = action
                self.learningGoal = learningGoal
            }
        }
        public struct Result: Codable, Sendable {
            public var profile: UserProfile
            public var stale: Bool
            public var ageS: Double?
            public var error: String?

            public init(profile: UserProfile, stale: Bool, ageS: Double? = nil, error: String? = nil) {
                self.profile = profile
                self.stale = stale
                self.ageS = ageS
                self.error = error
            }
        }
    }
}
