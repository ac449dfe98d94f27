import FoundationEssentials
import Glibc

// Answered by the daemon: health, devices, sounds, configuration, metrics.

extension Command {
    public enum Ping: ControlCommand {
        public static let name = "ping"
        public static let route = CommandRoute.daemon
        public static let summary = "Answers at once: the daemon is alive and serving."
        public typealias Arguments = NoArguments
        public struct Result: Codable, Sendable {
            public var pong: Bool
            public var uptimeS: Double

            public init(pong: Bool, uptimeS: Double) {
                self.pong = pong
                self.uptimeS = uptimeS
            }
        }
    }

    public enum Status: ControlCommand {
        public static let name = "status"
        public static let route = CommandRoute.daemon
        public static let summary = "The daemon, its backend (checked when the last check is over 10 s old), devices, session and clients."
        public typealias Arguments = NoArguments
        public typealias Result = DaemonStatus
    }

    public enum Devices: ControlCommand {
        public static let name = "devices"
        public static let route = CommandRoute.daemon
        public static let summary = "The capture and playback devices ALSA and PulseAudio offer."
        public typealias Arguments = NoArguments
        public struct Result: Codable, Sendable {
            public var capture: [Device]
            public var playback: [Device]
            /// Sound systems that could not be asked.
            public var errors: [String]

            public init(capture: [Device], playback: [Device], errors: [String]) {
                self.capture = capture
                self.playback = playback
                self.errors = errors
            }
        }
        public struct Device: Codable, Sendable {
            /// A device URI for `audio.capture` or `audio.playback`.
            public var name: String
            public var description: String

            public init(name: String, description: String) {
                self.name = name
                self.description = description
            }
        }
    }

    public enum Play: ControlCommand {
        public static let name = "play"
        public static let route = CommandRoute.daemon
        public static let needsDevices = true
        public static let summary = "Plays a WAV file the client may read (8-192 kHz, 1-8 channels, 8-bit unsigned, 16/24/32-bit integer, float, A-law or µ-law; see docs/protocol.md for what is refused); while a reply plays only with `mix: true`, which mixes it over the reply."
        public struct Arguments: Codable, Sendable {
            /// An absolute path.
            public var path: String
            /// Mix the clip over whatever plays (a reply, another sound) instead of taking the speaker.
            public var mix: Bool?

            public init(path: String, mix: Bool? = nil) {
                self.path = path
                self.mix = mix
            }
        }
        public struct Result: Codable, Sendable {
            public var path: String
            public var durationS: Double
            /// The clip's number in its `playback.*` events (with `mixed`): a client waits
            /// for this clip's `playback.finished`, not another sound's.
            public var sound: Int
            public var mixed: Bool

            public init(path: String, durationS: Double, sound: Int, mixed: Bool) {
                self.path = path
                self.durationS = durationS
                self.sound = sound
                self.mixed = mixed
            }
        }
    }

    public enum VolumeGet: ControlCommand {
        public static let name = "volume.get"
        public static let route = CommandRoute.daemon
        public static let summary = "The speaker's volume: a gain from 0 to 1, and in dB."
        public typealias Arguments = NoArguments
        public typealias Result = VolumeLevel
    }

    public enum VolumeSet: ControlCommand {
        public static let name = "volume.set"
        public static let route = CommandRoute.daemon
        public static let summary = "Sets the speaker's volume, `level` (0 to 1) or `db` (-100 to 0), exactly one; ramped over 30 ms, kept across restarts, told as `volume.changed`."
        public struct Arguments: Codable, Sendable {
            public var level: Double?
            public var db: Double?

            public init(level: Double? = nil, db: Double? = nil) {
                self.level = level
                self.db = db
            }
        }
        public typealias Result = VolumeLevel
    }

    public enum PlaybackStop: ControlCommand {
        public static let name = "playback.stop"
        public static let route = CommandRoute.daemon
        public static let summary = "Stops what plays: a reply (barge-in, its stream drained) or a clip."
        public typealias Arguments = NoArguments
        public struct Result: Codable, Sendable {
            public var stopped: Bool

            public init(stopped: Bool) {
                self.stopped = stopped
            }
        }
    }

    public enum LevelWatch: ControlCommand {
        public static let name = "level.watch"
        public static let route = CommandRoute.daemon
        public static let needsDevices = true
        public static let summary = "Subscribes to `level` and `speech` (and keeps the microphone open while watched); `enabled: false` unsubscribes from `level`, which lets the microphone close."
        public struct Arguments: Codable, Sendable {
            public var enabled: Bool?

            public init(enabled: Bool? = nil) {
                self.enabled = enabled
            }
        }
        public struct Result: Codable, Sendable {
            public var watching: Bool
            public var intervalMs: Int
            /// The capture device's state.
            public var capture: DeviceRunState

            public init(watching: Bool, intervalMs: Int, capture: DeviceRunState) {
                self.watching = watching
                self.intervalMs = intervalMs
                self.capture = capture
            }
        }
    }

    public enum ConfigGet: ControlCommand {
        public static let name = "config.get"
        public static let route = CommandRoute.daemon
        public static let summary = "The configuration in force: every key with its value, as text."
        public typealias Arguments = NoArguments
        public typealias Result = ConfigurationListing
    }

    public enum Metrics: ControlCommand {
        public static let name = "metrics"
        public static let route = CommandRoute.daemon
        public static let summary = "The Prometheus text exposition of the daemon's metrics."
        public typealias Arguments = NoArguments
        public struct Result: Codable, Sendable {
            /// `prometheus-text-0.0.4`.
            public var format: String
            public var text: String

            public init(format: String, text: String) {
                self.format = format
                self.text = text
            }
        }
    }
}
