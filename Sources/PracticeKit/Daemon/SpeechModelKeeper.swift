import AudioKernel
import SpeechModels
import Dispatch
import PracticeProtocol
import PracticeSupport

/// The speech models of learned endpointing (`speech.endpoint = model`) for the open
/// recorder: checked by their digests before the socket listens, then loaded on a queue of
/// their own when a session or an answer needs the microphone (parsing and laying out
/// smart-turn takes 0.3 s in a release build, 20 s in a debug one, and must never hold the
/// control socket or the audio queue), handed to the recorder between turns, and let go when
/// the devices close, so that an idle kiosk keeps 20 MB less.
///
/// Until they are ready, and for good when they are missing or damaged, hands-free turns end
/// by the hangover rule: a kiosk whose model files a partial upgrade broke still hears its
/// learners, and says so (`status.speech`, `speech.models`, the degraded metric).
/// `DeviceKeeper` calls it on its queue; ``hearing`` may be read from any queue.
final class SpeechModelKeeper: @unchecked Sendable {
    typealias Load = @Sendable (TurnEndpointerConfiguration) throws -> LearnedEndpointing

    private let queue: DispatchQueue
    private let clock: any PracticeClock
    private let loadQueue = DispatchQueue(label: "practiced.models")
    private let logger: Logger
    private let changed: @Sendable (SpeechHearing) -> Void
    private let lock = Lock()
    /// Under `lock`.
    private var state = SpeechModelsState.off
    private var failure: String?
    private var load: Load?
    private var configured = SpeechEndpoint.hangover
    /// On `queue`: the loaded models, the recorder they were handed to, and the recorder a
    /// load under way is for.
    private var loaded: LearnedEndpointing?
    private var holder: Recorder?
    private var loadingFor: Recorder?
    /// On `queue`: freed models' pages handed back at the next few checks.
    private(set) var trimsLeft = 0

    init(queue: DispatchQueue, clock: any PracticeClock, logger: Logger, changed: @escaping @Sendable (SpeechHearing) -> Void) {
        self.queue = queue
        self.clock = clock
        self.logger = logger
        self.changed = changed
    }

    /// How hands-free turns end now.
    var hearing: SpeechHearing {
        lock.withLock {
            let inForce = state == .ready ? SpeechEndpoint.model : .hangover
            return SpeechHearing(endpoint: inForce.rawValue, configured: configured.rawValue, models: state, error: failure,
                                 kernels: KernelVariant.current.rawValue)
        }
    }

    /// Whether the models are missing or damaged while the configuration asks for them.
    var isDegraded: Bool { lock.withLock { state == .failed } }

    /// At start, before the socket: checks the files' digests (not their contents' layout,
    /// which waits for the first session). `explicit`: the configuration named
    /// `speech.endpoint = model`, so a bad file is an error that stops the start; by default
    /// the daemon starts on the hangover rule and says why.
    func configure(endpoint: SpeechEndpoint, explicit: Bool, directory: String, load: @escaping Load) throws(SpeechModelFiles.Failure) {
        guard endpoint == .model else {
            lock.withLock { configured = endpoint; state = .off; self.load = nil }
            return
        }
        do {
            try SpeechModelFiles.verify(directory: directory)
            lock.withLock { configured = endpoint; state = .checked; failure = nil; self.load = load }
            logger.info("learned endpointing: Silero VAD and smart-turn v3.2 in \(directory) (sha256 checked; loaded when a session needs the microphone)")
        } catch {
            if explicit { throw error }
            fail("\(error)")
        }
    }

    /// On `queue`: the open recorder, while a session needs it, gets the models: at once when
    /// they are loaded, else once a load beside it ends. Nothing happens with the models off
    /// or failed, with `speech.endpoint = hangover` since a reload, or with a load already
    /// under way for this recorder.
    func provide(for recorder: Recorder, _ configuration: DaemonConfiguration) {
        guard configuration.speechEndpoint == .model, holder !== recorder, loadingFor !== recorder else { return }
        let (load, current) = lock.withLock { (self.load, state) }
        guard let load, current != .failed, current != .off else { return }
        if let loaded {
            hand(loaded, to: recorder)
            return
        }
        loadingFor = recorder
        set(.loading)
        let endpointer = configuration.endpointer
        let started = clock.now
        loadQueue.async { [self] in
            let result = Result { try load(endpointer) }
            queue.async { [self] in
                let mine = loadingFor === recorder
                loadingFor = nil
                switch result {
                case .success(let models):
                    guard mine else {
                        // The recorder closed meanwhile: nothing holds these.
                        models.worker.stop()
                        trimsLeft = 3
                        return set(.checked)
                    }
                    loaded = models
                    logger.info("learned endpointing: models loaded in \((clock.now - started) / 1_000_000) ms, on the \(KernelVariant.current.rawValue) kernels "
                                + "(this CPU runs \(KernelVariant.supported.map(\.rawValue).joined(separator: ", ")))")
                    hand(models, to: recorder)
                case .failure(let error):
                    // Checked at start, so changed on disk since: heard by the level rule.
                    fail("\(error)")
                }
            }
        }
    }

    /// On `queue`: the recorder closed; the models' threads end and their memory goes back.
    func letGo() {
        holder = nil
        loadingFor = nil
        if let models = loaded {
            loaded = nil
            models.worker.stop()
            // Handed back at the next checks, once the recorder holding the models is gone
            // too (it goes on its own time: a trim right after the close, or at the next
            // check only, left 12 MB resident in some runs).
            trimsLeft = 3
        }
        let current = lock.withLock { state }
        if current == .ready || current == .loading { set(.checked) }
    }

    /// On `queue`, every check: hands freed pages back while some are due.
    func trim() {
        guard trimsLeft > 0 else { return }
        trimsLeft -= 1
        SpeechModelFiles.returnFreedMemory()
    }

    private func hand(_ models: LearnedEndpointing, to recorder: Recorder) {
        if recorder.adopt(models) {
            holder = recorder
            set(.ready)
        } else {
            logger.warning("learned endpointing: the recorder's format is not mono; its turns end by the level rule")
        }
    }

    private func fail(_ why: String) {
        let message = "\(why); hands-free turns end by the hangover rule (speech.hangover_ms) until the files are restored"
        logger.error("learned endpointing: \(message)")
        lock.withLock {
            configured = .model
            failure = message
            load = nil
        }
        set(.failed)
    }

    private func set(_ new: SpeechModelsState) {
        let changedNow = lock.withLock {
            defer { state = new }
            return state != new
        }
        if changedNow { changed(hearing) }
    }
}
