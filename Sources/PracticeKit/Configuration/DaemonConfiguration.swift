import AudioKernel
import FoundationEssentials
import Glibc
import PracticeProtocol
import PracticeSupport
import SpeechModels

/// Everything `practiced` can be told, with its defaults. Resolved by
/// ``ConfigurationLoader`` from the config file, then the environment, then flags.
public struct DaemonConfiguration: Equatable, Sendable {
    /// The backend client's settings for this configuration.
    public var backend: BackendConfiguration {
        var backend = BackendConfiguration(baseURL: backendURL)
        backend.caFile = backendCAFile
        return backend
    }

    public var backendURL = URL(string: "http://127.0.0.1:8000")!
    /// Which backend `backend.url` is: TalkCo's conversations, or Chatterbox's cue practice.
    public var backendKind = BackendKind.talkco
    /// Cue practice: cards in a batch (`get_cues`/`shuffle_cues`).
    public var cueCount = 5
    /// Cue practice: the AAC-LC bit rate answers are uploaded at.
    public var cueBitRate = 48_000
    /// Cue practice: how often a recording's transcript and evaluation are polled.
    public var cuePollMilliseconds = 2_000
    /// Cue practice: how often a transcription or evaluation that fell back to `none` is
    /// asked for again before the client is told.
    public var cueResultAttempts = 3
    /// The CAs (a PEM file) an `https://` backend's certificate must chain to; nil trusts
    /// the system's CA store.
    public var backendCAFile: String?
    /// The learner's id for the backend; generated once and kept in the state directory
    /// when not given.
    public var userID: String?
    public var userName: String?
    /// Who the learner is to TalkCo: a new learner each visit (`shared`, a public kiosk) or
    /// the configured one every visit (`personal`).
    public var visitIdentity = VisitIdentity.shared
    /// A visit nobody touched or spoke in, with nothing in flight, for this long is warned
    /// ("Still there?"), then ended after ``idleResetSeconds`` more; 0: never ended for idleness.
    public var idleWarningSeconds = 60
    public var idleResetSeconds = 20
    public var captureDevice = AudioDeviceURI.automatic
    public var playbackDevice = AudioDeviceURI.automatic
    public var periodMilliseconds = 10
    /// The speaker's volume at first start, a gain from 0 to 1 (a level a client set with
    /// `volume.set` is kept in the state directory and wins at later starts).
    public var volume = 1.0
    public var prebufferMilliseconds = 50
    /// Devices nothing needs (no session, no sound, no level watcher) are closed after this
    /// long; 0 keeps them open.
    public var deviceIdleCloseSeconds = 10
    public var speechThreshold = 300.0
    /// While the kiosk speaks over an echo-cancelled input, speech must pass this RMS to
    /// interrupt it (voice barge-in).
    public var bargeInThreshold = 1_200.0
    /// ...and come within this many dB of the tutor's own level (the Geigel double-talk
    /// rule: ``SpeechDetectorConfiguration/bargeInEchoLossDecibels``).
    public var bargeInEchoLossDecibels = 12.0
    /// Whether the microphone is echo-cancelled (voice barge-in): nil asks the sound server
    /// (its echo-cancel source is recognised), true declares it (a speakerphone cancelling
    /// in hardware), false keeps the half-duplex rule.
    public var captureEchoCancelled: Bool?
    public var speechHangoverMilliseconds = 700
    /// How a hands-free turn ends: `model` (Silero VAD hears the pauses and smart-turn whether
    /// they end the turn: a learner's hesitation is waited through) or `hangover` (a fixed
    /// silence after the last loud block, for boards that cannot afford the models).
    public var speechEndpoint = SpeechEndpoint.model
    /// Whether `speech.endpoint` was set (file, environment or flag) rather than left at its
    /// default: `model` asked for by name refuses to start without its files; the default
    /// starts on the hangover rule and says why.
    public var speechEndpointExplicit = false
    /// `model`: a pause this long is put to smart-turn...
    public var speechPauseMilliseconds = 150
    /// ...and one this long ends the turn whatever it said (``TurnEndpointerConfiguration/maximumPauseMilliseconds``).
    public var speechMaxPauseMilliseconds = 2_000
    /// `model`: smart-turn's probability that ends a turn at a pause's first question in a
    /// quiet room (the later questions' follow it: ``TurnEndpointer/finishedThreshold``).
    public var speechFinishedProbability = 0.93
    /// `model`: where the model files are (the package installs them here).
    public var speechModelsDirectory = "/usr/share/practiced/models"
    /// `model`: smart-turn on this many threads, each taking its lane of rows in every stage
    /// (2: about 1.6 times as fast on two cores, for the same CPU).
    public var speechModelThreads = 2
    /// `model`: the build of the models' integer kernels (``KernelVariant``): `auto`, the
    /// best this CPU runs, or one by name (a CPU that misreports its features, a test).
    public var speechKernels = "auto"
    public var minimumSpeechMilliseconds = 250
    public var maximumTurnSeconds = 60
    public var levelIntervalMilliseconds = 66
    public var socketPath: String
    /// Members of this group may use the socket (besides the daemon's user and root).
    public var socketGroup: String?
    public var maxClients = 64
    /// A client's unsent events may take this much memory before it is disconnected.
    public var clientQueueBytes = 1 << 20
    /// A client that neither subscribes nor sends for this long is closed.
    public var clientIdleSeconds = 60
    /// A client's requests being answered at once; more wait unread (backpressure).
    public var clientRequestsInFlight = 4
    /// A client's requests per second (a burst of as many); faster ones wait unread.
    public var clientRequestsPerSecond = 200
    public var stateDirectory: String
    /// The spool: `spool.dir` when set, else `spool/` under the state directory, wherever
    /// that is configured (a `--state-dir` alone must carry the spool with it).
    public var spoolDirectory: String {
        get { spoolDirectoryOverride ?? "\(stateDirectory)/spool" }
        set { spoolDirectoryOverride = newValue }
    }
    private var spoolDirectoryOverride: String?
    /// Refuse to start when the spool cannot be made (a turn would live in memory only);
    /// `false` runs without one, and says so in `status` and on every turn.
    public var spoolRequired = true
    /// Where `play` may read any file (besides files the peer owns), `:`-separated: the
    /// package's sounds and `sounds/` under the state directory unless set.
    public var playDirectories: String {
        get { playDirectoriesOverride ?? "/usr/share/practiced/sounds:\(stateDirectory)/sounds" }
        set { playDirectoriesOverride = newValue }
    }
    private var playDirectoriesOverride: String?
    public var playDirectoryList: [String] { playDirectories.split(separator: ":").map(String.init).filter { $0.hasPrefix("/") } }
    /// The largest file `play` opens.
    public var playMaximumBytes = 1 << 30
    /// How long `play` may take to open and check its file before it answers an error.
    public var playTimeoutMilliseconds = 5_000
    public var logLevel = LogLevel.info
    /// A turn the backend could not take is sent again for this long, then reported pending.
    public var turnRetrySeconds = 60
    /// How often the review and the summary are polled (the iOS client: 2 s).
    public var reviewPollMilliseconds = 2_000
    /// After a barge-in, the next upload waits at most this long for the stopped reply's
    /// stream to end (it is read to its end silently), then hangs it up and goes ahead.
    public var replyDrainMilliseconds = 10_000
    /// A `.prom` file the metrics are written to for node_exporter's textfile collector;
    /// nil writes none.
    public var metricsTextfile: String?
    public var metricsTextfileIntervalSeconds = 15

    /// The defaults for this process: a user daemon under `$XDG_RUNTIME_DIR` and
    /// `$XDG_STATE_HOME`, the system service (root, or systemd's `RUNTIME_DIRECTORY` and
    /// `STATE_DIRECTORY`) under `/run/practiced` and `/var/lib/practiced`.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let system = getuid() == 0
        if let runtime = environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first {
            socketPath = "\(runtime)/control.sock"
        } else if !system, let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            socketPath = "\(runtime)/practiced/control.sock"
        } else {
            socketPath = "/run/practiced/control.sock"
        }
        if let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first {
            stateDirectory = String(state)
        } else if system {
            stateDirectory = "/var/lib/practiced"
        } else if let state = environment["XDG_STATE_HOME"], !state.isEmpty {
            stateDirectory = "\(state)/practiced"
        } else {
            stateDirectory = "\(FilePaths.home(environment: environment))/.local/state/practiced"
        }
    }

    /// The stream settings the devices open with: the engine's side (PCM16 24 kHz mono), the
    /// period, and what the device's URI asks of its format (native by default).
    public func stream(for device: AudioDeviceURI) -> AudioStreamConfiguration {
        var stream = AudioStreamConfiguration()
        stream.periodFrames = stream.sampleRate * periodMilliseconds / 1000
        stream.device = device.format
        return stream
    }

    /// The recorder's settings.
    public var recorder: RecorderConfiguration {
        var recorder = RecorderConfiguration()
        recorder.detector.gateThreshold = speechThreshold
        recorder.detector.bargeInThreshold = bargeInThreshold
        recorder.detector.bargeInEchoLossDecibels = bargeInEchoLossDecibels
        recorder.echoCancelledInput = captureEchoCancelled
        recorder.detector.hangoverMilliseconds = speechHangoverMilliseconds
        recorder.detector.minimumSpeechMilliseconds = minimumSpeechMilliseconds
        recorder.detector.maximumTurnMilliseconds = maximumTurnSeconds * 1000
        recorder.levelIntervalMilliseconds = levelIntervalMilliseconds
        return recorder
    }

    /// The learned endpointing's settings.
    public var endpointer: TurnEndpointerConfiguration {
        var endpointer = TurnEndpointerConfiguration()
        endpointer.pauseMilliseconds = speechPauseMilliseconds
        endpointer.maximumPauseMilliseconds = max(speechMaxPauseMilliseconds, speechPauseMilliseconds)
        endpointer.maximumTurnMilliseconds = maximumTurnSeconds * 1000
        endpointer.minimumLevel = speechThreshold * SpeechDetectorConfiguration().startFactor
        endpointer.finishedProbability = Float(speechFinishedProbability)
        return endpointer
    }

    public var player: StreamingPlayerConfiguration {
        var player = StreamingPlayerConfiguration()
        player.prebufferMilliseconds = prebufferMilliseconds
        return player
    }
}

/// One configuration key: its name in the file, how it is parsed, what is allowed.
struct ConfigurationKey: Sendable {
    let name: String
    let allowed: String
    let help: String
    let apply: @Sendable (inout DaemonConfiguration, String) -> Bool
    let current: @Sendable (DaemonConfiguration) -> String

    /// `PRACTICED_BACKEND_URL` for `backend.url`.
    var environmentName: String { "PRACTICED_" + name.uppercased().replacing(".", with: "_") }
    /// `--backend-url` for `backend.url`.
    var flag: String { "--" + name.replacing(".", with: "-").replacing("_", with: "-") }

    static func integer(_ name: String, _ range: ClosedRange<Int>, unit: String, help: String,
                        _ keyPath: WritableKeyPath<DaemonConfiguration, Int> & Sendable) -> ConfigurationKey {
        ConfigurationKey(name: name, allowed: "a whole number of \(unit) from \(range.lowerBound) to \(range.upperBound)", help: help,
                         apply: { configuration, text in
                             guard let value = Int(text), range.contains(value) else { return false }
                             configuration[keyPath: keyPath] = value
                             return true
                         }, current: { "\($0[keyPath: keyPath])" })
    }

    static func level(_ name: String, help: String, _ keyPath: WritableKeyPath<DaemonConfiguration, Double> & Sendable) -> ConfigurationKey {
        ConfigurationKey(name: name, allowed: "an RMS level from 1 to 32767", help: help,
                         apply: { configuration, text in
                             guard let value = Double(text), value >= 1, value <= 32767 else { return false }
                             configuration[keyPath: keyPath] = value
                             return true
                         }, current: { String.printf("%g", $0[keyPath: keyPath]) })
    }

    static func path(_ name: String, help: String, _ keyPath: WritableKeyPath<DaemonConfiguration, String> & Sendable) -> ConfigurationKey {
        ConfigurationKey(name: name, allowed: "an absolute path", help: help,
                         apply: { configuration, text in
                             guard text.hasPrefix("/"), !text.contains("\0") else { return false }
                             configuration[keyPath: keyPath] = text
                             return true
                         }, current: { $0[keyPath: keyPath] })
    }

    static func device(_ name: String, help: String, _ keyPath: WritableKeyPath<DaemonConfiguration, AudioDeviceURI> & Sendable) -> ConfigurationKey {
        ConfigurationKey(name: name, allowed: AudioDeviceURI.acceptedForms, help: help,
                         apply: { configuration, text in
                             guard let device = try? AudioDeviceURI(parsing: text) else { return false }
                             configuration[keyPath: keyPath] = device
                             return true
                         }, current: { "\($0[keyPath: keyPath])" })
    }

    /// `true`, `yes`, `1` or `false`, `no`, `0`, in any case; nil for anything else.
    static func parseBoolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "yes", "1": true
        case "false", "no", "0": false
        default: nil
        }
    }

    static func boolean(_ name: String, help: String, _ keyPath: WritableKeyPath<DaemonConfiguration, Bool> & Sendable) -> ConfigurationKey {
        ConfigurationKey(name: name, allowed: "true or false", help: help,
                         apply: { configuration, text in
                             guard let value = parseBoolean(text) else { return false }
                             configuration[keyPath: keyPath] = value
                             return true
                         }, current: { $0[keyPath: keyPath] ? "true" : "false" })
    }

    static func text(_ name: String, help: String, _ keyPath: WritableKeyPath<DaemonConfiguration, String?> & Sendable) -> ConfigurationKey {
        ConfigurationKey(name: name, allowed: "text of 1 to 200 characters, or empty for none", help: help,
                         apply: { configuration, text in
                             guard text.count <= 200, !text.contains("\0") else { return false }
                             configuration[keyPath: keyPath] = text.isEmpty ? nil : text
                             return true
                         }, current: { $0[keyPath: keyPath] ?? "" })
    }

    /// Every key, in the order `--help` and `config.get` list them.
    static let all: [ConfigurationKey] = [
        ConfigurationKey(name: "backend.url", allowed: "an http:// or https:// URL", help: "the practice backend",
                         apply: { configuration, text in
                             guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else { return false }
                             configuration.backendURL = url
                             return true
                         }, current: { $0.backendURL.absoluteString }),
        ConfigurationKey(name: "backend.ca_file", allowed: "an absolute path to a PEM file of CA certificates, or empty for the system's CA store",
                         help: "whom an https:// backend's certificate must chain to (a private CA)",
                         apply: { configuration, text in
                             guard text.isEmpty || (text.hasPrefix("/") && !text.contains("\0")) else { return false }
                             configuration.backendCAFile = text.isEmpty ? nil : text
                             return true
                         }, current: { $0.backendCAFile ?? "" }),
        ConfigurationKey(name: "backend.kind", allowed: "talkco or chatterbox",
                         help: "what backend.url is: TalkCo (conversations) or Chatterbox (cue practice)",
                         apply: { configuration, text in
                             guard let kind = BackendKind(rawValue: text.lowercased()) else { return false }
                             configuration.backendKind = kind
                             return true
                         }, current: { $0.backendKind.rawValue }),
        .integer("cue.count", 1...100, unit: "cards", help: "cue cards in a batch (Chatterbox)", \.cueCount),
        .integer("cue.bitrate", 16_000...320_000, unit: "bits per second", help: "the AAC-LC bit rate cue answers are uploaded at (Chatterbox)",
                 \.cueBitRate),
        .integer("cue.poll_ms", 100...60_000, unit: "milliseconds", help: "how often a recording's transcript and evaluation are polled (Chatterbox)",
                 \.cuePollMilliseconds),
        .integer("cue.result_attempts", 1...20, unit: "requests",
                 help: "how often a transcription or evaluation that fell back to none is asked for again before the client is told (Chatterbox)",
                 \.cueResultAttempts),
        .text("user.id", help: "the learner's id with kiosk.visits = personal (generated once and kept in the state directory when empty)", \.userID),
        .text("user.name", help: "the learner's name, sent with new sessions (kiosk.visits = personal)", \.userName),
        ConfigurationKey(name: "kiosk.visits", allowed: "shared or personal",
                         help: "shared: a public kiosk, every visit a new TalkCo learner (a new backend user each) and Chatterbox signed out at its end, "
                             + "or personal: one learner's own kiosk, the same identity every visit",
                         apply: { configuration, text in
                             guard let identity = VisitIdentity(rawValue: text.lowercased()) else { return false }
                             configuration.visitIdentity = identity
                             return true
                         }, current: { $0.visitIdentity.rawValue }),
        .integer("kiosk.idle_warning_s", 0...86_400, unit: "seconds",
                 help: "a visit with no touch, no speech and nothing in flight this long gets \"Still there?\" (0: visits never end for idleness)",
                 \.idleWarningSeconds),
        .integer("kiosk.idle_reset_s", 5...3_600, unit: "seconds", help: "after the warning, the visit ends this long later unless the learner touches or speaks",
                 \.idleResetSeconds),
        .device("capture.device", help: "the microphone", \.captureDevice),
        .device("playback.device", help: "the speaker", \.playbackDevice),
        ConfigurationKey(name: "capture.echo_cancelled", allowed: "auto, true or false",
                         help: "whether the microphone is echo-cancelled, so the learner may interrupt the tutor by speaking (auto: the sound server's echo-cancel source)",
                         apply: { configuration, text in
                             if text.lowercased() == "auto" {
                                 configuration.captureEchoCancelled = nil
                             } else {
                                 guard let value = parseBoolean(text) else { return false }
                                 configuration.captureEchoCancelled = value
                             }
                             return true
                         }, current: { $0.captureEchoCancelled.map { $0 ? "true" : "false" } ?? "auto" }),
        ConfigurationKey(name: "audio.volume", allowed: "a gain from 0 to 1, a percentage such as 50%, or dB from -100 to 0 such as -6dB",
                         help: "the speaker's volume at first start (volume.set keeps a new one across restarts)",
                         apply: { configuration, text in
                             guard let level = VolumeLevel.parse(text) else { return false }
                             configuration.volume = level
                             return true
                         }, current: { String.printf("%g", $0.volume) }),
        .integer("audio.period_ms", 5...100, unit: "milliseconds", help: "device period", \.periodMilliseconds),
        .integer("audio.prebuffer_ms", 0...2000, unit: "milliseconds", help: "reply audio buffered before playback starts", \.prebufferMilliseconds),
        .integer("audio.idle_close_s", 0...86_400, unit: "seconds",
                 help: "devices unused this long (no session, no sound, no level watcher) are closed; 0 keeps them open", \.deviceIdleCloseSeconds),
        .level("speech.threshold", help: "the speech gate (the iOS client's 300)", \.speechThreshold),
        .level("speech.barge_in_threshold", help: "what speech must pass to interrupt the tutor over an echo-cancelled microphone", \.bargeInThreshold),
        ConfigurationKey(name: "speech.barge_in_echo_loss_db", allowed: "decibels from 0 to 60",
                         help: "over an echo-cancelled microphone, speech that interrupts the tutor must also come within this many dB of the tutor's own level "
                             + "(the least the speaker is attenuated on its way to the microphone, before the canceller)",
                         apply: { configuration, text in
                             guard let value = Double(text), value >= 0, value <= 60 else { return false }
                             configuration.bargeInEchoLossDecibels = value
                             return true
                         }, current: { String.printf("%g", $0.bargeInEchoLossDecibels) }),
        .integer("speech.hangover_ms", 100...10_000, unit: "milliseconds", help: "silence that ends a turn", \.speechHangoverMilliseconds),
        .integer("speech.min_speech_ms", 0...5_000, unit: "milliseconds", help: "speech shorter than this is noise", \.minimumSpeechMilliseconds),
        ConfigurationKey(name: "speech.endpoint", allowed: "model or hangover",
                         help: "how a hands-free turn ends: smart-turn at a pause (model) or a fixed silence (hangover, speech.hangover_ms)",
                         apply: { configuration, text in
                             guard let value = SpeechEndpoint(rawValue: text.lowercased()) else { return false }
                             configuration.speechEndpoint = value
                             configuration.speechEndpointExplicit = true
                             return true
                         }, current: { $0.speechEndpoint.rawValue }),
        .integer("speech.pause_ms", 100...2_000, unit: "milliseconds", help: "speech.endpoint = model: a pause this long is first put to smart-turn (asked once more at 250 ms while the learner stays silent)",
                 \.speechPauseMilliseconds),
        .integer("speech.max_pause_ms", 200...10_000, unit: "milliseconds",
                 help: "speech.endpoint = model: a pause this long ends the turn whatever smart-turn said", \.speechMaxPauseMilliseconds),
        ConfigurationKey(name: "speech.finished_probability", allowed: "a probability from 0.5 to 0.99",
                         help: "speech.endpoint = model: smart-turn's probability at or above which a pause ends the turn at its first question in a quiet room (the later questions' thresholds follow it, and all rise in noise)",
                         apply: { configuration, text in
                             guard let value = Double(text), value >= 0.5, value <= 0.99 else { return false }
                             configuration.speechFinishedProbability = value
                             return true
                         }, current: { String.printf("%g", $0.speechFinishedProbability) }),
        .path("speech.models_dir", help: "speech.endpoint = model: the directory of the model files (sha256-checked at start)", \.speechModelsDirectory),
        .integer("speech.model_threads", 1...2, unit: "threads", help: "speech.endpoint = model: threads smart-turn runs on", \.speechModelThreads),
        ConfigurationKey(name: "speech.kernels", allowed: "auto, or one of \(KernelVariant.allCases.map(\.rawValue).joined(separator: ", ")) that this CPU runs",
                         help: "speech.endpoint = model: the build of the models' integer kernels, auto the best this CPU runs",
                         apply: { configuration, text in
                             guard (try? KernelVariant.named(text.lowercased())) != nil else { return false }
                             configuration.speechKernels = text.lowercased()
                             return true
                         }, current: { $0.speechKernels }),
        .integer("speech.max_turn_s", 1...600, unit: "seconds", help: "the longest turn", \.maximumTurnSeconds),
        .integer("audio.level_interval_ms", 10...1_000, unit: "milliseconds", help: "input level events", \.levelIntervalMilliseconds),
        .path("socket.path", help: "the control socket", \.socketPath),
        .text("socket.group", help: "a group whose members may use the socket", \.socketGroup),
        .integer("socket.max_clients", 1...1_024, unit: "clients", help: "clients at once", \.maxClients),
        .integer("socket.client_queue_bytes", 4_096...(64 << 20), unit: "bytes", help: "unsent events per client before it is dropped", \.clientQueueBytes),
        .integer("socket.idle_timeout_s", 1...86_400, unit: "seconds", help: "a client that neither subscribes nor sends is closed", \.clientIdleSeconds),
        .integer("socket.requests_in_flight", 1...1_024, unit: "requests", help: "a client's requests answered at once (more wait unread)",
                 \.clientRequestsInFlight),
        .integer("socket.requests_per_s", 1...100_000, unit: "requests", help: "a client's requests per second (faster ones wait unread)",
                 \.clientRequestsPerSecond),
        .path("state.dir", help: "kept state (the generated user id)", \.stateDirectory),
        .path("spool.dir", help: "recorded turns waiting for upload (default: spool/ under state.dir)", \.spoolDirectory),
        ConfigurationKey(name: "play.directories", allowed: "absolute paths separated by ':'",
                         help: "where clients may play any file (others: only files they own)",
                         apply: { configuration, text in
                             let paths = text.split(separator: ":")
                             guard paths.allSatisfy({ $0.hasPrefix("/") }), !text.contains("\0") else { return false }
                             configuration.playDirectories = text
                             return true
                         }, current: { $0.playDirectories }),
        .integer("play.max_bytes", 44...(1 << 40), unit: "bytes", help: "the largest file play opens", \.playMaximumBytes),
        .integer("play.timeout_ms", 100...600_000, unit: "milliseconds", help: "how long play may take to open its file", \.playTimeoutMilliseconds),
        .boolean("spool.required", help: "refuse to start without a spool (false: run, turns kept in memory only)", \.spoolRequired),
        .integer("turn.retry_s", 0...86_400, unit: "seconds", help: "how long an undelivered turn is sent again before it is reported pending", \.turnRetrySeconds),
        .integer("review.poll_ms", 100...60_000, unit: "milliseconds", help: "how often the review and summary are polled", \.reviewPollMilliseconds),
        .integer("reply.drain_ms", 0...120_000, unit: "milliseconds",
                 help: "after a barge-in, how long the next upload waits for the stopped reply's stream to end", \.replyDrainMilliseconds),
        ConfigurationKey(name: "metrics.textfile", allowed: "an absolute path ending in .prom, or empty for none",
                         help: "a file the metrics are written to for node_exporter's textfile collector (its directory, e.g. /var/lib/prometheus/node-exporter/practiced.prom)",
                         apply: { configuration, text in
                             guard text.isEmpty || (text.hasPrefix("/") && text.hasSuffix(".prom") && !text.hasSuffix("/.prom") && !text.contains("\0")) else { return false }
                             configuration.metricsTextfile = text.isEmpty ? nil : text
                             return true
                         }, current: { $0.metricsTextfile ?? "" }),
        .integer("metrics.textfile_interval_s", 1...3_600, unit: "seconds", help: "how often the metrics textfile is written", \.metricsTextfileIntervalSeconds),
        ConfigurationKey(name: "log.level", allowed: LogLevel.allCases.map(\.description).joined(separator: ", "), help: "the least important messages logged",
                         apply: { configuration, text in
                             guard let level = LogLevel(name: text) else { return false }
                             configuration.logLevel = level
                             return true
                         }, current: { $0.logLevel.description }),
    ]
}

/// The backends `practiced` speaks.
public enum BackendKind: String, Sendable, CaseIterable {
    /// TalkCo's conversations with a tutor (`/sessions`, SSE replies).
    case talkco
    /// Chatterbox's cue practice (`/rpc/*` through its gateway, uploads to its files service).
    case chatterbox
}

/// How a hands-free turn ends (`speech.endpoint`).
public enum SpeechEndpoint: String, Sendable, CaseIterable {
    /// Silero VAD hears the pauses and smart-turn whether each ends the turn.
    case model
    /// A fixed silence after the last loud block (`speech.hangover_ms`).
    case hangover
}
