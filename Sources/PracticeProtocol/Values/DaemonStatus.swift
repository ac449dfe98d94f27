import FoundationEssentials

/// `status`: the daemon, its backend, devices, session and clients.
public struct DaemonStatus: Codable, Sendable {
    public var version: String
    public var `protocol`: String
    public var pid: Int
    public var uptimeS: Double
    public var userId: String
    public var backend: Backend
    public var devices: Devices
    /// How hands-free turns end now, and where the speech models stand.
    public var speech: SpeechHearing
    public var playback: Playback
    public var session: SessionState
    /// Cue practice's learner (backend.kind = chatterbox); null for TalkCo.
    public var learner: LearnerState?
    /// The learner's visit: none (the attract screen), active, warned of idleness, ending.
    public var visit: VisitState?
    public var clients: Int
    public var counters: Counters

    public struct Backend: Codable, Sendable {
        /// `talkco` or `chatterbox`.
        public var kind: String
        public var url: String
        /// Null until checked.
        public var reachable: Bool?
        public var error: String?

        public init(kind: String, url: String, reachable: Bool? = nil, error: String? = nil) {
            self.kind = kind
            self.url = url
            self.reachable = reachable
            self.error = error
        }
    }

    public struct Devices: Codable, Sendable {
        public var capture: Device
        public var playback: Device

        public init(capture: Device, playback: Device) {
            self.capture = capture
            self.playback = playback
        }
    }

    public struct Device: Codable, Sendable {
        public var name: String
        public var state: DeviceRunState
        /// Why it failed (null unless `state` is `failed`).
        public var error: String?
        /// The format the device runs at, e.g. `float 48000 Hz stereo` (the engine converts
        /// to and from PCM16 24 kHz mono); null until it has been opened.
        public var format: String?
        /// Null while the device is not open.
        public var periods: Int?
        public var xruns: Int?
        public var reopens: Int?
        /// Times the device was parked (PulseAudio: corked) because nobody needed it: the
        /// speaker while nothing played, the microphone while a half-duplex kiosk spoke.
        /// Null while the device is not open.
        public var parks: Int?
        /// The microphone only: whether it is echo-cancelled, so that the learner may
        /// interrupt the tutor by speaking (voice barge-in); null while it is not open.
        public var echoCancelled: Bool?

        public init(name: String, state: DeviceRunState, error: String? = nil, format: String? = nil, periods: Int? = nil, xruns: Int? = nil, reopens: Int? = nil, parks: Int? = nil, echoCancelled: Bool? = nil) {
            self.name = name
            self.state = state
            self.error = error
            self.format = format
            self.periods = periods
            self.xruns = xruns
            self.reopens = reopens
            self.parks = parks
            self.echoCancelled = echoCancelled
        }
    }

    public struct Playback: Codable, Sendable {
        public var active: Bool
        public var positionS: Double
        /// The rate replies play at (`playback.rate`).
        public var rate: Double

        public init(active: Bool, positionS: Double, rate: Double = 1) {
            self.active = active
            self.positionS = positionS
            self.rate = rate
        }
    }

    public struct Counters: Codable, Sendable {
        public var connections: Int
        public var refused: Int
        public var slowClientsDropped: Int
        public var throttled: Int
        public var requests: Int
        public var errors: Int

        public init(connections: Int, refused: Int, slowClientsDropped: Int, throttled: Int, requests: Int, errors: Int) {
            self.connections = connections
            self.refused = refused
            self.slowClientsDropped = slowClientsDropped
            self.throttled = throttled
            self.requests = requests
            self.errors = errors
        }
    }

    public init(version: String, `protocol`: String, pid: Int, uptimeS: Double, userId: String, backend: Backend, devices: Devices, speech: SpeechHearing, playback: Playback, session: SessionState, learner: LearnerState? = nil, visit: VisitState? = nil, clients: Int, counters: Counters) {
        self.version = version
        self.`protocol` = `protocol`
        self.pid = pid
        self.uptimeS = uptimeS
        self.userId = userId
        self.backend = backend
        self.devices = devices
        self.speech = speech
        self.playback = playback
        self.session = session
        self.learner = learner
        self.visit = visit
        self.clients = clients
        self.counters = counters
    }
}

/// The first event a subscriber gets (`state`/`snapshot`): where things stand.
public struct DaemonSnapshot: ProtocolEvent {
    public static let name = "snapshot"
    public static let topic = EventTopic.state
    public static let summary = "Sent once after `subscribe`: the daemon's state, so that a client never starts from nothing."

    public var version: String
    public var capture: DeviceRunState
    public var playback: DeviceRunState
    public var playing: Bool
    public var session: SessionState
    /// How hands-free turns end now (a UI may say so when the models failed).
    public var speech: SpeechHearing?
    /// The learner's visit (a UI shows its attract screen when there is none).
    public var visit: VisitState?
    /// The rate replies play at (`playback.rate`).
    public var playbackRate: Double

    public init(version: String, capture: DeviceRunState, playback: DeviceRunState, playing: Bool, session: SessionState, speech: SpeechHearing? = nil,
                visit: VisitState? = nil, playbackRate: Double = 1) {
        self.version = version
        self.capture = capture
        self.playback = playback
        self.playing = playing
        self.session = session
        self.speech = speech
        self.visit = visit
        self.playbackRate = playbackRate
    }
}
