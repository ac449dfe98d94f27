import AudioKernel
import Dispatch
import Foundation
import Synchronization

/// How the session paces its polling and retries.
public struct SessionSettings: Sendable {
    public var userID: String
    public var userName: String?
    /// `GET /review` while the review or the summary is generated (the iOS client: 2 s).
    public var pollInterval: Double = 2
    /// Polling gives up after this many errors in a row (the iOS client: 3).
    public var pollErrorLimit = 3
    /// Polling for the summary gives up after this long.
    public var finishTimeout: Double = 300
    /// A turn the backend could not take is sent again, with backoff, for this long before
    /// it is reported pending (it stays in the spool either way).
    public var turnRetrySeconds: Double = 60
    public var turnRetryInitialDelay = 1.0
    public var turnRetryMaxDelay = 10.0
    /// After a barge-in the stopped reply's stream is read to its end silently, and the next
    /// upload waits for that end at most this long (then the stream is hung up). A turn sent
    /// while upstream still produces a reply comes back empty (traces 09–12).
    public var drainTimeout = 10.0

    public init(userID: String, userName: String? = nil) {
        self.userID = userID
        self.userName = userName
    }
}

/// The kiosk's conversation with the backend: the one source of truth for the session,
/// its mode and its ``SessionStage``, both flows of the contract (conversation with
/// greeting, turns, review, corrections and summary; review mode), the turn spool and the
/// offline cache. Every change goes out as an event on the `session` topic.
///
/// Threads: everything runs on one serial queue. The only work outside it is the reply's
/// audio, which goes from the backend's callback queue straight to the speaker (through
/// ``SessionAudio``) without waiting for the session queue.
public final class SessionController: @unchecked Sendable {
    /// The commands this type answers (the daemon routes them here).
    public static let commands: Set<String> = Set(([
        Command.SessionStart.self, Command.SessionEnd.self, Command.SessionClose.self, Command.SessionGet.self, Command.TurnStart.self,
        Command.TurnStop.self, Command.TurnCancel.self, Command.Listen.self, Command.Say.self, Command.ReviewGet.self,
        Command.CorrectionAsk.self, Command.ReviewFinish.self, Command.SpoolList.self, Command.SpoolRetry.self,
        Command.SpoolDiscard.self, Command.Topics.self, Command.Profile.self,
    ] as [any ControlCommand.Type]).map { $0.name })

    public let queue = DispatchQueue(label: "practiced.session")
    private var settings: SessionSettings
    private let backendProvider: @Sendable () -> BackendClient
    private let audio: any SessionAudio
    private let spool: TurnSpool?
    /// Why there is no spool (turns then live in memory only), for `status` and every turn.
    private let spoolError: String?
    private let cache: OfflineCache
    private let publish: EventPublisher
    private let metrics: Metrics
    private let logger: Logger

    // Session state (queue only).
    private var stage = SessionStage.idle
    private var session: ActiveSession?
    /// Bumped when a session ends or is closed: late answers of the old one are dropped.
    private var epoch = 0
    private var reply: Reply?
    /// A reply whose sound was stopped (barge-in, `playback.stop`) and whose stream is read
    /// to its end without a sound or an event, so that no upload overlaps it upstream.
    private var draining: Reply?
    /// The upload that waits for `draining` to end, and the token of its deadline.
    private var waitingStart: ReplyKind?
    private var drainToken = 0
    private var recording: Recording?
    private var delivery: Delivery?
    private var review: Review?
    private var poll = PollState()
    /// The last reply was cut short: the backend may answer the next turn empty.
    private var interrupted = false
    private var stopping = false
    private let published = Locked(SessionState.idle)

    struct ActiveSession {
        var id: String
        var mode: SessionMode
        var topicID: String?
        var turns = 0
    }

    /// A turn being recorded.
    struct Recording {
        var handsFree: Bool
        /// The recorder's number for it: a turn with another number is a late one.
        var number: UInt64
        var stopRequested = false
    }

    /// A spooled turn on its way to the backend (with retries).
    struct Delivery {
        var turn: SpooledTurn
        var wav: Data
        var attempt = 0
        var firstFailure: UInt64?
        var lastError: String?
        /// When the recorder ended the turn (uptime ns), for the latency figures.
        var recordedAt: UInt64?
    }

    struct PollState {
        var token = 0
        var polls = 0
        var errors = 0
        var started: UInt64 = 0
    }

    public init(settings: SessionSettings, backend: @escaping @Sendable () -> BackendClient, audio: any SessionAudio, spoolDirectory: String,
                stateDirectory: String, metrics: Metrics, logger: Logger, publish: @escaping EventPublisher) {
        self.settings = settings
        self.backendProvider = backend
        self.audio = audio
        self.metrics = metrics
        self.logger = logger
        self.publish = publish
        cache = OfflineCache(stateDirectory: stateDirectory)
        do {
            spool = try TurnSpool(directory: spoolDirectory)
            spoolError = nil
        } catch {
            logger.error("turns cannot be kept on disk: \(error); they are sent from memory only")
            spool = nil
            spoolError = "\(error)"
        }
        publishState()
    }

    /// New settings (SIGHUP); a session in progress keeps its id.
    public func update(settings: SessionSettings) { queue.async { self.settings = settings } }

    /// The session's state for `status`, snapshots and `session.get` (any thread).
    public var snapshot: SessionState { published.withLock { $0 } }

    /// Reports the turns a previous run left in the spool (after a crash or a kill).
    public func recoverSpool() {
        queue.async { [self] in
            guard let spool else { return }
            let (turns, unreadable) = spool.list()
            for name in unreadable { logger.error("spool: \(name) cannot be read; left in place") }
            guard !turns.isEmpty else { return }
            logger.notice("spool: \(turns.count) turn(s) from an earlier run wait for delivery: \(turns.map(\.id).joined(separator: ", "))")
            metrics.increment("practiced_turns_recovered_total", help: "Turns found in the spool at start.", by: Double(turns.count))
            publish(Event.SpoolRecovered(turns: turns.map(spoolEntry)))
            publishState()
        }
    }

    // MARK: - Commands

    public func handle(_ request: ControlRequest, reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void) {
        queue.async { [self] in
            do throws(ControlError) {
                guard stage.accepts(request.command) else {
                    let allowed = SessionStage.stages(accepting: request.command).map(\.rawValue).joined(separator: ", ")
                    throw ControlError(.invalidState, "'\(request.command)' is not allowed in this state (\(stage)); it is allowed in: \(allowed)")
                }
                try run(request, reply)
            } catch {
                reply(.failure(error))
            }
        }
    }

    /// Whether the daemon's `play` may use the speaker now (not while a reply owns it).
    public var speakerIsFree: Bool { queue.sync { reply == nil } }

    /// No session: the daemon may close the devices.
    public var isIdle: Bool { queue.sync { stage == .idle } }

    private func run(_ request: ControlRequest, _ reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void) throws(ControlError) {
        switch request.command {
        case Command.SessionStart.name:
            let args = try request.arguments(Command.SessionStart.self)
            let mode = args.mode ?? .conversation
            if mode == .conversation && args.topicId == nil { throw ControlError(.badArguments, "'topic_id' is required in conversation mode") }
            startSession(mode: mode, topic: mode == .review ? nil : args.topicId, CommandReply(reply))
        case Command.SessionClose.name:
            close(reason: "closed by a client")
            CommandReply<Command.SessionClose>(reply).succeed(sessionState())
        case Command.SessionGet.name:
            CommandReply<Command.SessionGet>(reply).succeed(sessionState())
        case Command.TurnStart.name, Command.Listen.name:
            let handsFree = request.command == Command.Listen.name
            if let current = self.reply { bargeIn(current) }
            guard let number = audio.startRecording(handsFree: handsFree) else {
                throw ControlError(.deviceError, "the microphone is not open", retryable: true)
            }
            recording = Recording(handsFree: handsFree, number: number)
            move(to: handsFree ? .listening : .recording)
            publish(Event.TurnStarted(mode: handsFree ? .handsFree : .pushToTalk))
            CommandReply<Command.TurnStart>(reply).succeed(.init(stage: stage))
        case Command.TurnStop.name:
            if stage == .listening {
                // Nothing was said yet: there is no turn to end.
                dropTurn(Event.TurnDiscarded(reason: .noSpeech))
            } else {
                _ = audio.record(.end)
                recording?.stopRequested = true
            }
            CommandReply<Command.TurnStop>(reply).succeed(.init(stage: stage))
        case Command.TurnCancel.name:
            dropTurn(Event.TurnDiscarded(reason: .cancelled))
            CommandReply<Command.TurnCancel>(reply).succeed(.init(stage: stage))
        case Command.Say.name:
            let text = try request.arguments(Command.Say.self).text
            guard !text.allSatisfy(\.isWhitespace) else { throw ControlError(.badArguments, "'text' is empty") }
            guard text.utf8.count <= 4_000 else { throw ControlError(.badArguments, "'text' is longer than 4,000 bytes") }
            move(to: .uploading)
            startReply(.text(text))
            CommandReply<Command.Say>(reply).succeed(.init(stage: stage))
        case Command.SessionEnd.name:
            endTalk(CommandReply(reply))
        case Command.ReviewGet.name:
            fetchReview(CommandReply(reply))
        case Command.CorrectionAsk.name:
            let args = try request.arguments(Command.CorrectionAsk.self)
            guard !args.message.allSatisfy(\.isWhitespace) else { throw ControlError(.badArguments, "'message' is empty") }
            askCorrection(segment: args.segmentId, message: args.message, CommandReply(reply))
        case Command.ReviewFinish.name:
            finishReview(CommandReply(reply))
        case Command.SpoolList.name:
            let turns = spool?.list().turns ?? []
            CommandReply<Command.SpoolList>(reply).succeed(.init(turns: turns.map(spoolEntry), dir: spool?.directory ?? ""))
        case Command.SpoolRetry.name:
            try retrySpooled(request.arguments(Command.SpoolRetry.self).turnId, CommandReply(reply))
        case Command.SpoolDiscard.name:
            let id = try request.arguments(Command.SpoolDiscard.self).turnId
            guard delivery?.turn.id != id else { throw ControlError(.invalidState, "turn \(id) is being sent now") }
            guard let spool, spool.contains(id) else { throw ControlError(.badArguments, "no turn \(id) in the spool") }
            do { try spool.remove(id) } catch { throw ControlError(.fileError, "\(error)") }
            logger.notice("spool: turn \(id) discarded by a client")
            publish(Event.SpoolDiscarded(turnId: id))
            publishState()
            CommandReply<Command.SpoolDiscard>(reply).succeed(.init(discarded: id))
        case Command.Topics.name:
            let answer = CommandReply<Command.Topics>(reply)
            cached("topics", fetch: { backend async throws(BackendError) in try await backend.topics() }) { result in
                answer(result.map { .init(topics: $0.value, stale: $0.stale, ageS: $0.age, error: $0.error) })
            }
        case Command.Profile.name:
            let args = try request.arguments(Command.Profile.self)
            let user = settings.userID
            let answer = CommandReply<Command.Profile>(reply)
            let done: @Sendable (Result<Cached<UserProfile>, ControlError>) -> Void = { result in
                answer(result.map { .init(profile: $0.value, stale: $0.stale, ageS: $0.age, error: $0.error) })
            }
            switch args.action ?? .get {
            case .get:
                cached("profile", fetch: { backend async throws(BackendError) in try await backend.profile(userID: user) }, done)
            case .evaluate:
                cached("profile", offline: false, fetch: { backend async throws(BackendError) in try await backend.evaluate(userID: user) }, done)
            case .learningGoal:
                let goal = args.learningGoal
                cached("profile", offline: false, fetch: { backend async throws(BackendError) in try await backend.setLearningGoal(userID: user, goal: goal) }, done)
            }
        default:
            throw ControlError(.unknownCommand, "unknown command '\(request.command)'")
        }
    }

    // MARK: - Stages

    private func move(to next: SessionStage) {
        guard next != stage else { return }
        guard stage.canMove(to: next) else {
            // A bug, not a user error: the table in SessionStage is the contract.
            logger.error("session: refused transition \(stage) → \(next)")
            return
        }
        let previous = stage
        stage = next
        logger.info("session: \(previous) → \(next)")
        publish(Event.SessionStage(stage: next, previous: previous, sessionId: session?.id, mode: session?.mode))
        publishState()
    }

    private func publishState() {
        let state = sessionState()
        published.withLock { $0 = state }
    }

    private func sessionState() -> SessionState {
        let usage = spool?.usage ?? (turns: 0, bytes: 0)
        return SessionState(stage: stage, sessionId: session?.id, mode: session?.mode, topicId: session?.topicID, turns: session?.turns ?? 0,
                            spool: SpoolState(turns: usage.turns, bytes: usage.bytes, durable: spool != nil, error: spoolError),
                            delivering: delivery?.turn.id)
    }

    /// Ends what runs now: the reply and a drained one (hung up, sound stopped), an upload
    /// waiting for the drain, the recording, the polling.
    private func stopActivity() {
        hangUpStreams()
        if recording != nil { _ = audio.record(.cancel) }
        recording = nil
        poll.token += 1
    }

    /// The turn being recorded ends without being sent.
    private func dropTurn(_ discarded: Event.TurnDiscarded, cancelRecorder: Bool = true) {
        if cancelRecorder { _ = audio.record(.cancel) }
        recording = nil
        publish(discarded)
        move(to: .ready)
    }

    private func countTurn(_ outcome: String) {
        metrics.increment("practiced_turns_total", help: "Turns by outcome.", labels: "outcome=\"\(outcome)\"")
    }

    /// Leaves the session (any stage) and goes back to idle; what is in flight is dropped.
    private func close(reason: String) {
        stopActivity()
        delivery = nil
        review = nil
        epoch += 1
        if stage != .idle { logger.notice("session \(session?.id ?? "-") closed: \(reason)") }
        session = nil
        interrupted = false
        move(to: .idle)
    }

    private func fail(_ reason: String, error: String) {
        logger.error("session \(session?.id ?? "-") failed: \(error)")
        stopActivity()
        publish(Event.SessionFailed(reason: reason, message: error, sessionId: session?.id))
        move(to: .failed)
    }

    // MARK: - Starting

    private func startSession(mode: SessionMode, topic: String?, _ reply: CommandReply<Command.SessionStart>) {
        close(reason: "a new session starts")
        let epoch = epoch
        move(to: .starting)
        let request = CreateSessionRequest(userId: settings.userID, userName: settings.userName, topicId: topic, mode: mode)
        call({ backend async throws(BackendError) in try await backend.createSession(request) }) { [self] result in
                guard epoch == self.epoch else { return reply.fail(Self.closedMeanwhile) }
                switch result {
                case .success(let created):
                    session = ActiveSession(id: created.sessionId, mode: mode, topicID: topic)
                    metrics.increment("practiced_sessions_total", help: "Sessions started, by mode.", labels: "mode=\"\(mode.rawValue)\"")
                    publish(Event.SessionCreated(sessionId: created.sessionId, mode: mode, topicId: topic))
                    move(to: .greeting)
                    startReply(.greeting)
                    reply.succeed(sessionState())
                case .failure(let error):
                    fail("start_failed", error: "\(error)")
                    reply.fail(Self.controlError(error))
                }
        }
    }

    // MARK: - Turns

    /// The recorder's hands-free turn started (speech heard while listening). Speech heard
    /// for a recording that was since cancelled does not move the one listening now: it
    /// would stand in `recording` while the recorder still listens, and `turn.stop` would
    /// then wait for a turn that never comes.
    public func speechStarted(recording number: UInt64?) {
        queue.async { [self] in
            if stage == .listening, let number, number == recording?.number { move(to: .recording) }
        }
    }

    /// A turn came from the recorder (capture thread).
    public func recorded(_ turn: RecordedTurn) {
        let endedAt = DispatchTime.now().uptimeNanoseconds
        queue.async { [self] in
            guard stage == .recording || stage == .listening || stopping, let session else { return }
            guard turn.recording == recording?.number else {
                // The turn finished on the capture thread just as its recording was cancelled
                // (and maybe another begun): the learner's cancel wins, the current recording
                // goes on. (Found by the chaos run: it was sent, from `listening`.)
                logger.info("a turn of recording \(turn.recording) arrived after it was cancelled; dropped")
                return
            }
            recording = nil
            publish(Event.TurnRecorded(durationS: Self.rounded(turn.duration), speechS: Self.rounded(turn.speechDuration),
                                       rms: turn.level.rms.rounded(), endReason: turn.endReason.rawValue))
            guard turn.holdsSpeech else {
                // The iOS client's gate: nothing is sent.
                countTurn("no_speech")
                return dropTurn(Event.TurnDiscarded(reason: .noSpeech, rms: turn.level.rms.rounded()), cancelRecorder: false)
            }
            let spooled = SpooledTurn(sessionID: session.id, mode: session.mode, duration: turn.duration, bytes: turn.wav.count)
            do {
                guard let spool else { throw SpoolUnavailable(reason: spoolError ?? "no spool") }
                try spool.store(spooled, wav: turn.wav)
                publish(Event.TurnSpooled(turnId: spooled.id, bytes: turn.wav.count))
            } catch {
                // The disk failed us; the turn still goes out from memory.
                logger.error("turn \(spooled.id) not spooled: \(error)")
                publish(Event.TurnSpoolFailed(turnId: spooled.id, message: "\(error)"))
            }
            publishState()
            if stopping {
                logger.notice("turn \(spooled.id) spooled at shutdown; it is reported at the next start")
                return
            }
            move(to: .uploading)
            deliver(Delivery(turn: spooled, wav: Data(turn.wav), recordedAt: endedAt))
        }
    }

    private func deliver(_ next: Delivery) {
        var next = next
        next.attempt += 1
        delivery = next
        publishState()
        startReply(.turn(next.turn.id))
    }

    /// The recorder could not go on (the microphone failed): the turn ends, the daemon not.
    public func captureFailed(_ message: String) {
        queue.async { [self] in
            guard stage == .recording || stage == .listening else { return }
            // The recorder stopped with its device; there is nothing to cancel.
            dropTurn(Event.TurnDiscarded(reason: .deviceError, message: message), cancelRecorder: false)
        }
    }

    private func retrySpooled(_ id: String, _ reply: CommandReply<Command.SpoolRetry>) throws(ControlError) {
        guard let spool else { throw ControlError(.fileError, "there is no spool") }
        let loaded: (turn: SpooledTurn, wav: Data)
        do { loaded = try spool.load(id) } catch { throw ControlError(.badArguments, "\(error)") }
        if let session {
            guard session.id == loaded.turn.sessionID else {
                throw ControlError(.invalidState, "turn \(id) belongs to session \(loaded.turn.sessionID); close this session first")
            }
        } else {
            // A turn from an earlier run: the conversation it belongs to goes on.
            session = ActiveSession(id: loaded.turn.sessionID, mode: loaded.turn.mode, topicID: nil)
            logger.notice("resuming session \(loaded.turn.sessionID) to deliver turn \(id)")
            publish(Event.SessionResumed(sessionId: loaded.turn.sessionID, mode: loaded.turn.mode))
        }
        move(to: .uploading)
        deliver(Delivery(turn: loaded.turn, wav: loaded.wav))
        reply.succeed(.init(turnId: id, stage: stage))
    }

    /// A delivery attempt failed before the backend took the turn.
    private func deliveryFailed(_ error: BackendError) {
        guard var failed = delivery else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        failed.firstFailure = failed.firstFailure ?? now
        failed.lastError = "\(error)"
        delivery = failed
        let id = failed.turn.id
        if error.isSessionGone {
            delivery = nil
            publish(Event.TurnPending(turnId: id, reason: .sessionGone, message: "\(error)"))
            return fail("session_gone", error: "\(error)")
        }
        if let status = error.status, status >= 400 && status < 500 && status != 408 && status != 429 {
            // The backend answered and refused the turn: sending it again cannot help.
            try? spool?.remove(id)
            delivery = nil
            countTurn("rejected")
            publish(Event.TurnRejected(turnId: id, message: "\(error)"))
            publishState()
            return move(to: .ready)
        }
        let elapsed = Double(now - failed.firstFailure!) / 1e9
        let delay = min(settings.turnRetryMaxDelay, settings.turnRetryInitialDelay * pow(2, Double(max(0, failed.attempt - 1))))
        guard elapsed + delay <= settings.turnRetrySeconds, !stopping else {
            delivery = nil
            countTurn("pending")
            logger.warning("turn \(id) not delivered after \(failed.attempt) attempts (\(error)); kept in the spool")
            publish(Event.TurnPending(turnId: id, reason: .undelivered, message: "\(error)", attempts: failed.attempt))
            publishState()
            return move(to: .ready)
        }
        logger.warning("turn \(id) not delivered (\(error)); attempt \(failed.attempt + 1) in \(delay) s")
        publish(Event.TurnRetrying(turnId: id, attempt: failed.attempt + 1, delayS: delay, message: "\(error)"))
        let epoch = epoch
        queue.asyncAfter(deadline: .now() + delay) { [self] in
            guard epoch == self.epoch, let retry = delivery, retry.turn.id == id, stage == .uploading else { return }
            deliver(retry)
        }
    }

    // MARK: - Replies

    enum ReplyKind {
        case greeting
        case turn(String)
        case text(String)
    }

    /// One reply in flight: its stream, what has come, and the speaker's progress.
    final class Reply: @unchecked Sendable {
        let kind: ReplyKind
        let feed: ReplyFeed
        var stream: ReplyStream?
        var accepted = false
        var transcript: String?
        var responseText: String?
        var textReleased = false
        var soundStarted = false
        var summary: ReplySummary?
        var failure: BackendError?
        var playback: PlaybackReport?
        var void = false
        var outcome: ReplyOutcome?
        var unansweredPublished = false
        var drainStartedAt: UInt64?
        let requestedAt = DispatchTime.now().uptimeNanoseconds
        var firstAudioAt: UInt64?
        var soundAt: UInt64?
        var streamEndedAt: UInt64?
        var playbackEndedAt: UInt64?
        /// When the recorder ended the turn (nil for resent and typed turns).
        var recordedAt: UInt64?

        init(kind: ReplyKind, feed: ReplyFeed) {
            self.kind = kind
            self.feed = feed
        }

        var turnID: String? { if case .turn(let id) = kind { return id } else { return nil } }
        var request: ReplyOutcome.Request {
            switch kind {
            case .greeting: return .greeting
            case .turn: return .audioTurn
            case .text: return .textTurn
            }
        }
        var streamEnded: Bool { summary != nil || failure != nil }
    }

    /// The part of a reply the backend's callback queue touches: it starts the speaker on
    /// the first chunk and queues every chunk, unless the reply was stopped meanwhile.
    final class ReplyFeed: @unchecked Sendable {
        private let lock = NSLock()
        private let audio: any SessionAudio
        private var number: Int?
        private var stopped = false
        private var ended = false
        private var sawAudio = false

        init(audio: any SessionAudio) { self.audio = audio }

        /// Queues a chunk; for the reply's first chunk, the time it came (uptime ns).
        func enqueue(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
            lock.withLock {
                guard !stopped, !ended else { return nil }
                if number == nil { number = audio.beginReply() }
                if let number { audio.enqueue(bytes, reply: number) }
                guard !sawAudio else { return nil }
                sawAudio = true
                return DispatchTime.now().uptimeNanoseconds
            }
        }

        /// Stops the sound at once; later chunks are dropped.
        func stop() {
            lock.withLock {
                stopped = true
                if let number { audio.stopReply(number) }
            }
        }

        /// No more chunks: the speaker plays out what it has. Returns whether anything
        /// plays (false: no audio came, or it was stopped).
        func end() -> Bool {
            lock.withLock {
                ended = true
                guard let number, !stopped else { return false }
                audio.endReply(number)
                return true
            }
        }

        func owns(_ reply: Int) -> Bool { lock.withLock { number == reply } }
    }

    /// What the backend's callback queue passes to the session queue.
    enum StreamNote: Sendable {
        case retrying(attempt: Int, delay: Double, reason: String)
        case uploadProgress(sent: Int64, total: Int64)
        case accepted
        case transcript(String)
        case firstAudio(at: UInt64)
        case response(String)
        case timing(step: String, seconds: Double)
        case malformed(type: String, reason: String)
        case finished(Result<ReplySummary, BackendError>)
    }

    private func startReply(_ kind: ReplyKind) {
        guard let session else { return }
        if let draining {
            return waitForDrain(of: draining, then: kind)
        }
        let feed = ReplyFeed(audio: audio)
        let current = Reply(kind: kind, feed: feed)
        reply = current
        let backend = backendProvider()
        // Weak: the reply holds its stream, which holds this handler until it ends.
        let handler: ReplyStream.EventHandler = { [weak self, weak current, feed] event in
            let note: StreamNote
            switch event {
            case .audio(let bytes):
                guard let first = feed.enqueue(bytes) else { return }
                note = .firstAudio(at: first)
            case .transcript(let text):
                // A void turn stops the sound now, on this queue: no chunk may follow it.
                if text.isEmpty { feed.stop() }
                note = .transcript(text)
            case .retrying(let attempt, let delay, let reason): note = .retrying(attempt: attempt, delay: delay, reason: "\(reason)")
            case .uploadProgress(let sent, let total): note = .uploadProgress(sent: sent, total: total)
            case .accepted: note = .accepted
            case .response(let text): note = .response(text)
            case .timing(let step, let seconds): note = .timing(step: step, seconds: seconds)
            case .malformedEvent(let type, let reason): note = .malformed(type: type, reason: reason)
            case .done: return
            }
            guard let self, let current else { return }
            queue.async { self.streamNote(note, for: current) }
        }
        let stream: ReplyStream
        switch kind {
        case .greeting:
            stream = backend.startGreeting(sessionID: session.id, onEvent: handler)
        case .turn(let id):
            let wav = delivery?.wav ?? Data()
            current.recordedAt = delivery?.recordedAt
            if let recordedAt = delivery?.recordedAt {
                observe("practiced_turn_end_to_upload_seconds", "From the end of the turn to the start of its upload.", since: recordedAt)
            }
            publish(Event.TurnUploading(turnId: id, bytes: wav.count, attempt: delivery?.attempt ?? 1))
            stream = backend.sendTurn(sessionID: session.id, wav: wav, idempotencyKey: id, onEvent: handler)
        case .text(let text):
            stream = backend.sendText(sessionID: session.id, text: text, onEvent: handler)
        }
        current.stream = stream
        stream.whenFinished { [weak self] result in
            guard let self else { return }
            queue.async { self.streamNote(.finished(result), for: current) }
        }
    }

    private func streamNote(_ note: StreamNote, for current: Reply) {
        if current === draining { return drainNote(note, for: current) }
        guard current === reply else { return }  // a reply that was hung up or closed
        let turnID = current.turnID
        switch note {
        case .retrying(let attempt, let delay, let reason):
            publish(Event.ReplyRetrying(turnId: turnID, attempt: attempt + 1, delayS: Self.rounded(delay), message: reason))
        case .uploadProgress(let sent, let total):
            publish(Event.TurnUpload(turnId: turnID, sent: Int(sent), total: Int(total)))
        case .accepted:
            current.accepted = true
            if let id = current.turnID {
                // The backend has the turn: it leaves the spool, and is never sent again.
                turnAccepted(id)
            }
            if case .greeting = current.kind {} else { move(to: .replying) }
        case .transcript(let text):
            current.transcript = text
            if text.isEmpty {
                // Final at once: the sound is already stopped (the iOS client's rule).
                current.void = true
                unanswered(current, .emptyTranscript)
            } else {
                publish(Event.Transcript(text: text, turnId: turnID))
            }
        case .firstAudio(let at):
            current.firstAudioAt = at
            observe("practiced_first_audio_seconds", "From the request to the reply's first audio event.", since: current.requestedAt, now: at)
        case .response(let text):
            current.responseText = text
            releaseText(current)
        case .timing(let step, let seconds):
            publish(Event.ReplyTiming(step: step, seconds: seconds, turnId: turnID))
        case .malformed(let type, let reason):
            logger.warning("reply: malformed \(type) event: \(reason)")
            publish(Event.ReplyMalformed(type: type, reason: reason))
        case .finished(let result):
            switch result {
            case .success(let summary): current.summary = summary
            case .failure(let error): current.failure = error
            }
            current.streamEndedAt = DispatchTime.now().uptimeNanoseconds
            streamEnded(current)
        }
    }

    private func streamEnded(_ current: Reply) {
        if let error = current.failure {
            _ = current.feed.end()
            reply = nil
            if case .cancelled = error { return }
            switch current.kind {
            case .turn:
                if current.accepted { return replyIncomplete(current, error) }
                return deliveryFailed(error)
            case .greeting:
                // 504: the backend's upstream never connected; the session is gone.
                if error.isSessionGone || error.status == 504 { return fail("session_gone", error: "\(error)") }
                publish(Event.GreetingFailed(message: "\(error)"))
                return move(to: .ready)
            case .text:
                if error.isSessionGone { return fail("session_gone", error: "\(error)") }
                publish(Event.TurnFailed(message: "\(error)", retryable: error.status.map { $0 >= 500 } ?? true))
                return move(to: .ready)
            }
        }
        guard let summary = current.summary else { return }
        if case .interrupted(let error) = summary.end {
            return replyIncomplete(current, error)
        }
        if case .cancelled = summary.end { return }
        let outcome = ReplyOutcome(summary, for: current.request)
        current.outcome = outcome
        if outcome != .answered { unanswered(current, outcome) }
        if !isGreeting(current) { countTurn(outcome.rawValue) }
        interrupted = false
        let playing = current.feed.end()
        if !playing {
            current.playback = PlaybackReport(playedSeconds: 0, interrupted: current.void, underruns: 0, reply: 0)
        }
        releaseText(current)
        finishIfDone(current)
    }

    /// A turn (or greeting) the backend answered without an answer: its own event, never a
    /// normal reply (see ``ReplyOutcome``).
    private func unanswered(_ current: Reply, _ outcome: ReplyOutcome) {
        guard !current.unansweredPublished else { return }
        current.unansweredPublished = true
        current.outcome = outcome
        if isGreeting(current) {
            publish(Event.GreetingUnanswered(outcome: outcome, hint: outcome.hint))
            return
        }
        var hint = outcome.hint
        if interrupted {
            hint += " (the backend was still busy with a reply that was hung up)"
        }
        publish(Event.TurnUnanswered(turnId: current.turnID, outcome: outcome, hint: hint, afterInterruption: interrupted,
                                     transcript: current.transcript))
    }

    /// The stream broke after the backend took the turn: the sound stops, the reply is
    /// reported incomplete, the turn is not sent again (it was delivered).
    private func replyIncomplete(_ current: Reply, _ error: BackendError) {
        current.feed.stop()
        reply = nil
        interrupted = false
        if !isGreeting(current) { countTurn("incomplete") }
        metrics.increment("practiced_replies_incomplete_total", help: "Replies whose stream broke off.")
        publish(Event.ReplyIncomplete(message: "\(error)", turnId: current.turnID, responseText: current.responseText))
        move(to: .ready)
    }

    /// The reply text goes out with the sound, not before (the iOS client's rule): when the
    /// speaker has started the reply, or at the end when there is no sound at all.
    private func releaseText(_ current: Reply) {
        guard !current.textReleased, !current.void, let text = current.responseText else { return }
        guard current.soundStarted || current.streamEnded && current.playback != nil else { return }
        current.textReleased = true
        publish(Event.ReplyText(text: text, turnId: current.turnID, greeting: isGreeting(current)))
    }

    private func finishIfDone(_ current: Reply) {
        guard current === reply, current.streamEnded, let playback = current.playback else { return }
        reply = nil
        let summary = current.summary
        var finished = Event.ReplyFinished(
            turnId: current.turnID, greeting: isGreeting(current), interrupted: playback.interrupted, complete: summary?.sawDone ?? false,
            outcome: (current.outcome ?? .answered).rawValue, playedS: Self.rounded(playback.playedSeconds), underruns: playback.underruns,
            audioBytes: summary?.audioBytes ?? 0, saved: summary.map(ReplyOutcome.isSaved) ?? false)
        if let first = current.firstAudioAt, let sound = current.soundAt {
            finished.firstAudioToSoundMs = Self.rounded(Double(sound - first) / 1e6)
        }
        if let recorded = current.recordedAt {
            finished.endToUploadMs = Self.rounded(Double(current.requestedAt &- recorded) / 1e6)
            if let sound = current.soundAt { finished.roundTripMs = Self.rounded(Double(sound &- recorded) / 1e6) }
        }
        if let streamEnd = current.streamEndedAt, let playbackEnd = current.playbackEndedAt {
            // Negative when the sound ran out before the stream's last event (a `done` late).
            finished.streamEndToFinishedMs = Self.rounded((Double(playbackEnd) - Double(streamEnd)) / 1e6)
        }
        if let timings = summary?.timings, !timings.isEmpty { finished.serverTimings = timings }
        publish(finished)
        if !current.void, current.transcript != nil || isGreeting(current) {
            metrics.observe("practiced_reply_seconds", help: "From the request to the end of the reply's playback.",
                            seconds: Double(DispatchTime.now().uptimeNanoseconds - current.requestedAt) / 1e9)
        }
        move(to: .ready)
    }

    private func isGreeting(_ reply: Reply) -> Bool { if case .greeting = reply.kind { return true } else { return false } }

    /// Stops the current reply (barge-in, `playback.stop`, a new turn): the sound fades
    /// within a period, but the stream is not hung up. Upstream goes on producing a reply
    /// that was hung up, and a turn sent meanwhile comes back empty (traces 11–12) or
    /// carries pieces of the old reply; so the stream is read to its end silently, and the
    /// next upload waits for that end (``waitForDrain(of:then:)``).
    private func bargeIn(_ current: Reply) {
        current.feed.stop()
        reply = nil
        if current.accepted || isGreeting(current) {
            publish(Event.ReplyFinished.interrupted(turnId: current.turnID, greeting: isGreeting(current)))
        }
        if !isGreeting(current) { countTurn("interrupted") }
        guard !current.streamEnded else { return }
        if let older = draining {
            // One drain at a time: a reply stopped earlier and still streaming is hung up.
            hangUp(older)
        }
        draining = current
        current.drainStartedAt = DispatchTime.now().uptimeNanoseconds
        logger.info("reply stopped; its stream is read to its end before the next upload")
    }

    /// Hangs up a reply's stream (session closed, shutdown, a drain past its deadline). The
    /// backend may then answer the next turn empty: it is marked as after an interruption.
    private func hangUp(_ current: Reply) {
        current.feed.stop()
        current.stream?.cancel()
        if !current.streamEnded { interrupted = true }
    }

    /// Hangs up the reply and a drained one, and drops an upload waiting for the drain.
    private func hangUpStreams() {
        if let reply {
            hangUp(reply)
            self.reply = nil
        }
        if let draining {
            hangUp(draining)
            self.draining = nil
        }
        waitingStart = nil
        drainToken += 1
    }

    /// The backend has the turn: it leaves the spool and is never sent again.
    private func turnAccepted(_ id: String) {
        do { try spool?.remove(id) } catch { logger.error("turn \(id) answered but not removed from the spool: \(error)") }
        publish(Event.TurnAccepted(turnId: id, attempt: delivery?.turn.id == id ? delivery?.attempt ?? 1 : 1))
        if delivery?.turn.id == id { delivery = nil }
        session?.turns += 1
        publishState()
    }

    /// A drained reply's stream: nothing reaches the speaker or the clients but the spool's
    /// bookkeeping; its end lets the waiting upload go.
    private func drainNote(_ note: StreamNote, for current: Reply) {
        switch note {
        case .accepted:
            current.accepted = true
            if let id = current.turnID { turnAccepted(id) }
        case .finished(let result):
            switch result {
            case .success(let summary): current.summary = summary
            case .failure(let error): current.failure = error
            }
            drainEnded(current, timedOut: false)
        default:
            break
        }
    }

    private func drainEnded(_ current: Reply, timedOut: Bool) {
        guard current === draining else { return }
        draining = nil
        let waited = Double(DispatchTime.now().uptimeNanoseconds &- (current.drainStartedAt ?? 0)) / 1e6
        if timedOut { hangUp(current) }
        if let id = current.turnID, !current.accepted {
            // The upload never got through: the turn stays in the spool, reported pending.
            publish(Event.TurnPending(turnId: id, reason: .interrupted, message: "the learner spoke again before it was sent"))
        }
        publish(Event.ReplyDrained(turnId: current.turnID, greeting: isGreeting(current), timedOut: timedOut,
                                   complete: current.summary?.sawDone ?? false, drainedMs: Self.rounded(waited)))
        drainToken += 1
        if let next = waitingStart {
            waitingStart = nil
            startReply(next)
        }
    }

    /// An upload that must not overlap the drained reply upstream waits for its end, at
    /// most ``SessionSettings/drainTimeout``.
    private func waitForDrain(of current: Reply, then kind: ReplyKind) {
        waitingStart = kind
        drainToken += 1
        let token = drainToken
        let turnID: String? = { if case .turn(let id) = kind { return id } else { return nil } }()
        publish(Event.ReplyWaiting(turnId: turnID, reason: "previous_reply_draining", timeoutS: settings.drainTimeout))
        queue.asyncAfter(deadline: .now() + settings.drainTimeout) { [self] in
            guard token == drainToken, current === draining else { return }
            logger.warning("a stopped reply's stream did not end within \(settings.drainTimeout) s; hung up")
            drainEnded(current, timedOut: true)
        }
    }

    /// `playback.stop` from a client: barge-in without a new turn.
    public func stopPlayback() -> Bool {
        queue.sync {
            guard let current = reply, stage == .replying || stage == .greeting else { return false }
            bargeIn(current)
            move(to: .ready)
            return true
        }
    }

    /// The player's events (playback thread).
    public func playerEvent(_ event: PlayerEvent) {
        let now = DispatchTime.now().uptimeNanoseconds
        queue.async { [self] in
            guard let current = reply else { return }
            switch event {
            case .started(_, let number):
                guard current.feed.owns(number) else { return }
                current.soundStarted = true
                current.soundAt = now
                if let first = current.firstAudioAt {
                    observe("practiced_first_audio_to_sound_seconds", "From the reply's first audio event to its first sample on the device.", since: first, now: now)
                }
                if let recordedAt = current.recordedAt {
                    observe("practiced_turn_round_trip_seconds", "From the end of the turn to the reply's first sample on the device.", since: recordedAt, now: now)
                }
                publish(Event.ReplyAudioStarted(turnId: current.turnID))
                releaseText(current)
            case .finished(let report):
                guard current.feed.owns(report.reply) else { return }
                current.playback = report
                current.playbackEndedAt = now
                releaseText(current)
                finishIfDone(current)
            case .underrun:
                break
            }
        }
    }

    private func observe(_ name: String, _ help: String, since start: UInt64, now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        metrics.observe(name, help: help, seconds: Double(now &- start) / 1e9)
    }

    // MARK: - Ending and review

    private static let closedMeanwhile = ControlError(.invalidState, "the session was closed meanwhile")
    private static let noSession = ControlError(.invalidState, "no session")

    private func endTalk(_ reply: CommandReply<Command.SessionEnd>) {
        guard let session else { return reply.fail(Self.noSession) }
        move(to: .ending)
        let epoch = epoch
        call({ backend async throws(BackendError) in try await backend.endTalk(sessionID: session.id) }) { [self] result in
                guard epoch == self.epoch else { return reply.fail(Self.closedMeanwhile) }
                switch result {
                case .success(let ended):
                    publish(Event.SessionEnded(sessionId: session.id, status: "\(ended.status)", mode: session.mode))
                    reply.succeed(.init(status: "\(ended.status)", mode: session.mode))
                    if session.mode == .review || ended.status == .ended {
                        close(reason: "review mode ended")
                    } else {
                        move(to: .reviewing)
                        startPolling(finishing: false)
                    }
                case .failure(let error):
                    if error.isSessionGone {
                        fail("session_gone", error: "\(error)")
                    } else {
                        publish(Event.SessionEndFailed(message: "\(error)"))
                        move(to: .ready)
                    }
                    reply.fail(Self.controlError(error))
                }
        }
    }

    private func startPolling(finishing: Bool) {
        poll.token += 1
        poll.polls = 0
        poll.errors = 0
        poll.started = DispatchTime.now().uptimeNanoseconds
        // The first look comes at once; the backend often has something after one interval.
        schedulePoll(after: finishing ? settings.pollInterval : 0, finishing: finishing)
    }

    private func schedulePoll(after delay: Double, finishing: Bool) {
        let token = poll.token
        queue.asyncAfter(deadline: .now() + delay) { [self] in
            guard token == poll.token, let session else { return }
            call({ backend async throws(BackendError) in try await backend.review(sessionID: session.id) }) { [self] result in
                guard token == poll.token else { return }
                polled(result, finishing: finishing)
            }
        }
    }

    private func polled(_ result: Result<Review, BackendError>, finishing: Bool) {
        poll.polls += 1
        switch result {
        case .success(let fetched):
            poll.errors = 0
            review = fetched
            let marks = fetched.segments.reduce(0) { $0 + $1.aiMarks.count }
            publish(Event.ReviewProgress(polls: poll.polls, finishing: finishing, status: "\(fetched.status)", segments: fetched.segments.count,
                                         marks: marks, summary: fetched.summary != nil))
            if !finishing, fetched.hasMarks || fetched.status != .reviewing {
                poll.token += 1
                publish(Event.ReviewReady(review: fetched))
                return move(to: .reviewed)
            }
            if fetched.status == .completed {
                // Whatever was asked, a session the server says is completed is completed.
                return completed(fetched, note: nil)
            }
        case .failure(let error):
            if error.isSessionGone { return fail("session_gone", error: "\(error)") }
            poll.errors += 1
            publish(Event.ReviewProgress(polls: poll.polls, finishing: finishing, error: "\(error)", errorsInARow: poll.errors))
            if poll.errors >= settings.pollErrorLimit {
                poll.token += 1
                logger.warning("review polling gave up after \(poll.errors) errors in a row: \(error)")
                let message = "gave up after \(poll.errors) errors in a row: \(error)"
                if finishing { publish(Event.ReviewFinishFailed(message: message)) } else { publish(Event.ReviewFailed(message: message)) }
                return move(to: .reviewed)
            }
        }
        if finishing, Double(DispatchTime.now().uptimeNanoseconds - poll.started) / 1e9 > settings.finishTimeout {
            poll.token += 1
            publish(Event.ReviewFinishFailed(message: "no summary after \(Int(settings.finishTimeout)) s"))
            return move(to: .reviewed)
        }
        schedulePoll(after: settings.pollInterval, finishing: finishing)
    }

    private func fetchReview(_ reply: CommandReply<Command.ReviewGet>) {
        guard let session else { return reply.fail(Self.noSession) }
        call({ backend async throws(BackendError) in try await backend.review(sessionID: session.id) }) { [self] result in
                switch result {
                case .success(let fetched):
                    if session.id == self.session?.id { review = fetched }
                    reply.succeed(.init(review: fetched, stale: false, error: nil))
                case .failure(let error):
                    if let review, session.id == self.session?.id {
                        reply.succeed(.init(review: review, stale: true, error: "\(error)"))
                    } else {
                        reply.fail(Self.controlError(error))
                    }
                }
        }
    }

    private func askCorrection(segment: Int, message: String, _ reply: CommandReply<Command.CorrectionAsk>) {
        guard let session else { return reply.fail(Self.noSession) }
        let request = CorrectionRequest(segmentId: segment, userMessage: message)
        call({ backend async throws(BackendError) in try await backend.requestCorrection(sessionID: session.id, request) }) { [self] result in
                switch result {
                case .success(let correction):
                    publish(Event.CorrectionAdded(correction: correction))
                    reply.succeed(correction)
                case .failure(let error):
                    publish(Event.CorrectionFailed(segmentId: segment, message: "\(error)"))
                    reply.fail(Self.controlError(error))
                }
        }
    }

    private func finishReview(_ reply: CommandReply<Command.ReviewFinish>) {
        guard let session else { return reply.fail(Self.noSession) }
        move(to: .finishing)
        let epoch = epoch
        call({ backend async throws(BackendError) in try await backend.endSession(sessionID: session.id) }) { [self] result in
                guard epoch == self.epoch else { return reply.fail(Self.closedMeanwhile) }
                switch result {
                case .success(let ended):
                    reply.succeed(.init(status: "\(ended.status)", note: nil))
                    startPolling(finishing: ended.status != .completed)
                    if ended.status == .completed { schedulePoll(after: 0, finishing: true) }
                case .failure(let error) where error.status == 400:
                    // "Session already completed" (trace 28), after a finish whose polling
                    // failed: the server's word decides, read from its review.
                    confirmCompletion(after: error, reply)
                case .failure(let error):
                    if error.isSessionGone { fail("session_gone", error: "\(error)") } else {
                        publish(Event.ReviewFinishFailed(message: "\(error)"))
                        move(to: .reviewed)
                    }
                    reply.fail(Self.controlError(error))
                }
        }
    }

    /// The session is completed on the server: its review and summary go out, the stage
    /// follows. `note` explains a summary that could not be read.
    private func completed(_ review: Review?, note: String?) {
        poll.token += 1
        if let review { self.review = review }
        let text = note ?? (review?.summary == nil ? "no summary" : "summary ready")
        publish(Event.SessionCompleted(sessionId: session?.id, summary: review?.summary, note: text, review: review))
        move(to: .completed)
    }

    /// `POST /end` was refused (400): if the session is completed on the server, it is
    /// completed here too; otherwise the finish failed and can be tried again.
    private func confirmCompletion(after refusal: BackendError, _ reply: CommandReply<Command.ReviewFinish>) {
        guard let session else { return reply.fail(Self.noSession) }
        let epoch = epoch
        call({ backend async throws(BackendError) in try await backend.review(sessionID: session.id) }) { [self] result in
            guard epoch == self.epoch else { return reply.fail(Self.closedMeanwhile) }
            switch result {
            case .success(let fetched) where fetched.status == .completed:
                logger.notice("session \(session.id) is already completed on the server (\(refusal))")
                reply.succeed(.init(status: "completed", note: "already completed"))
                completed(fetched, note: nil)
            case .failure(let error) where "\(refusal)".contains("already completed"):
                // The server said so; a review that cannot be read must not keep the learner here.
                logger.warning("session \(session.id) completed, but its review cannot be read: \(error)")
                reply.succeed(.init(status: "completed", note: "already completed"))
                completed(nil, note: "summary unavailable: \(error)")
            default:
                publish(Event.ReviewFinishFailed(message: "\(refusal)"))
                move(to: .reviewed)
                reply.fail(Self.controlError(refusal))
            }
        }
    }

    // MARK: - Topics and profile

    /// A cached answer: fresh, or the last one kept (stale, with its age and the error).
    struct Cached<T: Sendable>: Sendable {
        var value: T
        var stale: Bool
        var age: Double?
        var error: String?
    }

    /// Asks the backend; keeps the answer per user; offline, answers the last one kept,
    /// marked stale with its age. `offline: false` for calls that change something.
    private func cached<T: Codable & Sendable>(_ name: String, offline: Bool = true, fetch: @escaping @Sendable (BackendClient) async throws(BackendError) -> T,
                                               _ done: @escaping @Sendable (Result<Cached<T>, ControlError>) -> Void) {
        let user = settings.userID
        let cache = cache
        call(fetch) { result in
            switch result {
            case .success(let value):
                cache.store(ProtocolEncoder.encode(value), name: name, user: user)
                done(.success(Cached(value: value, stale: false)))
            case .failure(let error):
                let unreachable = Self.controlError(error).code == .backendUnavailable
                if offline, unreachable, let entry = cache.load(name: name, user: user),
                   let value = try? ProtocolDecoder.decode(T.self, from: entry.value) {
                    done(.success(Cached(value: value, stale: true, age: entry.age.rounded(), error: "\(error)")))
                } else {
                    done(.failure(Self.controlError(error)))
                }
            }
        }
    }

    /// Runs a backend call off the queue and hands its result back on the queue.
    private func call<T: Sendable>(_ body: @escaping @Sendable (BackendClient) async throws(BackendError) -> T,
                                   then: @escaping @Sendable (Result<T, BackendError>) -> Void) {
        let backend = backendProvider()
        Task { [queue] in
            let result: Result<T, BackendError>
            do throws(BackendError) { result = .success(try await body(backend)) } catch { result = .failure(error) }
            queue.async { then(result) }
        }
    }

    // MARK: - Shutdown

    /// SIGTERM, first half: nothing new starts, streams are hung up; a turn being recorded
    /// is ended by the recorder's stop and spooled (``finishShutdown()``).
    public func beginShutdown() {
        queue.sync {
            stopping = true
            poll.token += 1
            hangUpStreams()
            if let delivery { logger.notice("turn \(delivery.turn.id) stays in the spool for the next start") }
            delivery = nil
        }
    }

    /// SIGTERM, second half: waits for the turn the recorder handed over on stop.
    public func finishShutdown() { queue.sync {} }

    // MARK: - Helpers

    private func spoolEntry(_ turn: SpooledTurn) -> SpoolEntry { SpoolEntry(turn, sending: delivery?.turn.id == turn.id) }

    static func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

    /// `backend_unavailable` only when nothing answered; an answered error (a 500 too) is
    /// `backend_error` with its status.
    public static func controlError(_ error: BackendError) -> ControlError {
        switch error {
        case .transport, .timedOut:
            return ControlError(.backendUnavailable, "\(error)", retryable: true)
        case .cancelled:
            return ControlError(.backendUnavailable, "cancelled", retryable: true)
        case .http(let status, _):
            return ControlError(.backendError, "\(error)", retryable: status >= 500 || status == 408 || status == 429, status: status)
        case .validation:
            return ControlError(.backendError, "\(error)", status: 422)
        case .invalidResponse:
            return ControlError(.backendError, "\(error)")
        }
    }
}

/// The daemon runs without a spool (`spool.required = false`): every turn says so.
struct SpoolUnavailable: Error, CustomStringConvertible {
    var reason: String
    var description: String { "no spool (\(reason)); the turn is sent from memory only and is lost if the daemon stops" }
}

extension Optional {
    /// The value, or `error` thrown.
    func orThrow<E: Error>(_ error: E) throws(E) -> Wrapped {
        guard let self else { throw error }
        return self
    }
}
