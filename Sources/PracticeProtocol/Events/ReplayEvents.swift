import FoundationEssentials

// A reply heard again (`reply.replay`), the learner's own turn heard (`turn.replay`), and
// the rate replies play at (issue 69).

extension Event {
    public struct ReplyReplaying: ProtocolEvent {
        public static let name = "reply.replaying"
        public static let topic = EventTopic.session
        public static let summary = "The last reply plays again at `rate`, for `duration_s` (`reply.replay`)."
        public var rate: Double
        public var durationS: Double
        public var turnId: String?
        public var greeting: Bool
        public var sound: Int

        public init(rate: Double, durationS: Double, turnId: String? = nil, greeting: Bool, sound: Int) {
            self.rate = rate
            self.durationS = durationS
            self.turnId = turnId
            self.greeting = greeting
            self.sound = sound
        }
    }

    public struct ReplyReplayFinished: ProtocolEvent {
        public static let name = "reply.replay_finished"
        public static let topic = EventTopic.session
        public static let summary = "The replay ended: played out, or `interrupted` (a barge-in, `playback.stop`, a new turn, another replay)."
        public var interrupted: Bool
        public var playedS: Double
        public var turnId: String?
        public var sound: Int

        public init(interrupted: Bool, playedS: Double, turnId: String? = nil, sound: Int) {
            self.interrupted = interrupted
            self.playedS = playedS
            self.turnId = turnId
            self.sound = sound
        }
    }

    public struct TurnReplaying: ProtocolEvent {
        public static let name = "turn.replaying"
        public static let topic = EventTopic.session
        public static let summary = "The learner's turn `turn_id` plays at `rate`, for `duration_s` (`turn.replay`)."
        public var rate: Double
        public var durationS: Double
        public var turnId: String
        public var sound: Int

        public init(rate: Double, durationS: Double, turnId: String, sound: Int) {
            self.rate = rate
            self.durationS = durationS
            self.turnId = turnId
            self.sound = sound
        }
    }

    public struct TurnReplayFinished: ProtocolEvent {
        public static let name = "turn.replay_finished"
        public static let topic = EventTopic.session
        public static let summary = "The learner's turn ended playing: played out, or `interrupted` (a barge-in, `playback.stop`, a new turn, another replay)."
        public var interrupted: Bool
        public var playedS: Double
        public var turnId: String
        public var sound: Int

        public init(interrupted: Bool, playedS: Double, turnId: String, sound: Int) {
            self.interrupted = interrupted
            self.playedS = playedS
            self.turnId = turnId
            self.sound = sound
        }
    }

    public struct PlaybackRateChanged: ProtocolEvent {
        public static let name = "playback.rate_changed"
        public static let topic = EventTopic.playback
        public static let summary = "The rate replies play at changed (`playback.rate`, or back to 1.0 as a visit ended)."
        public var rate: Double

        public init(rate: Double) {
            self.rate = rate
        }
    }
}
