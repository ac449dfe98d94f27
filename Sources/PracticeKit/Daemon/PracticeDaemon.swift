import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeControl
import PracticeProtocol
import PracticeSupport
import SpeechModels
import Synchronization

/// The daemon: the control server, the microphone and speaker (recorder and streaming
/// player), the backend client, metrics. The `practiced` executable only wires it to the
/// command line, signals and systemd.
///
/// Threads: the control server's queue answers clients; the session's queue runs the
/// conversation (``SessionController``); ``KioskAudio`` keeps one caller at a time on the
/// player's network side; `audioQueue` opens devices and decodes clips; the capture and
/// playback devices run their own I/O threads and reach the rest only through atomics, a
/// dispatch source that coalesces level updates, and rare events.
public final class PracticeDaemon: ControlCommandHandler, @unchecked Sendable {
    public static let version = "0.7.0"
    public static let topics = ProtocolCatalog.subscribableTopics
    public static let commands = ProtocolCatalog.commandNames
    /// Every command the daemon answers (the server answers its own), built at start.
    let commandTable = CommandTable()

    let lock = Lock()
    var configuration: DaemonConfiguration
    let sink: FilteringLogSink
    let logger: Logger
    let notifier: SystemdNotifier
    public let metrics = Metrics()
    var server: ControlServer?
    var listener: UnixListener?
    var backend: BackendClient
    var userID = ""
    /// The daemon's one clock (Dispatch's), given to everything it builds that waits: the
    /// flows and their reply streams, the backend clients' retries and deadlines, the device
    /// keeper, the control server, the sounds' open deadline.
    let clock: any PracticeClock = DispatchClock()
    /// When the daemon started, on `clock`.
    let startTime: UInt64
    let audioQueue = DispatchQueue(label: "practiced.audio")
    let workQueue = DispatchQueue(label: "practiced.work", attributes: .concurrent)

    /// One learner's visit after another (``VisitKeeper``), built at start.
    private(set) var visits: VisitKeeper!
    /// The microphone and the speaker: opened, closed and reopened on `audioQueue`.
    private(set) var devices: DeviceKeeper!
    var recorder: Recorder? { devices.recorder }
    var player: StreamingPlayer? { devices.player }
    /// The devices as the session sees them (attached as they open).
    let audio = KioskAudio()
    /// `play`'s files, opened and streamed each on a thread of its own.
    lazy var clips = ClipPlayer(audio: audio, logger: logger, clock: clock, deadlines: workQueue) { [weak self] event in self?.server?.publish(any: event) }
    /// `devices` requests waiting for the enumeration in progress (under `lock`).
    var deviceListWaiters: [CommandReply<Command.Devices>] = []
    /// The practice flow `backend.kind` names (``makeFlow(_:server:)``), built at start: a
    /// reload does not switch backends.
    var flow: (any PracticeFlow)!
    /// Chatterbox's client with the learner's tokens, when cue practice runs.
    var chatterbox: ChatterboxClient?
    /// `backend.kind` as the daemon started (for `status`).
    var backendKind = BackendKind.talkco
    var watchdogTimer: DispatchSourceTimer?
    var backendProbe = BackendProbe()
    /// `metrics.textfile`'s writer, when one is configured (replaced on reload).
    var metricsTextfile: MetricsTextfile?
    /// The speaker's volume, 0 to 1 (under `lock`); applied to each player as it opens.
    var volume = 1.0
    /// `RLIMIT_NOFILE` as raised at start (DescriptorLimit).
    var descriptorLimits = DescriptorLimit.Limits(before: -1, soft: -1, hard: -1)

    /// The newest input level (under `lock`), written on the capture thread; the control
    /// queue publishes it when `levelSignal` fires (coalesced: a slow control queue sees the
    /// latest only).
    var latestLevel: (rms: Double, peak: Double) = (-120, -120)
    var levelSignal: DispatchSourceUserDataAdd?

    struct BackendProbe {
        var reachable: Bool?
        /// On the daemon's clock.
        var checkedAt: UInt64?
        var error: String?
    }

    public init(configuration: DaemonConfiguration, sink: any LogSink = StandardErrorLogSink.shared, notifier: SystemdNotifier = SystemdNotifier()) {
        self.configuration = configuration
        self.sink = FilteringLogSink(sink, threshold: configuration.logLevel)
        self.logger = Logger(category: "practiced", sink: self.sink, threshold: .debug)
        self.notifier = notifier
        startTime = clock.now
        self.backend = BackendClient(configuration: configuration.backend, logger: logger.named("backend"), clock: clock)
        let models = SpeechModelKeeper(queue: audioQueue, clock: clock, logger: logger) { [weak self] hearing in self?.hearingChanged(hearing) }
        devices = DeviceKeeper(
            queue: audioQueue, clock: clock, audio: audio, logger: logger,
            settings: { [unowned self] in lock.withLock { (self.configuration, volume) } },
            needed: { [unowned self] in devicesNeeded }, hearingNeeded: { [unowned self] in flow?.needsDevices == true }, models: models,
            handlers: .init(recorder: { [weak self] event in self?.recorderEvent(event) },
                            player: { [weak self] event in self?.playerEvent(event) },
                            device: { [weak self] event, direction in self?.deviceEvent(event, direction: direction) },
                            state: { [weak self] direction, state in self?.deviceStateChanged(direction, state) }))
    }

    // MARK: - Life cycle

    /// Opens the control socket (or takes systemd's), opens the devices, then accepts clients.
    /// Device failures do not stop the daemon: they are reported and retried.
    public func start() throws {
        descriptorLimits = DescriptorLimit.raise()
        // A shared kiosk's learner is new each visit (``beginVisit(_:)``): the id before the
        // first one names nobody either.
        userID = configuration.visitIdentity == .shared ? ConfigurationLoader.newUserID() : try ConfigurationLoader.userID(for: configuration)
        volume = VolumeStore(stateDirectory: configuration.stateDirectory).load() ?? configuration.volume
        let group: UInt32?
        if let name = configuration.socketGroup {
            guard let gid = PeerCredentials.groupID(name) else {
                throw ConfigurationError(key: "socket.group", value: name, source: "configuration", allowed: "an existing group")
            }
            group = gid
        } else {
            group = nil
        }
        if configuration.spoolRequired {
            // Before the socket: a daemon that cannot keep turns durably does not start.
            do {
                _ = try TurnSpool(directory: configuration.spoolDirectory)
            } catch {
                throw ConfigurationError(key: "spool.dir", value: configuration.spoolDirectory, source: "configuration",
                                         allowed: "a directory practiced can create and write (\(error)); spool.required = false runs without one")
            }
        }
        // Before the socket, like the spool, and as quick in any build: the model files' digests
        // only. Their layout waits for the first session, beside the running daemon
        // (``SpeechModelKeeper``). Missing or damaged files stop the start only when
        // `speech.endpoint = model` was asked for by name; by default the daemon hears by the
        // hangover rule and says so.
        // The kernels the models run on: checked when the configuration was read.
        try? KernelVariant.use(KernelVariant.named(configuration.speechKernels))
        do {
            let directory = configuration.speechModelsDirectory, threads = configuration.speechModelThreads
            try devices.models.configure(endpoint: configuration.speechEndpoint, explicit: configuration.speechEndpointExplicit,
                                         directory: directory) { endpointer in
                try SpeechModelFiles.load(directory: directory, threads: threads, configuration: endpointer)
            }
        } catch {
            throw ConfigurationError(key: "speech.models_dir", value: configuration.speechModelsDirectory, source: "configuration",
                                     allowed: "a directory holding the model files (\(error)), as speech.endpoint = model asks; "
                                         + "without speech.endpoint in the configuration the daemon starts on the hangover rule instead")
        }
        metrics.set(.speechEndpointDegraded, to: devices.models.isDegraded ? 1 : 0)
        let listener = try UnixListener.activated() ?? UnixListener.bind(path: configuration.socketPath, group: group)
        self.listener = listener
        let server = ControlServer(listener: listener, serverVersion: Self.version, capabilities: ["events", "play", "level", "metrics", "devices", "session", "spool"],
                                   topics: Self.topics, socketGroup: group, limits: limits(configuration), logger: logger.named("control"), handler: self,
                                   clock: clock)
        self.server = server
        backendKind = configuration.backendKind
        flow = makeFlow(configuration, server: server)
        flow.configure(Self.flowConfiguration(configuration), userID: userID)
        visits = makeVisits(configuration)
        forgetLeftovers(configuration)
        // One table for every command the daemon answers: a command of the catalog without
        // a handler stops the daemon here, not a client later.
        registerCommands(into: commandTable)
        registerVisitCommands(into: commandTable)
        flow.register(into: commandTable)
        commandTable.verify(routes: [.daemon, .session, .cue])
        let signal = DispatchSource.makeUserDataAddSource(queue: server.queue)
        signal.setEventHandler { [unowned self] in publishLevel() }
        signal.resume()
        levelSignal = signal
        // The socket listens (clients wait in its backlog); they are accepted once the
        // devices are open, below.
        logger.notice("practiced \(Self.version) listening on \(listener.path)\(listener.ownsPath ? "" : " (socket activation)"); backend \(configuration.backendURL.absoluteString), user \(userID)")
        if descriptorLimits.soft > descriptorLimits.before {
            logger.info("descriptor limit raised from \(descriptorLimits.before) to \(descriptorLimits.soft) (hard \(descriptorLimits.hard))")
        }
        checkDescriptorRoom(configuration)
        // Opened at start so that a missing sound card shows at once; closed again when idle.
        // Before the first client is accepted: clients already waiting on an activated socket
        // (or let in by a listening one) take a descriptor each, and at a low descriptor
        // limit they took the ones the devices open with, so READY=1 never came.
        audioQueue.sync { devices.open() }
        devices.start()
        flow.start()
        startWatchdog(on: server.queue)
        startMetricsTextfile(configuration)
        server.start()
        notifier.ready(status: statusLine())
    }

    /// Stops serving, closes the devices, removes the socket the daemon made.
    public func stop() {
        notifier.stopping()
        logger.notice("stopping")
        watchdogTimer?.cancel()
        devices.cancel()
        metricsTextfile?.stop()
        // Streams are hung up; a turn being recorded is ended by the recorder's stop and
        // spooled, so that the next start reports it.
        flow?.beginShutdown()
        // A reply still playing fades out rather than clicking.
        if let player, player.isActive {
            _ = audio.stopAll()
            let deadline = clock.now + 200_000_000
            while player.isActive, clock.now < deadline { usleep(5_000) }
        }
        recorder?.stop()
        flow?.finishShutdown()
        player?.shutdown()
        server?.stop()
        levelSignal?.cancel()
    }

    /// SIGHUP: reads the configuration again. Log level, backend, user and client limits
    /// apply at once; devices are reopened when they changed; the socket path and group
    /// need a restart. An invalid configuration is logged and the running one kept.
    public func reload(_ newConfiguration: DaemonConfiguration) {
        notifier.reloading()
        let old = lock.withLock { configuration }
        lock.withLock { configuration = newConfiguration }
        sink.threshold = newConfiguration.logLevel
        if old.backendURL != newConfiguration.backendURL || old.backendCAFile != newConfiguration.backendCAFile {
            let client = BackendClient(configuration: newConfiguration.backend, logger: logger.named("backend"), clock: clock)
            lock.withLock {
                backend = client
                chatterbox = chatterbox.map {
                    ChatterboxClient(configuration: newConfiguration.backend, tokens: $0.tokens, logger: logger.named("chatterbox"), clock: clock)
                }
                backendProbe = BackendProbe()
            }
        }
        if old.backendKind != newConfiguration.backendKind { logger.warning("backend.kind changes only on restart") }
        // A shared kiosk keeps the visit's learner; a personal one takes the configured id.
        if newConfiguration.visitIdentity == .personal, let id = try? ConfigurationLoader.userID(for: newConfiguration) { lock.withLock { userID = id } }
        flow?.configure(Self.flowConfiguration(newConfiguration), userID: lock.withLock { userID })
        visits?.update(Self.visitSettings(newConfiguration))
        server?.update(limits: limits(newConfiguration))
        if newConfiguration.maxClients != old.maxClients { checkDescriptorRoom(newConfiguration) }
        if old.volume != newConfiguration.volume {
            do throws(ControlError) { _ = try setVolume(newConfiguration.volume) } catch {
                logger.error("audio.volume \(newConfiguration.volume): \(error.message)")
            }
        }
        if old.metricsTextfile != newConfiguration.metricsTextfile || old.metricsTextfileIntervalSeconds != newConfiguration.metricsTextfileIntervalSeconds {
            metricsTextfile?.stop()
            startMetricsTextfile(newConfiguration)
        }
        if old.socketPath != newConfiguration.socketPath || old.socketGroup != newConfiguration.socketGroup {
            logger.warning("socket.path and socket.group change only on restart")
        }
        if old.captureDevice != newConfiguration.captureDevice || old.playbackDevice != newConfiguration.playbackDevice
            || old.periodMilliseconds != newConfiguration.periodMilliseconds || old.recorder != newConfiguration.recorder
            || old.player != newConfiguration.player {
            logger.notice("audio settings changed: reopening the devices")
            audioQueue.sync {
                devices.close(state: .closed)
                devices.open()
            }
        }
        logger.notice("configuration reloaded")
        server?.publish(Event.ConfigReloaded(configuration: ConfigurationListing(newConfiguration)))
        notifier.ready(status: statusLine())
    }

    /// Logs a configuration that could not be reloaded.
    public func reloadFailed(_ error: Error) {
        logger.error("configuration not reloaded, keeping the running one: \(error)")
        server?.publish(Event.ConfigReloadFailed(message: "\(error)"))
        notifier.ready(status: statusLine())
    }

    /// The one flow `backend.kind` names: TalkCo's conversations or Chatterbox's cue
    /// practice (its settings come from ``PracticeFlow/configure(_:userID:)``).
    func makeFlow(_ configuration: DaemonConfiguration, server: ControlServer) -> any PracticeFlow {
        // What the flow tells happened for the learner (a stage, a reply's end, an upload):
        // the visit's idle clock starts again from it.
        let publish: EventPublisher = { [weak server, weak self] event in
            server?.publish(any: event)
            self?.visits?.noticed(begins: false)
        }
        switch configuration.backendKind {
        case .talkco:
            return SessionController(settings: SessionSettings(userID: userID, userName: configuration.userName),
                                     backend: { [unowned self] in lock.withLock { backend } }, audio: audio,
                                     spoolDirectory: configuration.spoolDirectory, stateDirectory: configuration.stateDirectory,
                                     metrics: metrics, logger: logger.named("session"), scheduler: clock, publish: publish)
        case .chatterbox:
            let client = ChatterboxClient(configuration: configuration.backend,
                                          tokens: ChatterboxTokenStore(stateDirectory: configuration.stateDirectory, logger: logger.named("chatterbox")),
                                          logger: logger.named("chatterbox"), clock: clock)
            lock.withLock { chatterbox = client }
            return CuePractice(settings: CueSettings(), client: { [unowned self] in lock.withLock { chatterbox ?? client } }, audio: audio,
                               spoolDirectory: configuration.spoolDirectory, stateDirectory: configuration.stateDirectory, metrics: metrics,
                               logger: logger.named("cue"), scheduler: clock, play: { [unowned self] path, rate, done in playRecording(path, rate: rate, done) },
                               publish: publish)
        }
    }

    /// Warns when the descriptor limit leaves less room than `socket.max_clients` beside
    /// the daemon's own descriptors: a full house of clients could then leave a device that
    /// reopens without any. Clients are not capped below the setting: the accept loop waits
    /// out a lack of descriptors (ControlServer), and the warning says what to raise.
    func checkDescriptorRoom(_ configuration: DaemonConfiguration) {
        let room = DescriptorLimit.clientRoom(descriptorLimits)
        guard descriptorLimits.soft >= 0, room < configuration.maxClients else { return }
        logger.warning("the descriptor limit (\(descriptorLimits.soft), hard \(descriptorLimits.hard)) leaves room for \(room) of socket.max_clients "
                       + "\(configuration.maxClients) clients beside the daemon's own \(DescriptorLimit.reserve): raise LimitNOFILE= or lower socket.max_clients")
    }

    func limits(_ configuration: DaemonConfiguration) -> ControlServerLimits {
        var limits = ControlServerLimits()
        limits.maximumClients = configuration.maxClients
        limits.queueBytes = configuration.clientQueueBytes
        limits.idleSeconds = Double(configuration.clientIdleSeconds)
        limits.requestsInFlight = configuration.clientRequestsInFlight
        limits.requestsPerSecond = Double(configuration.clientRequestsPerSecond)
        return limits
    }

    func startMetricsTextfile(_ configuration: DaemonConfiguration) {
        metricsTextfile = configuration.metricsTextfile.map { path in
            let writer = MetricsTextfile(path: path, intervalSeconds: configuration.metricsTextfileIntervalSeconds,
                                         logger: logger.named("metrics")) { [weak self] in self?.metricsText() ?? "" }
            logger.info("metrics written to \(path) every \(configuration.metricsTextfileIntervalSeconds) s")
            writer.start()
            return writer
        }
    }

    func startWatchdog(on queue: DispatchQueue) {
        guard let interval = notifier.watchdogInterval else { return }
        // Pinged from the control queue: a stuck control loop stops the pings and systemd
        // restarts the daemon.
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: interval, leeway: .milliseconds(50))
        timer.setEventHandler { [notifier] in notifier.watchdog() }
        timer.resume()
        watchdogTimer = timer
    }

    func statusLine() -> String {
        let states = devices.states
        return "serving \(server?.statisticsSnapshot.clients ?? 0) clients; capture \(states.capture), playback \(states.playback)"
    }
}
