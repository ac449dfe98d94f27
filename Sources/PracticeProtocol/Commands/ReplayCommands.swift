import FoundationEssentials

// Hearing the tutor again, slower (issue 69): the last reply replayed from memory, and the
// rate every reply plays at.

extension Command {
    /// A playback rate as a command carries it: 0.5 (twice as long) to 2.0, at the same pitch.
    public static let playbackRates: ClosedRange<Double> = 0.5...2.0

    public enum ReplyReplay: ControlCommand {
        public static let name = "reply.replay"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.ready, .listening]
        public static let needsDevices = true
        public static let summary = "Plays the session's last reply (the greeting included) again from memory, at `rate` (0.5 to 2.0; `playback.rate`'s by default), at the same pitch; `reply.replaying` and `reply.replay_finished` follow."
        public struct Arguments: Codable, Sendable {
            public var rate: Double?

            public init(rate: Double? = nil) {
                self.rate = rate
            }
        }
        public struct Result: Codable, Sendable {
            public var rate: Double
            /// How long the replay lasts at its rate.
            public var durationS: Double
            /// The reply's turn (null for the greeting).
            public var turnId: String?
            public var greeting: Bool
            /// The player's number for the replay: `reply.replay_finished` carries it.
            public var sound: Int

            public init(rate: Double, durationS: Double, turnId: String? = nil, greeting: Bool, sound: Int) {
                self.rate = rate
                self.durationS = durationS
                self.turnId = turnId
                self.greeting = greeting
                self.sound = sound
            }
        }
    }

    public enum TurnReplay: ControlCommand {
        public static let name = "turn.replay"
        public static let route = CommandRoute.session
        public static let stages: Set<SessionStage>? = [.ready, .listening]
        public static let needsDevices = true
        public static let summary = "Plays the learner's own turn of this session (`turn_id`, the last one sent by default) as it was sent, from memory or the spool, at `rate` (0.5 to 2.0; 1.0 by default), at the same pitch; `turn.replaying` and `turn.replay_finished` follow."
        public struct Arguments: Codable, Sendable {
            public var turnId: String?
            public var rate: Double?

            public init(turnId: String? = nil, rate: Double? = nil) {
                self.turnId = turnId
                self.rate = rate
            }
        }
        public struct Result: Codable, Sendable {
            public var rate: Double
            public var durationS: Double
            public var turnId: String
            /// The player's number for it: `turn.replay_finished` carries it.
            public var sound: Int

            public init(rate: Double, durationS: Double, turnId: String, sound: Int) {
                self.rate = rate
                self.durationS = durationS
                self.turnId = turnId
                self.sound = sound
            }
        }
    }

    public enum PlaybackRate: ControlCommand {
        public static let name = "playback.rate"
        public static let route = CommandRoute.daemon
        public static let summary = "The rate replies play at (0.5 to 2.0, same pitch; 1.0 by default), from a streaming reply's next chunk on; `rate` omitted reads it. Kept for the visit: a new learner starts at 1.0. Told as `playback.rate_changed`."
        public struct Arguments: Codable, Sendable {
            public var rate: Double?

            public init(rate: Double? = nil) {
                self.rate = rate
            }
        }
        public struct Result: Codable, Sendable {
            public var rate: Double

            public init(rate: Double) {
                self.rate = rate
            }
        }
    }
}
