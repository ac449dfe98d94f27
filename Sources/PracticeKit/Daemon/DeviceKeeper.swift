import AudioKernel
import Dispatch
import FoundationEssentials
import PracticeProtocol
import PracticeSupport

/// The microphone and the speaker, kept by one owner with its own lock: opened at start and
/// when a command needs them, closed when nothing has needed them for `audio.idle_close_s`,
/// tried again every 2 s when a needed one failed, and their state told as it changes.
/// Opening and closing run on `queue` (the daemon's audio queue); the devices and their
/// states are read from any queue. Its time is the flows' one clock (Dispatch's in the
/// daemon), so a test runs ten idle minutes at once. ``PracticeDaemon`` composes it with
/// the rest.
final class DeviceKeeper: @unchecked Sendable {
    /// A device's state as `status` and `device.state` tell it.
    enum State: Equatable, CustomStringConvertible {
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

        /// The word on the wire.
        var wire: DeviceRunState {
            switch self {
            case .closed: return .closed
            case .idle: return .idle
            case .running: return .running
            case .failed: return .failed
            }
        }

        /// Why it failed, if it did.
        var error: String? { if case .failed(let why) = self { why } else { nil } }
    }

    /// What the keeper tells its owner; called on the device's thread or on `queue`.
    struct Handlers: Sendable {
        var recorder: @Sendable (RecorderEvent) -> Void
        var player: @Sendable (PlayerEvent) -> Void
        var device: @Sendable (AudioDeviceEvent, AudioDirection) -> Void
        var state: @Sendable (AudioDirection, State) -> Void
    }

    let queue: DispatchQueue
    private let clock: any PracticeClock
    private let audio: KioskAudio
    private let logger: Logger
    private let settings: @Sendable () -> (configuration: DaemonConfiguration, volume: Double)
    /// Whether anything needs the devices now (a session, a sound, a level watcher).
    private let needed: @Sendable () -> Bool
    private let handlers: Handlers

    private let lock = Lock()
    private var openRecorder: Recorder?
    private var openPlayer: StreamingPlayer?
    private var captureState = State.closed
    private var playbackState = State.closed
    /// When the devices were last needed (the clock's nanoseconds; on `queue`).
    private var lastNeeded: UInt64
    /// The check every 2 s (under `lock`).
    private var checks: RepeatingTimer?

    init(queue: DispatchQueue, clock: any PracticeClock, audio: KioskAudio, logger: Logger,
         settings: @escaping @Sendable () -> (configuration: DaemonConfiguration, volume: Double),
         needed: @escaping @Sendable () -> Bool, hearingNeeded: @escaping @Sendable () -> Bool, models: SpeechModelKeeper,
         handlers: Handlers) {
        self.queue = queue
        self.hearingNeeded = hearingNeeded
        self.models = models
        self.clock = clock
        lastNeeded = clock.now
        self.audio = audio
        self.logger = logger
        self.settings = settings
        self.needed = needed
        self.handlers = handlers
    }

    /// The speech models the open recorder is given while a session needs it (``provideModels()``).
    let models: SpeechModelKeeper
    /// Whether the practice flow is under way (a session in any stage, an answer recording):
    /// what the models are loaded for. A sound or a level watcher alone does not load them.
    private let hearingNeeded: @Sendable () -> Bool

    var recorder: Recorder? { lock.withLock { openRecorder } }
    var player: StreamingPlayer? { lock.withLock { openPlayer } }
    var states: (capture: State, playback: State) { lock.withLock { (captureState, playbackState) } }
    /// Whether both devices are open (commands that need them open them first, ``ControlCommand/needsDevices``).
    var isOpen: Bool { lock.withLock { openRecorder != nil && openPlayer != nil } }

    /// On `queue`: opens what is not open.
    func open() {
        lastNeeded = clock.now
        let (configuration, volume) = settings()
        if recorder == nil { openCapture(configuration) }
        if player == nil { openPlayback(configuration, volume: volume) }
    }

    /// On `queue`: closes both, telling them `state` (`idle` when unused, `closed` to reopen).
    func close(state: State) {
        let (recorder, player) = lock.withLock {
            defer { openRecorder = nil; openPlayer = nil }
            return (openRecorder, openPlayer)
        }
        audio.attach(recorder: nil)
        audio.attach(player: nil)
        recorder?.stop()
        player?.shutdown()
        models.letGo()
        setState(capture: state, playback: state)
    }

    /// Every 2 s on `queue` (the daemon's only periodic wake-up besides the control server's
    /// idle check): a needed device that failed is tried again; devices nothing needed for
    /// `audio.idle_close_s` are closed, so that an idle kiosk neither wakes 100 times a
    /// second for empty periods nor keeps the sound card from others.
    func start() {
        let checks = RepeatingTimer(clock: clock, every: 2, on: queue) { [weak self] in self?.keep() }
        lock.withLock { self.checks = checks }
    }

    /// Stops the checks; the devices stay as they are.
    func cancel() { lock.withLock { checks }?.cancel() }

    /// On `queue`: the open recorder gets the speech models if the flow is under way, or
    /// `asked` by a command that hears the learner (the flow may not have started yet).
    /// Called for such commands and at every check.
    func provideModels(asked: Bool = false) {
        guard let recorder, asked || hearingNeeded() else { return }
        models.provide(for: recorder, settings().configuration)
    }

    private func keep() {
        models.trim()
        provideModels()
        let closeAfter = settings().configuration.deviceIdleCloseSeconds
        let now = clock.now
        if closeAfter == 0 || needed() { lastNeeded = now }
        if closeAfter > 0, now - lastNeeded >= UInt64(closeAfter) * 1_000_000_000 {
            if recorder != nil || player != nil {
                logger.info("devices unused for \(closeAfter) s: closing them")
                close(state: .idle)
            }
        } else if recorder == nil || player == nil {
            open()
        }
    }

    private func openCapture(_ configuration: DaemonConfiguration) {
        let handlers = handlers
        do {
            // Opened without the speech models: they are loaded beside it when a session
            // needs them (``provideModels()``), and the recorder takes them between turns.
            let recorder = try Recorder(device: configuration.captureDevice.name, stream: configuration.stream(for: configuration.captureDevice),
                                        configuration: configuration.recorder) { event in handlers.recorder(event) }
            try recorder.start { event in handlers.device(event, .capture) }
            lock.withLock { openRecorder = recorder }
            audio.attach(recorder: recorder)
            recorder.follow(player)
            setState(capture: .running)
            provideModels()
        } catch {
            setState(capture: .failed(error.description))
        }
    }

    private func openPlayback(_ configuration: DaemonConfiguration, volume: Double) {
        let handlers = handlers
        do {
            let player = try StreamingPlayer(device: configuration.playbackDevice.name, stream: configuration.stream(for: configuration.playbackDevice),
                                             configuration: configuration.player) { event in handlers.player(event) }
            player.volume = Float(volume)
            try player.start { event in handlers.device(event, .playback) }
            lock.withLock { openPlayer = player }
            audio.attach(player: player)
            recorder?.follow(player)
            setState(playback: .running)
        } catch {
            setState(playback: .failed(error.description))
        }
    }

    private func setState(capture: State? = nil, playback: State? = nil) {
        let (changedCapture, changedPlayback): (Bool, Bool) = lock.withLock {
            defer {
                if let capture { captureState = capture }
                if let playback { playbackState = playback }
            }
            return (capture.map { $0 != captureState } ?? false, playback.map { $0 != playbackState } ?? false)
        }
        if let capture, changedCapture { handlers.state(.capture, capture) }
        if let playback, changedPlayback { handlers.state(.playback, playback) }
    }
}
