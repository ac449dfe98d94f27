import AudioKernel
import Dispatch
import Foundation
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

    private let lock = NSLock()
    private var configuration: DaemonConfiguration
    private let sink: FilteringLogSink
    private let logger: Logger
    private let notifier: SystemdNotifier
    public let metrics = Metrics()
    private var server: ControlServer?
    private var listener: UnixListener?
    private var backend: BackendClient
    private var userID = ""
    private let startTime = DispatchTime.now()
    private let audioQueue = DispatchQueue(label: "practiced.audio")
    private let workQueue = DispatchQueue(label: "practiced.work", attributes: .concurrent)
    /// Files `play` is opening or streaming, each on a thread of its own (see `play`). An
    /// open on a filesystem that hangs never returns and keeps its thread in the kernel;
    /// unbounded, a client repeating such a `play` would pile up threads without end.
    private let filesInUse = Locked(0)
    static let maximumFilesInUse = 4

    /// Opened and closed on `audioQueue`, read from any queue: kept under `lock`.
    private var openRecorder: Recorder?
    private var openPlayer: StreamingPlayer?
    private var recorder: Recorder? { lock.withLock { openRecorder } }
    private var player: StreamingPlayer? { lock.withLock { openPlayer } }
    /// When the devices were last needed (uptime nanoseconds; on `audioQueue`).
    private var devicesLastNeeded = DispatchTime.now().uptimeNanoseconds
    /// The devices as the session sees them (attached as they open).
    private let audio = KioskAudio()
    /// `devices` requests waiting for the enumeration in progress (under `lock`).
    private var deviceListWaiters: [CommandReply<Command.Devices>] = []
    private var session: SessionController!
    private var captureState = DeviceState.closed
    private var playbackState = DeviceState.closed
    private var deviceKeeper: DispatchSourceTimer?
    private var watchdogTimer: DispatchSourceTimer?
    private var backendProbe = BackendProbe()

    /// The newest input level, written on the capture thread; the control queue publishes
    /// it when `levelSignal` fires (coalesced: a slow control queue sees the latest only).
    private let latestLevel = Locked<(rms: Double, peak: Double)>((-120, -120))
    private var levelSignal: DispatchSourceUserDataAdd?

    enum DeviceState: Equatable, CustomStringConvertible {
        /// `idle`: closed because nothing needed it for `audio.idle_close_s`.
        case closed, idle, running, failed(String)
        var description: String {
            switch self {
            case .closed: return "closed"
            case .idle: return "idle"
            case .running: return "running"
            case .failed(let why): return "failed: \(why)"
            }
        }
    }

    struct BackendProbe {
        var reachable: Bool?
        var checkedAt: DispatchTime?
        var error: String?
    }

    public init(configuration: DaemonConfiguration, sink: any LogSink = StandardErrorLogSink.shared, notifier: SystemdNotifier = SystemdNotifier()) {
        self.configuration = configuration
        self.sink = FilteringLogSink(sink, threshold: configuration.logLevel)
        self.logger = Logger(category: "practiced", sink: self.sink, threshold: .debug)
        self.notifier = notifier
        self.backend = BackendClient(configuration: BackendConfiguration(baseURL: configuration.backendURL), logger: logger.named("backend"))
    }

    // MARK: - Life cycle

    /// Opens the control socket (or takes systemd's), starts serving, opens the devices.
    /// Device failures do not stop the daemon: they are reported and retried.
    public func start() throws {
        userID = try ConfigurationLoader.userID(for: configuration)
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
        let listener = try UnixListener.activated() ?? UnixListener.bind(path: configuration.socketPath, group: group)
        self.listener = listener
        let server = ControlServer(listener: listener, serverVersion: Self.version, capabilities: ["events", "play", "level", "metrics", "devices", "session", "spool"],
                                   topics: Self.topics, socketGroup: group, limits: limits(configuration), logger: logger.named("control"), handler: self)
        self.server = server
        session = SessionController(settings: sessionSettings(configuration), backend: { [unowned self] in lock.withLock { backend } },
                                    audio: audio, spoolDirectory: configuration.spoolDirectory, stateDirectory: configuration.stateDirectory,
                                    metrics: metrics, logger: logger.named("session")) { [weak server] event in
            server?.publish(any: event)
        }
        let signal = DispatchSource.makeUserDataAddSource(queue: server.queue)
        signal.setEventHandler { [unowned self] in publishLevel() }
        signal.resume()
        levelSignal = signal
        server.start()
        logger.notice("practiced \(Self.version) listening on \(listener.path)\(listener.ownsPath ? "" : " (socket activation)"); backend \(configuration.backendURL.absoluteString), user \(userID)")
        // Opened at start so that a missing sound card shows at once; closed again when idle.
        audioQueue.sync { openDevices() }
        startDeviceKeeper()
        session.recoverSpool()
        startWatchdog(on: server.queue)
        notifier.ready(status: statusLine())
    }

    /// Stops serving, closes the devices, removes the socket the daemon made.
    public func stop() {
        notifier.stopping()
        logger.notice("stopping")
        watchdogTimer?.cancel()
        deviceKeeper?.cancel()
        // Streams are hung up; a turn being recorded is ended by the recorder's stop and
        // spooled, so that the next start reports it.
        session?.beginShutdown()
        // A reply still playing fades out rather than clicking.
        if let player, player.isActive {
            _ = audio.stopAll()
            let deadline = DispatchTime.now().uptimeNanoseconds + 200_000_000
            while player.isActive, DispatchTime.now().uptimeNanoseconds < deadline { usleep(5_000) }
        }
        recorder?.stop()
        session?.finishShutdown()
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
        if old.backendURL != newConfiguration.backendURL {
            backend = BackendClient(configuration: BackendConfiguration(baseURL: newConfiguration.backendURL), logger: logger.named("backend"))
            lock.withLock { backendProbe = BackendProbe() }
        }
        if let id = try? ConfigurationLoader.userID(for: newConfiguration) { lock.withLock { userID = id } }
        session?.update(settings: sessionSettings(newConfiguration))
        server?.update(limits: limits(newConfiguration))
        if old.socketPath != newConfiguration.socketPath || old.socketGroup != newConfiguration.socketGroup {
            logger.warning("socket.path and socket.group change only on restart")
        }
        if old.captureDevice != newConfiguration.captureDevice || old.playbackDevice != newConfiguration.playbackDevice
            || old.periodMilliseconds != newConfiguration.periodMilliseconds || old.recorder != newConfiguration.recorder
            || old.player != newConfiguration.player {
            logger.notice("audio settings changed: reopening the devices")
            audioQueue.sync {
                closeDevices(state: .closed)
                openDevices()
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

    private func sessionSettings(_ configuration: DaemonConfiguration) -> SessionSettings {
        var settings = SessionSettings(userID: lock.withLock { userID }, userName: configuration.userName)
        settings.turnRetrySeconds = Double(configuration.turnRetrySeconds)
        settings.pollInterval = Double(configuration.reviewPollMilliseconds) / 1000
        settings.drainTimeout = Double(configuration.replyDrainMilliseconds) / 1000
        return settings
    }

    private func limits(_ configuration: DaemonConfiguration) -> ControlServerLimits {
        var limits = ControlServerLimits()
        limits.maximumClients = configuration.maxClients
        limits.queueBytes = configuration.clientQueueBytes
        limits.idleSeconds = Double(configuration.clientIdleSeconds)
        limits.requestsInFlight = configuration.clientRequestsInFlight
        limits.requestsPerSecond = Double(configuration.clientRequestsPerSecond)
        return limits
    }

    private func startWatchdog(on queue: DispatchQueue) {
        guard let interval = notifier.watchdogInterval else { return }
        // Pinged from the control queue: a stuck control loop stops the pings and systemd
        // restarts the daemon.
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: interval, leeway: .milliseconds(50))
        timer.setEventHandler { [notifier] in notifier.watchdog() }
        timer.resume()
        watchdogTimer = timer
    }

    private func statusLine() -> String {
        lock.withLock { "serving \(server?.statisticsSnapshot.clients ?? 0) clients; capture \(captureState), playback \(playbackState)" }
    }

    // MARK: - Devices

    /// Commands that need the devices: they are opened first when closed.
    static let deviceCommands: Set<String> = ["session.start", "turn.start", "listen", "say", "play", "level.watch"]

    private var devicesOpen: Bool { lock.withLock { openRecorder != nil && openPlayer != nil } }

    /// On `audioQueue`: opens what is not open.
    private func openDevices() {
        devicesLastNeeded = DispatchTime.now().uptimeNanoseconds
        let configuration = lock.withLock { self.configuration }
        if recorder == nil { openCapture(configuration) }
        if player == nil { openPlayback(configuration) }
    }

    /// Every 2 s on `audioQueue` (the daemon's only periodic wake-up besides the control
    /// server's idle check): a needed device that failed is tried again; devices nothing
    /// needed for `audio.idle_close_s` are closed, so that an idle kiosk neither wakes
    /// 100 times a second for empty periods nor keeps the sound card from others.
    private func startDeviceKeeper() {
        let timer = DispatchSource.makeTimerSource(queue: audioQueue)
        timer.schedule(deadline: .now() + 2, repeating: 2, leeway: .milliseconds(500))
        timer.setEventHandler { [weak self] in self?.keepDevices() }
        timer.resume()
        deviceKeeper = timer
    }

    private func keepDevices() {
        let closeAfter = lock.withLock { configuration.deviceIdleCloseSeconds }
        let now = DispatchTime.now().uptimeNanoseconds
        if closeAfter == 0 || devicesNeeded { devicesLastNeeded = now }
        if closeAfter > 0, now - devicesLastNeeded >= UInt64(closeAfter) * 1_000_000_000 {
            if recorder != nil || player != nil {
                logger.info("devices unused for \(closeAfter) s: closing them")
                closeDevices(state: .idle)
            }
        } else if recorder == nil || player == nil {
            openDevices()
        }
    }

    /// A session (any stage), a sound playing, or a client watching the input level.
    private var devicesNeeded: Bool {
        session?.isIdle == false || player?.isActive == true || server?.hasSubscribers(to: "level") == true
    }

    /// On `audioQueue`.
    private func closeDevices(state: DeviceState) {
        let (recorder, player) = lock.withLock {
            defer { openRecorder = nil; openPlayer = nil }
            return (openRecorder, openPlayer)
        }
        audio.attach(recorder: nil)
        audio.attach(player: nil)
        recorder?.stop()
        player?.shutdown()
        setState(capture: state, playback: state)
    }

    private func openCapture(_ configuration: DaemonConfiguration) {
        do {
            let recorder = try Recorder(device: configuration.captureDevice, stream: configuration.stream, configuration: configuration.recorder) { [weak self] event in
                self?.recorderEvent(event)
            }
            try recorder.start { [weak self] event in self?.deviceEvent(event, direction: .capture) }
            lock.withLock { openRecorder = recorder }
            audio.attach(recorder: recorder)
            recorder.follow(player)
            setState(capture: .running)
        } catch {
            setState(capture: .failed(error.description))
        }
    }

    private func openPlayback(_ configuration: DaemonConfiguration) {
        do {
            let player = try StreamingPlayer(device: configuration.playbackDevice, stream: configuration.stream, configuration: configuration.player) { [weak self] event in
                self?.playerEvent(event)
            }
            try player.start { [weak self] event in self?.deviceEvent(event, direction: .playback) }
            lock.withLock { openPlayer = player }
            audio.attach(player: player)
            recorder?.follow(player)
            setState(playback: .running)
        } catch {
            setState(playback: .failed(error.description))
        }
    }

    private func setState(capture: DeviceState? = nil, playback: DeviceState? = nil) {
        let (changedCapture, changedPlayback): (Bool, Bool) = lock.withLock {
            defer {
                if let capture { captureState = capture }
                if let playback { playbackState = playback }
            }
            return (capture.map { $0 != captureState } ?? false, playback.map { $0 != playbackState } ?? false)
        }
        if let capture, changedCapture { deviceStateChanged(.capture, capture) }
        if let playback, changedPlayback { deviceStateChanged(.playback, playback) }
    }

    private func deviceStateChanged(_ direction: AudioDirection, _ state: DeviceState) {
        let device = lock.withLock { direction == .capture ? configuration.captureDevice : configuration.playbackDevice }
        switch state {
        case .failed(let why): logger.error("\(direction) device \(device): \(why)")
        default: logger.info("\(direction) device \(device): \(state)")
        }
        server?.publish(Event.DeviceState(direction: direction, device: "\(device)", state: "\(state)"))
    }

    /// On the capture thread: levels are only stored and signalled (no allocation); the
    /// rare speech events are posted.
    private func recorderEvent(_ event: RecorderEvent) {
        switch event {
        case .level(let rms, let peak):
            latestLevel.withLock { $0 = (rms, peak) }
            levelSignal?.add(data: 1)
        case .speechStarted(let recording):
            server?.publish(Event.SpeechStarted())
            session?.speechStarted(recording: recording)
        case .speechStopped:
            server?.publish(Event.SpeechStopped())
        case .turn(let turn):
            session?.recorded(turn)
        }
    }

    private func publishLevel() {
        let level = latestLevel.withLock { $0 }
        server?.publish(Event.Level(rmsDbfs: (level.rms * 10).rounded() / 10, peakDbfs: (level.peak * 10).rounded() / 10))
    }

    private func playerEvent(_ event: PlayerEvent) {
        // Published before the session hears of it, so that a client always sees
        // `playback.finished` before the `reply.finished` and `ready` it leads to.
        defer { session?.playerEvent(event) }
        switch event {
        case .started(let latency, _):
            server?.publish(Event.PlaybackStarted(latencyMs: latency * 1000 / 24_000))
        case .underrun(let total):
            metrics.increment("practiced_playback_underruns_total", help: "Replies that ran dry before their end.")
            server?.publish(Event.PlaybackUnderrun(total: total))
        case .finished(let report):
            server?.publish(Event.PlaybackFinished(playedS: (report.playedSeconds * 1000).rounded() / 1000, interrupted: report.interrupted,
                                                   underruns: report.underruns))
        }
    }

    private func deviceEvent(_ event: AudioDeviceEvent, direction: AudioDirection) {
        switch event {
        case .started, .endOfInput:
            break
        case .xrun(let total):
            metrics.increment("practiced_xruns_total", help: "Device overruns and underruns recovered.", labels: "direction=\"\(direction.rawValue)\"")
            server?.publish(Event.DeviceXrun(direction: direction, total: total))
        case .deviceLost(let error):
            metrics.increment("practiced_device_losses_total", help: "Devices that went away.", labels: "direction=\"\(direction.rawValue)\"")
            if direction == .capture { session?.captureFailed(error.description) }
            server?.publish(Event.DeviceLost(direction: direction, message: error.description))
        case .deviceRestored(let attempts):
            server?.publish(Event.DeviceRestored(direction: direction, attempts: attempts))
        }
    }

    // MARK: - Commands

    public func snapshot() -> DaemonSnapshot {
        let (capture, playback) = lock.withLock { (captureState, playbackState) }
        return DaemonSnapshot(version: Self.version, capture: "\(capture)", playback: "\(playback)", playing: player?.isActive ?? false,
                              session: session?.snapshot ?? .idle)
    }

    public func handle(_ request: ControlRequest, client: ControlClientInfo, reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void) {
        metrics.increment("practiced_control_requests_total", help: "Control requests by command.",
                          labels: "command=\"\(Self.commands.contains(request.command) ? request.command : "unknown")\"")
        if Self.deviceCommands.contains(request.command), !devicesOpen {
            // Closed while idle: opened (a few tens of milliseconds) before the command runs.
            return audioQueue.async { [self] in
                openDevices()
                run(request, client: client, reply: reply)
            }
        }
        run(request, client: client, reply: reply)
    }

    private func run(_ request: ControlRequest, client: ControlClientInfo, reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void) {
        if SessionController.commands.contains(request.command) {
            return session.handle(request, reply: reply)
        }
        do throws(ControlError) {
            switch request.command {
            case Command.Ping.name:
                CommandReply<Command.Ping>(reply).succeed(.init(pong: true, uptimeS: uptime))
            case Command.Status.name:
                status(CommandReply(reply))
            case Command.Devices.name:
                listDevices(CommandReply(reply))
            case Command.Play.name:
                // Off the control queue: it asks the session's queue whether a reply plays,
                // and the control queue must never wait on another queue (one client's
                // request would delay every other client's).
                let path = try request.arguments(Command.Play.self).path
                let answer = CommandReply<Command.Play>(reply)
                workQueue.async { [self] in
                    do throws(ControlError) { try play(path: path, client: client, answer) } catch { answer.fail(error) }
                }
            case Command.PlaybackStop.name:
                // Barge-in on a reply drains its stream; otherwise a clip stops.
                workQueue.async { [self] in
                    let stopped = session.stopPlayback() || audio.stopAll()
                    CommandReply<Command.PlaybackStop>(reply).succeed(.init(stopped: stopped))
                }
            case Command.LevelWatch.name:
                let enabled = try request.arguments(Command.LevelWatch.self).enabled ?? true
                if enabled { server?.subscribe(client: client.id, to: [EventTopic.level.rawValue, EventTopic.speech.rawValue]) }
                let (capture, interval) = lock.withLock { (captureState, configuration.levelIntervalMilliseconds) }
                CommandReply<Command.LevelWatch>(reply).succeed(.init(watching: enabled, intervalMs: interval, capture: "\(capture)"))
            case Command.ConfigGet.name:
                CommandReply<Command.ConfigGet>(reply).succeed(ConfigurationListing(lock.withLock { configuration }))
            case Command.Metrics.name:
                CommandReply<Command.Metrics>(reply).succeed(.init(format: "prometheus-text-0.0.4", text: metricsText()))
            default:
                throw ControlError(.unknownCommand, "unknown command '\(request.command)'; commands are \(Self.commands.joined(separator: ", "))")
            }
        } catch {
            reply(.failure(error))
        }
    }

    private var uptime: Double { (Double(DispatchTime.now().uptimeNanoseconds - startTime.uptimeNanoseconds) / 1e9 * 10).rounded() / 10 }

    private func status(_ reply: CommandReply<Command.Status>) {
        let probe = lock.withLock { backendProbe }
        let stale = probe.checkedAt.map { DispatchTime.now().uptimeNanoseconds - $0.uptimeNanoseconds > 10_000_000_000 } ?? true
        guard stale else { return reply.succeed(currentStatus()) }
        // Check the backend (a GET /topics, 3 s at most, no retries), then answer.
        checkBackend { [self] in reply.succeed(currentStatus()) }
    }

    private func checkBackend(then done: @escaping @Sendable () -> Void) {
        let url = lock.withLock { configuration.backendURL }
        var probeConfiguration = BackendConfiguration(baseURL: url)
        probeConfiguration.requestTimeout = 3
        probeConfiguration.retry = .none
        let client = BackendClient(configuration: probeConfiguration)
        Task { [self] in
            let start = DispatchTime.now()
            var probe = BackendProbe()
            do {
                _ = try await client.topics()
                probe.reachable = true
                metrics.observe("practiced_backend_probe_seconds", help: "Time of the backend reachability check.",
                                seconds: Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
            } catch {
                probe.reachable = false
                probe.error = "\(error)"
            }
            probe.checkedAt = .now()
            lock.withLock { backendProbe = probe }
            done()
        }
    }

    private func currentStatus() -> DaemonStatus {
        let (configuration, probe, capture, playback, user) = lock.withLock { (self.configuration, backendProbe, captureState, playbackState, userID) }
        let control = server?.statisticsSnapshot ?? ControlServerStatistics()
        func device(_ name: AudioDeviceName, _ state: DeviceState, _ statistics: AudioDeviceStatistics?) -> DaemonStatus.Device {
            DaemonStatus.Device(name: "\(name)", state: "\(state)", periods: statistics?.periods, xruns: statistics?.xruns, reopens: statistics?.reopens)
        }
        return DaemonStatus(
            version: Self.version, protocol: ControlProtocol.identifier, pid: Int(getpid()), uptimeS: uptime, userId: user,
            backend: .init(url: configuration.backendURL.absoluteString, reachable: probe.reachable, error: probe.error),
            devices: .init(capture: device(configuration.captureDevice, capture, recorder?.deviceStatistics),
                           playback: device(configuration.playbackDevice, playback, player?.deviceStatistics)),
            playback: .init(active: player?.isActive ?? false, positionS: ((player?.position ?? 0) * 1000).rounded() / 1000),
            session: session?.snapshot ?? .idle,
            clients: control.clients,
            counters: .init(connections: control.connectionsAccepted, refused: control.connectionsRefused,
                            slowClientsDropped: control.slowClientsDropped, throttled: control.clientsThrottled,
                            requests: control.requests, errors: control.errors.values.reduce(0, +)))
    }

    /// One enumeration at a time, its answer shared by every `devices` request that came
    /// meanwhile: a flood of them costs one walk of ALSA and PulseAudio, not one each.
    private func listDevices(_ reply: CommandReply<Command.Devices>) {
        let first: Bool = lock.withLock {
            deviceListWaiters.append(reply)
            return deviceListWaiters.count == 1
        }
        guard first else { return }
        workQueue.async { [self] in
            let listing = Self.deviceListing()
            let waiting = lock.withLock {
                defer { deviceListWaiters.removeAll() }
                return deviceListWaiters
            }
            for waiter in waiting { waiter.succeed(listing) }
        }
    }

    private static func deviceListing() -> Command.Devices.Result {
        let listing = AudioDeviceList.all()
        func list(_ direction: AudioDeviceInfo.Direction) -> [Command.Devices.Device] {
            listing.devices.filter { $0.direction == direction }.map { .init(name: "\($0.name)", description: $0.description) }
        }
        return .init(capture: list(.capture), playback: list(.playback), errors: listing.errors.map(\.description))
    }

    /// `play`: the file is opened and checked on a thread of its own, which nothing else
    /// waits on (see ``ClipFile`` for what is refused), within `play.timeout_ms`, after
    /// which the request answers an error even if the filesystem still hangs; then the same
    /// thread streams it to the player as the player has room.
    private func play(path: String, client: ControlClientInfo, _ reply: CommandReply<Command.Play>) throws(ControlError) {
        guard path.hasPrefix("/") else { throw ControlError(.badArguments, "'path' must be absolute") }
        guard let player else {
            let state = lock.withLock { playbackState }
            throw ControlError(.deviceError, "the playback device is not open (\(state))", retryable: true)
        }
        guard session.speakerIsFree else { throw ControlError(.invalidState, "a reply is playing; playback.stop first", retryable: true) }
        let configuration = lock.withLock { self.configuration }
        let reserved = filesInUse.withLock { count in
            guard count < Self.maximumFilesInUse else { return false }
            count += 1
            return true
        }
        guard reserved else {
            logger.warning("play \(path) (pid \(client.credentials.pid)): \(Self.maximumFilesInUse) files still opening or playing; refused")
            throw ControlError(.fileError, "\(Self.maximumFilesInUse) earlier files are still opening or playing (a stalled filesystem?); "
                               + "try again later", retryable: true)
        }
        let once = ReplyOnce(reply.send)
        let timeout = configuration.playTimeoutMilliseconds
        workQueue.asyncAfter(deadline: .now() + .milliseconds(timeout)) { [logger] in
            if once.send(.failure(ControlError(.fileError, "\(path): not opened within \(timeout) ms (a stalled filesystem?)", retryable: true))) {
                logger.warning("play \(path) (pid \(client.credentials.pid)): not opened within \(timeout) ms")
            }
        }
        // A thread, not Dispatch's pool: a thread stuck in a hung filesystem's `open` (or
        // streaming a two-hour clip) would hold a pool worker, and Linux's libdispatch adds
        // workers only after noticing, a second or more later; every queue of the daemon
        // would wait meanwhile (seen: `play` deadlines of 0.5 s answered after 2.5 s).
        let thread = Thread { [self, audio, logger] in
            defer { filesInUse.withLock { $0 -= 1 } }
            let clip: ClipFile
            do throws(ControlError) {
                clip = try ClipFile(path: path, peer: client.credentials.uid, directories: configuration.playDirectoryList,
                                    maximumBytes: configuration.playMaximumBytes)
            } catch {
                logger.notice("play refused for uid \(client.credentials.uid) (pid \(client.credentials.pid)): \(error.code.rawValue)")
                _ = once.send(.failure(error))
                return
            }
            guard clip.layout.format == player.format else {
                _ = once.send(.failure(ControlError(.fileError, "\(path) is \(clip.layout.format); the player plays \(player.format)")))
                return
            }
            guard !once.isSent, let number = audio.beginClip() else { return }
            _ = once.send(.success(ProtocolEncoder.encode(Command.Play.Result(path: path, durationS: (clip.layout.duration * 1000).rounded() / 1000))))
            Self.stream(clip, to: audio, reply: number)
        }
        thread.name = "practiced-play"
        thread.stackSize = 1 << 18
        thread.start()
    }

    /// Feeds a clip to the player in 64 KiB pieces as it has room: constant memory for any
    /// length. Ends when the file does, or when the clip is stopped or replaced.
    private static func stream(_ clip: ClipFile, to audio: KioskAudio, reply: Int) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        var offset = 0
        while offset < clip.layout.dataByteCount {
            guard let space = audio.space(for: reply) else { return }  // stopped
            let bytes = min(buffer.count, space * 2) & ~1
            guard bytes >= 4_096 || bytes >= clip.layout.dataByteCount - offset else {
                usleep(20_000)  // the player drains a period at a time
                continue
            }
            let n = clip.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<bytes]), at: offset)
            guard n > 0 else { break }  // the file shrank or failed: play what came
            audio.enqueue(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), reply: reply)
            offset += n
        }
        audio.endReply(reply)
    }

    private func metricsText() -> String {
        let control = server?.statisticsSnapshot ?? ControlServerStatistics()
        metrics.set("practiced_clients", help: "Clients connected to the control socket.", Double(control.clients))
        metrics.set("practiced_uptime_seconds", help: "Seconds since start.", uptime)
        for (code, count) in control.errors {
            metrics.set("practiced_control_errors", help: "Error replies by code.", labels: "code=\"\(code)\"", Double(count))
        }
        metrics.set("practiced_slow_clients_dropped", help: "Clients disconnected for not reading.", Double(control.slowClientsDropped))
        if let statistics = recorder?.deviceStatistics {
            metrics.set("practiced_device_periods", help: "Periods transferred by device.", labels: "direction=\"capture\"", Double(statistics.periods))
        }
        if let statistics = player?.deviceStatistics {
            metrics.set("practiced_device_periods", help: "Periods transferred by device.", labels: "direction=\"playback\"", Double(statistics.periods))
        }
        return metrics.exposition()
    }
}

/// A reply that goes out once: from the work, or from its deadline, whichever comes first.
final class ReplyOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var reply: (@Sendable (Result<JSONValue, ControlError>) -> Void)?

    init(_ reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void) { self.reply = reply }

    var isSent: Bool { lock.withLock { reply == nil } }

    /// Sends `result` unless a result went out already; whether this one did.
    func send(_ result: Result<JSONValue, ControlError>) -> Bool {
        guard let reply = lock.withLock({ () -> (@Sendable (Result<JSONValue, ControlError>) -> Void)? in
            defer { self.reply = nil }
            return self.reply
        }) else { return false }
        reply(result)
        return true
    }
}

/// Passes records at or above a threshold that can change at run time (SIGHUP).
final class FilteringLogSink: LogSink, @unchecked Sendable {
    private let next: any LogSink
    private let level: Atomic<Int>

    init(_ next: any LogSink, threshold: LogLevel) {
        self.next = next
        level = Atomic(threshold.rawValue)
    }

    var threshold: LogLevel {
        get { LogLevel(rawValue: level.load(ordering: .relaxed)) ?? .info }
        set { level.store(newValue.rawValue, ordering: .relaxed) }
    }

    func write(_ record: LogRecord) {
        guard record.level.rawValue >= level.load(ordering: .relaxed) else { return }
        next.write(record)
    }
}
