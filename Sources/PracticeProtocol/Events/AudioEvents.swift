import FoundationEssentials

// The microphone, the speaker and their devices (topics `level`, `speech`, `playback`, `device`).

/// Which side of the sound card.
public enum AudioDirection: String, Codable, Sendable, CaseIterable, WireEnumerable {
    case capture, playback
}

extension Event {
    public struct Level: ProtocolEvent {
        public static let name = "level"
        public static let topic = EventTopic.level
        public static let summary = "The input level in dBFS, every `audio.level_interval_ms` while watched (`level.watch`)."
        public var rmsDbfs: Double
        public var peakDbfs: Double

        public init(rmsDbfs: Double, peakDbfs: Double) {
            self.rmsDbfs = rmsDbfs
            self.peakDbfs = peakDbfs
        }
    }

    public struct SpeechStarted: ProtocolEvent {
        public static let name = "speech.started"
        public static let topic = EventTopic.speech
        public static let summary = "The speech detector heard speech begin."
        public init() {}
    }

    public struct SpeechModels: ProtocolEvent {
        public static let name = "speech.models"
        public static let topic = EventTopic.speech
        public static let summary = "The speech models were loaded, let go or failed: how hands-free turns end now (`endpoint`), and why the models failed (`error`)."
        public var hearing: SpeechHearing

        public init(hearing: SpeechHearing) { self.hearing = hearing }
    }

    public struct SpeechStopped: ProtocolEvent {
        public static let name = "speech.stopped"
        public static let topic = EventTopic.speech
        public static let summary = "The speech detector heard speech end."
        public init() {}
    }

    public struct SpeechPaused: ProtocolEvent {
        public static let name = "speech.paused"
        public static let topic = EventTopic.speech
        public static let summary = "Learned endpointing: at a pause, smart-turn heard the turn as unfinished (`probability` that it is finished) and the recorder waits for more (`waiting`), up to `speech.max_pause_ms`."
        public var probability: Double
        public var waiting: Bool

        public init(probability: Double, waiting: Bool) {
            self.probability = probability
            self.waiting = waiting
        }
    }

    public struct PlaybackStarted: ProtocolEvent {
        public static let name = "playback.started"
        public static let topic = EventTopic.playback
        public static let summary = "A sound (reply or clip) reached the speaker; `latency_ms` is the device's buffered lead; `sound` and `mixed` say which (as `play` answered)."
        public var latencyMs: Int
        /// The sound's number: replies and clips that take the speaker count in one
        /// sequence, clips mixed over them (`mixed`) in another.
        public var sound: Int
        public var mixed: Bool

        public init(latencyMs: Int, sound: Int, mixed: Bool) {
            self.latencyMs = latencyMs
            self.sound = sound
            self.mixed = mixed
        }
    }

    public struct PlaybackUnderrun: ProtocolEvent {
        public static let name = "playback.underrun"
        public static let topic = EventTopic.playback
        public static let summary = "The sound ran dry before its end (the network was late); `total` counts them for the sound."
        public var total: Int

        public init(total: Int) {
            self.total = total
        }
    }

    public struct PlaybackFinished: ProtocolEvent {
        public static let name = "playback.finished"
        public static let topic = EventTopic.playback
        public static let summary = "A sound ended, played out or interrupted; `sound` and `mixed` say which (as `play` answered)."
        public var playedS: Double
        public var interrupted: Bool
        public var underruns: Int
        public var sound: Int
        public var mixed: Bool

        public init(playedS: Double, interrupted: Bool, underruns: Int, sound: Int, mixed: Bool) {
            self.playedS = playedS
            self.interrupted = interrupted
            self.underruns = underruns
            self.sound = sound
            self.mixed = mixed
        }
    }

    public struct PlaybackFailed: ProtocolEvent {
        public static let name = "playback.failed"
        public static let topic = EventTopic.playback
        public static let summary = "A clip's file could not be read to its end (it shrank, or the read failed): what was read plays out, then `playback.finished`; `sound` and `mixed` say which clip."
        public var path: String
        public var message: String
        public var sound: Int
        public var mixed: Bool

        public init(path: String, message: String, sound: Int, mixed: Bool) {
            self.path = path
            self.message = message
            self.sound = sound
            self.mixed = mixed
        }
    }

    public struct VolumeChanged: ProtocolEvent {
        public static let name = "volume.changed"
        public static let topic = EventTopic.playback
        public static let summary = "The speaker's volume changed (`volume.set`, or `audio.volume` on reload); `level` 0 to 1, `db` null at 0."
        public var level: Double
        public var db: Double?

        public init(_ volume: VolumeLevel) {
            level = volume.level
            db = volume.db
        }
    }

    public struct DeviceState: ProtocolEvent {
        public static let name = "device.state"
        public static let topic = EventTopic.device
        public static let summary = "A device opened, closed when idle, or failed (`state`; why it failed in `error`)."
        public var direction: AudioDirection
        public var device: String
        public var state: DeviceRunState
        /// Why it failed (null unless `state` is `failed`).
        public var error: String?

        public init(direction: AudioDirection, device: String, state: DeviceRunState, error: String? = nil) {
            self.direction = direction
            self.device = device
            self.state = state
            self.error = error
        }
    }

    public struct DeviceXrun: ProtocolEvent {
        public static let name = "device.xrun"
        public static let topic = EventTopic.device
        public static let summary = "The device over- or underran and recovered."
        public var direction: AudioDirection
        public var total: Int

        public init(direction: AudioDirection, total: Int) {
            self.direction = direction
            self.total = total
        }
    }

    public struct DeviceLost: ProtocolEvent {
        public static let name = "device.lost"
        public static let topic = EventTopic.device
        public static let summary = "The device went away; it is reopened with backoff."
        public var direction: AudioDirection
        public var message: String

        public init(direction: AudioDirection, message: String) {
            self.direction = direction
            self.message = message
        }
    }

    public struct DeviceRestored: ProtocolEvent {
        public static let name = "device.restored"
        public static let topic = EventTopic.device
        public static let summary = "A lost device is back."
        public var direction: AudioDirection
        public var attempts: Int

        public init(direction: AudioDirection, attempts: Int) {
            self.direction = direction
            self.attempts = attempts
        }
    }
}
