import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeProtocol
import PracticeSupport

/// The kiosk's conversation with the backend: the one source of truth for the session,
/// its mode and its ``SessionStage``. It holds the stage and the session's identity,
/// routes the session's commands, records turns, and wires the pieces that do the rest:
/// - ``TurnDelivery``: a recorded turn into the spool and out to the backend, with retries;
/// - ``ReplyPlayback``: the reply's stream to the speaker, its text, its end, its drain;
/// - ``ReviewPolling``: the end of the talk, the review, corrections, the summary;
/// - ``LearnerData``: topics and profile, with the offline cache.
/// Every change goes out as an event on the `session` topic.
///
/// Threads: everything runs on one serial queue, the pieces too. The only work outside it
/// is the reply's audio, which goes from the backend's callback queue straight to the
/// speaker (through ``ReplyFeed``) without waiting for the session queue.
public final class SessionController: SessionContext, @unchecked Sendable {
    public let queue = DispatchQueue(label: "practiced.session")
    private(set) var settings: SessionSettings
    let backend: @Sendable () -> any SessionBackend
    private let audio: any SessionAudio
    private let publisher: EventPublisher
    let metrics: Metrics
    let logger: Logger

    // The pieces (set up in init; each owns its own state).
    private var delivery: TurnDelivery!
    private var replies: ReplyPlayback!
    private var replay: ReplayPlayback!
    private var review: ReviewPolling!
    private(set) var learner: LearnerData!

    // The session's own state (queue only).
    private(set) var stage = SessionStage.idle
    private(set) var active: ActiveSession?
    private(set) var epoch = 0
    private var recording: Recording?
    /// Voice barge-in: the recorder's number while it listens under a reply's sound (an
    /// echo-cancelled microphone only); speech on it stops the reply and is the next turn.
    private var bargeInListening: UInt64?
    private(set) var stopping = false
    /// The visit ended while a turn was being delivered: its end waits for the delivery
    /// (``windDownVisit()``, called again as the stage leaves `uploading`).
    var visitEnding: (forget: VisitIdentity, done: @Sendable () -> Void)?
    /// The clock and timers the pieces' retries, polls and drains run by: Dispatch's, or a
    /// test's that it moves by hand.
    let scheduler: any PracticeClock
    private let published = Locked(SessionState.idle)

    /// A turn being recorded.
    struct Recording {
        var handsFree: Bool
        /// The recorder's number for it: a turn with another number is a late one.
        var number: UInt64
    }

    public convenience init(settings: SessionSettings, backend: @escaping @Sendable () -> any SessionBackend, audio: any SessionAudio,
                            spoolDirectory: String, stateDirectory: String, metrics: Metrics, logger: Logger, publish: @escaping EventPublisher) {
        self.init(settings: settings, backend: backend, audio: audio, spoolDirectory: spoolDirectory, stateDirectory: stateDirectory,
                  metrics: metrics, logger: logger, scheduler: DispatchClock(), publish: publish)
    }

    init(settings: SessionSettings, backend: @escaping @Sendable () -> any SessionBackend, audio: any SessionAudio, spoolDirectory: String,
         stateDirectory: String, metrics: Metrics, logger: Logger, scheduler: any PracticeClock, publish: @escaping EventPublisher) {
        self.settings = settings
        self.scheduler = scheduler
        self.backend = backend
        self.audio = audio
        self.metrics = metrics
        self.logger = logger
        publisher = publish
        replies = ReplyPlayback(context: self, backend: backend, audio: audio)
        replay = ReplayPlayback(context: self, audio: audio)
        replies.soundBegan = { [unowned self] take, turnID, greeting in replay.keep(take, turnID: turnID, greeting: greeting) }
        // The delivery owns a turn's upload and its retries; the reply streams and plays it
        // and tells the delivery, once per attempt, what became of the upload.
        delivery = TurnDelivery(context: self, spoolDirectory: spoolDirectory, uploader: replies)
        replay.loadSpooled = { [unowned self] id, session throws(ControlError) in try delivery.spooledRecording(id, of: session) }
        review = ReviewPolling(context: self, backend: backend)
        learner = LearnerData(context: self, backend: backend, stateDirectory: stateDirectory)
        review.endedInReviewMode = { [unowned self] in close(reason: "review mode ended") }
        stateChanged()
    }

    /// New settings (SIGHUP); a session in progress keeps its id.
    public func update(settings: SessionSettings) { queue.async { self.settings = settings } }

    /// The session's state for `status`, snapshots and `session.get` (any thread).
    public var snapshot: SessionState { published.withLock { $0 } }

    /// Reports the turns a previous run left in the spool.
    public func recoverSpool() { queue.async { self.delivery.recover() } }

    /// The turns in the spool and those set aside, for `spool.list` (waits for the queue:
    /// never from the control queue).
    func listedSpool() -> (turns: [SpoolEntry], directory: String, setAside: [SpoolSetAside]) {
        queue.sync { (delivery.entries(), delivery.spool?.directory ?? "", delivery.spool?.setAside ?? []) }
    }

    /// Whether the daemon's `play` may use the speaker now (not while a reply owns it).
    public var speakerIsFree: Bool { queue.sync { !replies.isActive && !replay.isPlaying } }

    /// No session: the daemon may close the devices.
    public var isIdle: Bool { queue.sync { stage == .idle } }

    // MARK: - Commands

    /// Registers the session's commands in `table`: each runs on the session's queue, once
    /// the stage accepts it (``ControlCommand/stages``). The daemon routes them here only when
    /// its backend is TalkCo (``CommandRoute/session``).
    public func register(into table: CommandTable) {
        table.refuse(route: .cue) { _ in ControlError(.invalidState, "cue practice needs backend.kind = chatterbox (this daemon speaks TalkCo)") }
        on(table, Command.SessionStart.self) { [unowned self] args, reply in
            let mode = args.mode ?? .conversation
            if mode == .conversation && args.topicId == nil { throw ControlError(.badArguments, "'topic_id' is required in conversation mode") }
            startSession(mode: mode, topic: mode == .review ? nil : args.topicId, reply)
        }
        on(table, Command.SessionClose.self) { [unowned self] _, reply in
            close(reason: "closed by a client")
            reply.succeed(state())
        }
        on(table, Command.SessionGet.self) { [unowned self] _, reply in reply.succeed(state()) }
        on(table, Command.TurnStart.self) { [unowned self] _, reply in
            try startRecording(handsFree: false)
            reply.succeed(.init(stage: stage))
        }
        on(table, Command.Listen.self) { [unowned self] _, reply in
            try startRecording(handsFree: true)
            reply.succeed(.init(stage: stage))
        }
        on(table, Command.TurnStop.self) { [unowned self] _, reply in
            if stage == .listening {
                // Nothing was said yet: there is no turn to end.
                dropTurn(Event.TurnDiscarded(reason: .noSpeech))
            } else {
                _ = audio.record(.end)
            }
            reply.succeed(.init(stage: stage))
        }
        on(table, Command.TurnCancel.self) { [unowned self] _, reply in
            dropTurn(Event.TurnDiscarded(reason: .cancelled))
            reply.succeed(.init(stage: stage))
        }
        on(table, Command.Say.self) { [unowned self] args, reply in
            guard !args.text.allSatisfy(\.isWhitespace) else { throw ControlError(.badArguments, "'text' is empty") }
            guard args.text.utf8.count <= 4_000 else { throw ControlError(.badArguments, "'text' is longer than 4,000 bytes") }
            replay.stop()
            move(to: .uploading)
            replies.start(.text(args.text))
            reply.succeed(.init(stage: stage))
        }
        on(table, Command.ReplyReplay.self) { [unowned self] args, reply in
            // In `listening` no word was heard yet; a turn being recorded is refused by its stage.
            reply.succeed(try replay.replay(rate: args.rate))
        }
        on(table, Command.TurnReplay.self) { [unowned self] args, reply in
            guard let session = active else { throw ControlError(.invalidState, "no session") }
            reply.succeed(try replay.replayTurn(id: args.turnId, rate: args.rate, session: session.id))
        }
        on(table, Command.SessionEnd.self) { [unowned self] _, reply in review.endTalk(reply) }
        on(table, Command.ReviewGet.self) { [unowned self] _, reply in review.fetch(reply) }
        on(table, Command.CorrectionAsk.self) { [unowned self] args, reply in
            guard !args.message.allSatisfy(\.isWhitespace) else { throw ControlError(.badArguments, "'message' is empty") }
            review.askCorrection(segment: args.segmentId, message: args.message, reply)
        }
        on(table, Command.ReviewFinish.self) { [unowned self] _, reply in review.finish(reply) }
        on(table, Command.SpoolRetry.self) { [unowned self] args, reply in
            try delivery.retry(args.turnId)
            reply.succeed(.init(turnId: args.turnId, stage: stage))
        }
        on(table, Command.SpoolDiscard.self) { [unowned self] args, reply in
            try delivery.discard(args.turnId)
            reply.succeed(.init(discarded: args.turnId))
        }
        on(table, Command.Topics.self) { [unowned self] _, reply in learner.topics(reply) }
        on(table, Command.Profile.self) { [unowned self] args, reply in learner.profile(args, reply) }
    }

    /// Registers one command on the session's queue, refused in a stage it is not accepted in.
    private func on<C: ControlCommand>(_ table: CommandTable, _ command: C.Type, _ handler: @escaping (C.Arguments, CommandReply<C>) throws -> Void) {
        table.register(C.self, on: queue) { [unowned self] arguments, reply in
            guard C.isAccepted(in: stage) else {
                let allowed = SessionStage.allCases.filter(C.isAccepted(in:)).map(\.rawValue).joined(separator: ", ")
                throw ControlError(.invalidState, "'\(C.name)' is not allowed in this state (\(stage)); it is allowed in: \(allowed)")
            }
            try handler(arguments, reply)
        }
    }

    // MARK: - The session

    private func startSession(mode: SessionMode, topic: String?, _ reply: CommandReply<Command.SessionStart>) {
        close(reason: "a new session starts")
        let epoch = epoch
        move(to: .starting)
        let request = CreateSessionRequest(userId: settings.userID, userName: settings.userName, topicId: topic, mode: mode)
        call(backend(), { backend async throws(BackendError) in try await backend.createSession(request) }) { [self] result in
            guard epoch == self.epoch else { return reply.fail(ControlError(.invalidState, "the session was closed meanwhile")) }
            switch result {
            case .success(let created):
                active = ActiveSession(id: created.sessionId, mode: mode, topicID: topic)
                metrics.increment(.sessions, mode.rawValue)
                publish(Event.SessionCreated(sessionId: created.sessionId, mode: mode, topicId: topic))
                move(to: .greeting)
                replies.start(.greeting)
                reply.succeed(state())
            case .failure(let error):
                fail(.startFailed, error: "\(error)")
                reply.fail(ControlError(error))
            }
        }
    }

    /// Leaves the session (any stage) and goes back to idle; what is in flight is dropped.
    func close(reason: String) {
        stopActivity()
        delivery.abandon()
        review.reset()
        epoch += 1
        if stage != .idle { logger.notice("session \(active?.id ?? "-") closed: \(reason)") }
        active = nil
        replay.forget()
        replies.forgetInterruption()
        move(to: .idle)
    }

    func fail(_ reason: Event.SessionFailed.Reason, error: String) {
        logger.error("session \(active?.id ?? "-") failed: \(error)")
        stopActivity()
        publish(Event.SessionFailed(reason: reason, message: error, sessionId: active?.id))
        move(to: .failed)
    }

    /// Ends what runs now: the reply and a drained one (hung up, sound stopped), a request
    /// waiting for the drain, the recording, the polling.
    private func stopActivity() {
        replies.hangUpAll()
        replay.stop()
        if recording != nil { _ = audio.record(.cancel) }
        recording = nil
        review.stop()
    }

    // MARK: - Recording a turn

    /// `turn.start` (push-to-talk) or `listen` (hands-free); a reply that plays is stopped.
    private func startRecording(handsFree: Bool) throws(ControlError) {
        bargeInListening = nil  // the recorder's new command supersedes that listening
        replies.bargeIn()
        replay.stop()
        guard let number = audio.startRecording(handsFree: handsFree) else {
            throw ControlError(.deviceError, "the microphone is not open", retryable: true)
        }
        recording = Recording(handsFree: handsFree, number: number)
        move(to: handsFree ? .listening : .recording)
        publish(Event.TurnStarted(mode: handsFree ? .handsFree : .pushToTalk))
    }

    /// The recorder's hands-free turn started (speech heard while listening). Speech heard
    /// for a recording that was since cancelled does not move the one listening now: it
    /// would stand in `recording` while the recorder still listens, and `turn.stop` would
    /// then wait for a turn that never comes.
    public func speechStarted(recording number: UInt64?) {
        queue.async { [self] in
            if stage == .listening, let number, number == recording?.number {
                // A new turn stops a replay, as it stops a reply.
                replay.stop()
                move(to: .recording)
            }
            if let number, number == bargeInListening { bargedIn(recording: number) }
        }
    }

    /// The learner spoke over the tutor (echo-cancelled microphone): the reply stops (a
    /// fade within one period) and the recorder, which listened under it, records the turn
    /// from the speech's onset with its pre-roll.
    private func bargedIn(recording number: UInt64) {
        bargeInListening = nil
        guard stage == .replying || stage == .greeting || stage == .ready && replay.isPlaying else { return }
        logger.info("voice barge-in: the learner spoke over the \(stage == .ready ? "replay" : "reply")")
        metrics.increment(.voiceBargeIns)
        replies.bargeIn()
        replay.stop()
        recording = Recording(handsFree: true, number: number)
        move(to: .recording)
        publish(Event.TurnStarted(mode: .voiceBargeIn))
    }

    /// A reply's sound (or a replay's) began: over an echo-cancelled microphone the recorder
    /// listens under it (otherwise it stays half-duplex, and only `turn.start` or `listen`
    /// interrupt).
    private func listenForBargeIn() {
        let replying = (stage == .replying || stage == .greeting) && replies.isActive
        guard bargeInListening == nil, recording == nil, !stopping, replying || stage == .ready && replay.isPlaying,
              audio.inputIsEchoCancelled else { return }
        bargeInListening = audio.startRecording(handsFree: true)
    }

    /// A turn came from the recorder (capture thread): dropped below the speech gate,
    /// otherwise handed to ``TurnDelivery``.
    public func recorded(_ turn: RecordedTurn) {
        let endedAt = now
        queue.async { [self] in
            guard stage == .recording || stage == .listening || stopping, let active else { return }
            guard turn.recording == recording?.number else {
                // The turn finished on the capture thread just as its recording was cancelled
                // (and maybe another begun): the learner's cancel wins, the current recording
                // goes on. (Found by the chaos run: it was sent, from `listening`.)
                logger.info("a turn of recording \(turn.recording) arrived after it was cancelled; dropped")
                return
            }
            recording = nil
            publish(Event.TurnRecorded(durationS: rounded(turn.duration), speechS: rounded(turn.speechDuration),
                                       rms: turn.level.rms.rounded(), endReason: TurnEndReason(turn.endReason),
                                       finishedProbability: turn.finishedProbability.map { (Double($0) * 1000).rounded() / 1000 },
                                       endWaitMs: turn.endWait.map { Int(($0 * 1000).rounded()) }))
            guard turn.holdsSpeech else {
                // The iOS client's gate: nothing is sent.
                countTurn("no_speech")
                return dropTurn(Event.TurnDiscarded(reason: .noSpeech, rms: turn.level.rms.rounded()), cancelRecorder: false)
            }
            replay.keepTurn(id: delivery.take(wav: turn.wav, duration: turn.duration, of: active, endedAt: endedAt), wav: turn.wav)
        }
    }

    /// The recorder could not go on (the microphone failed): the turn ends, the daemon not.
    public func captureFailed(_ message: String) {
        queue.async { [self] in
            guard stage == .recording || stage == .listening else { return }
            // The recorder stopped with its device; there is nothing to cancel.
            dropTurn(Event.TurnDiscarded(reason: .deviceError, message: message), cancelRecorder: false)
        }
    }

    /// The turn being recorded ends without being sent.
    private func dropTurn(_ discarded: Event.TurnDiscarded, cancelRecorder: Bool = true) {
        if cancelRecorder { _ = audio.record(.cancel) }
        recording = nil
        publish(discarded)
        move(to: .ready)
    }

    // MARK: - The speaker

    /// `playback.stop` from a client: barge-in without a new turn.
    public func stopPlayback() -> Bool {
        queue.sync {
            if replay.stop() { return true }
            guard replies.isActive, stage == .replying || stage == .greeting else { return false }
            replies.bargeIn()
            move(to: .ready)
            return true
        }
    }

    /// The player's events (playback thread).
    public func playerEvent(_ event: PlayerEvent) {
        let now = self.now
        queue.async { [self] in
            replies.playerEvent(event, at: now)
            replay.playerEvent(event)
            if case .started = event { listenForBargeIn() }
            if stage == .ready, !replay.isPlaying, bargeInListening != nil {
                // The replay ended with nobody speaking over it.
                bargeInListening = nil
                _ = audio.record(.cancel)
            }
        }
    }

    // MARK: - Shutdown

    /// SIGTERM, first half: nothing new starts, streams are hung up; a turn being recorded
    /// is ended by the recorder's stop and spooled (``finishShutdown()``).
    public func beginShutdown() {
        queue.sync {
            stopping = true
            review.stop()
            replies.hangUpAll()
            delivery.abandon()
        }
    }

    /// SIGTERM, second half: waits for the turn the recorder handed over on stop.
    public func finishShutdown() { queue.sync {} }

    // MARK: - SessionContext

    func move(to next: SessionStage) {
        guard next != stage else { return }
        guard stage.canMove(to: next) else {
            // A bug, not a user error: the table in SessionStage is the contract.
            logger.error("session: refused transition \(stage) → \(next)")
            return
        }
        let previous = stage
        stage = next
        if bargeInListening != nil, next != .replying, next != .greeting {
            // The reply ended (or the session moved on) with nobody speaking over it.
            bargeInListening = nil
            _ = audio.record(.cancel)
        }
        logger.info("session: \(previous) → \(next)")
        publish(Event.SessionStage(stage: next, previous: previous, sessionId: active?.id, mode: active?.mode))
        stateChanged()
        if previous == .uploading, visitEnding != nil { windDownVisit() }
    }

    func publish(_ event: any ProtocolEvent) { publisher(event) }

    func stateChanged() {
        let state = state()
        published.withLock { $0 = state }
    }

    private func state() -> SessionState {
        SessionState(stage: stage, sessionId: active?.id, mode: active?.mode, topicId: active?.topicID, turns: active?.turns ?? 0,
                     spool: delivery.state, delivering: delivery.current?.turn.id)
    }

    func countAcceptedTurn() { active?.turns += 1 }

    func resume(_ session: ActiveSession) { active = session }
}
