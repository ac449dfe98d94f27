import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeNet
import PracticeProtocol
import PracticeSupport

/// How cue practice behaves (from the daemon's configuration).
public struct CueSettings: Sendable, Equatable {
    public var count = 5
    public var bitRate = 48_000
    public var pollInterval = 2.0
    public var resultAttempts = 3
    /// The longest a transcript or evaluation is waited for (the backend's own supervisor
    /// waits 2 × 300 s).
    public var resultTimeout = 600.0
    /// An upload that failed for now is tried again after 1, 2, 4 … s (each ±20 %), at most
    /// this long.
    public var maximumRetryDelay = 60.0

    public init() {}
}

/// Cue practice on the Chatterbox backend: the learner signs in at the kiosk, picks a cue
/// card, records an answer, and gets its transcript and evaluation back. It shares the
/// daemon's microphone (the recorder's speech gate, endpointing and pre-roll), speaker,
/// spool, events and socket with the conversation; it registers its commands in the daemon's
/// table (``register(into:)``), each run on its queue.
///
/// - The learner: sign-in (a mailed 6-digit code, or a magic link's token), the tokens
///   (``ChatterboxTokenStore``), the profile and language, the cue cards (kept for offline).
/// - An answer: recorded, gated, spooled as AAC-LC (``CueSpool``) before anything is sent,
///   then walked to the backend (``AnswerDelivery``) and its results followed
///   (``ResultPolling``), as a conversation's turn goes through ``TurnDelivery`` and its
///   review through ``ReviewPolling``.
///
/// Threads: state lives on `queue`, the pieces' too (``CueContext``); a backend call leaves
/// it and its answer comes back to it (``CueContext/call(_:then:)``); waits are the
/// scheduler's timers.
public final class CuePractice: CueContext, @unchecked Sendable {
    public let queue = DispatchQueue(label: "practiced.cue")
    let client: @Sendable () -> ChatterboxClient
    let audio: any SessionAudio
    let publisher: EventPublisher
    let logger: Logger
    let metrics: Metrics
    let cache: OfflineCache
    /// Plays a downloaded recording through the daemon's `play` (its duration, or why not).
    let play: @Sendable (_ path: String, _ rate: Double, @escaping @Sendable (Result<Double, ControlError>) -> Void) -> Void
    let stateDirectory: String
    private(set) var settings: CueSettings

    /// Cue practice's clock and timers (a test's moves by hand).
    let scheduler: any PracticeClock

    // Queue only.
    var learner = LearnerState()
    var stage = CuePracticeState.Stage.ready
    var recording: (number: UInt64, cueId: Int)?
    /// Answers on their way to the backend, and the spool they wait in.
    /// The visit ended while an answer was being uploaded: its end waits for the upload
    /// (``windDownVisit()``, called again as each upload settles).
    var visitEnding: (forget: VisitIdentity, done: @Sendable () -> Void)?
    private(set) var delivery: AnswerDelivery!
    /// Recordings whose results are followed.
    private(set) var results: ResultPolling!
    /// What other threads may read, under the flow's one lock: the learner as `status` shows
    /// it, and whether an answer is being recorded (the devices stay open for it). Copies of
    /// the queue's own state, written where that changes.
    private let published = Locked<(learner: LearnerState, recording: Bool)>((LearnerState(), false))

    public convenience init(settings: CueSettings, client: @escaping @Sendable () -> ChatterboxClient, audio: any SessionAudio, spoolDirectory: String,
                            stateDirectory: String, metrics: Metrics, logger: Logger,
                            play: @escaping @Sendable (_ path: String, _ rate: Double, @escaping @Sendable (Result<Double, ControlError>) -> Void) -> Void,
                            publish: @escaping EventPublisher) {
        self.init(settings: settings, client: client, audio: audio, spoolDirectory: spoolDirectory, stateDirectory: stateDirectory,
                  metrics: metrics, logger: logger, scheduler: DispatchClock(), play: play, publish: publish)
    }

    init(settings: CueSettings, client: @escaping @Sendable () -> ChatterboxClient, audio: any SessionAudio, spoolDirectory: String,
         stateDirectory: String, metrics: Metrics, logger: Logger, scheduler: any PracticeClock,
         play: @escaping @Sendable (_ path: String, _ rate: Double, @escaping @Sendable (Result<Double, ControlError>) -> Void) -> Void,
         publish: @escaping EventPublisher) {
        self.settings = settings
        self.scheduler = scheduler
        self.client = client
        self.audio = audio
        self.metrics = metrics
        self.logger = logger
        self.play = play
        self.stateDirectory = stateDirectory
        publisher = publish
        cache = OfflineCache(stateDirectory: stateDirectory)
        results = ResultPolling(context: self)
        delivery = AnswerDelivery(context: self, spoolDirectory: spoolDirectory) { [unowned self] recording, cue in watch(recording, cue: cue) }
    }

    public func update(settings: CueSettings) { queue.async { self.settings = settings } }

    /// The learner for `status` (any thread).
    public var snapshot: LearnerState { published.withLock { $0.learner } }

    /// Whether an answer is being recorded (any thread).
    var isRecording: Bool { published.withLock { $0.recording } }

    /// At start: answers a previous run left are uploaded, the learner is read back.
    public func start() {
        queue.async { [self] in
            delivery.recover()
            if client().isSignedIn { refreshLearner { _ in } } else { delivery.pump() }
        }
    }

    // MARK: - Commands

    /// Registers the cue commands in `table`; each runs on the queue. The daemon routes
    /// them here only when its backend is Chatterbox (``CommandRoute/cue``).
    public func register(into table: CommandTable) {
        table.refuse(route: .session) { name in
            ControlError(.invalidState, "'\(name)' needs backend.kind = talkco (this daemon practises Chatterbox's cues)")
        }
        table.register(Command.SignInRequestCode.self, on: queue) { [unowned self] args, reply in
            let email = try Self.email(args.email)
            call({ try await $0.requestLoginCode(email: email) }) { reply($0.map { .init(sent: true) }) }
        }
        table.register(Command.SignInRequestLink.self, on: queue) { [unowned self] args, reply in
            let email = try Self.email(args.email)
            call({ try await $0.requestMagicLink(email: email) }) { reply($0.map { .init(sent: true) }) }
        }
        table.register(Command.SignInCode.self, on: queue) { [unowned self] args, reply in
            let email = try Self.email(args.email)
            let code = args.code.trimmed()
            guard !code.isEmpty, code.utf8.count <= 32, code.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw ControlError(.badArguments, "'code' is the code from the mail (letters and digits, up to 32)")
            }
            call({ try await $0.signIn(email: email, code: code) }) { [self] result in
                switch result {
                case .success: signedIn(email: email, reply)
                case .failure(let error): reply.fail(error)
                }
            }
        }
        table.register(Command.SignInLink.self, on: queue) { [unowned self] args, reply in
            let token = args.token.trimmed()
            guard !token.isEmpty, token.utf8.count <= 1_024, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw ControlError(.badArguments, "'token' is the link's token=… (printable ASCII, up to 1,024 bytes)")
            }
            call({ try await $0.signIn(magicToken: token) }) { [self] result in
                switch result {
                case .success: signedIn(email: nil, reply)
                case .failure(let error): reply.fail(error)
                }
            }
        }
        table.register(Command.SignOut.self, on: queue) { [unowned self] _, reply in
            client().signOut()
            signedOut(reason: "signed out")
            reply.succeed(learner)
        }
        table.register(Command.LearnerGet.self, on: queue) { [unowned self] _, reply in
            guard client().isSignedIn, learner.profileId == nil || learner.languages.isEmpty else { return reply.succeed(learner) }
            refreshLearner { reply($0) }
        }
        table.register(Command.LearnerLanguage.self, on: queue) { [unowned self] args, reply in
            guard let account = learner.accountId, client().isSignedIn else { throw ControlError(.signInRequired, "not signed in") }
            guard learner.languages.isEmpty || learner.languages.contains(args.language) else {
                throw ControlError(.badArguments, "'language' is one of \(learner.languages.joined(separator: ", "))")
            }
            let language = args.language
            call({ try await $0.setActiveProfile(accountID: account, languageCode: language) }) { [self] result in
                switch result {
                case .success(let choice):
                    learner.profileId = choice.profileId
                    learner.language = language
                    learnerChanged(reason: nil)
                    reply.succeed(learner)
                case .failure(let error):
                    reply.fail(error)
                }
            }
        }
        table.register(Command.CuesGet.self, on: queue) { [unowned self] args, reply in
            let profile = try profileID()
            let (count, shuffle) = (settings.count, args.shuffle ?? false)
            cached("cues-\(profile)", offline: !shuffle, fetch: { client in
                let cues = shuffle ? try await client.shuffleCues(profileID: profile, count: count) : try await client.cues(profileID: profile, count: count)
                return cues.map(Self.card)
            }) { reply($0.map { .init(cues: $0.value, stale: $0.stale, ageS: $0.age, error: $0.error) }) }
        }
        table.register(Command.CueGet.self, on: queue) { [unowned self] args, reply in
            let (profile, cue) = (try profileID(), args.cueId)
            cached("cue-\(profile)-\(cue)", fetch: { client in
                let detail = try await client.cue(profileID: profile, cueID: cue)
                return CueWithRecordings(cue: Self.card(detail.cue), recordings: (detail.cue.recordings ?? []).map { Self.summary($0, cue: detail.cue) })
            }) { reply($0.map { .init(cue: $0.value.cue, recordings: $0.value.recordings, stale: $0.stale, ageS: $0.age, error: $0.error) }) }
        }
        table.register(Command.CueRecord.self, on: queue) { [unowned self] args, reply in
            try startRecording(cue: args.cueId, handsFree: args.handsFree ?? false)
            reply.succeed(state())
        }
        table.register(Command.CueStop.self, on: queue) { [unowned self] _, reply in
            guard let recording else { throw ControlError(.invalidState, "no answer is being recorded") }
            if stage == .listening {
                drop(Event.CueDiscarded(cueId: recording.cueId, reason: .noSpeech))
            } else {
                _ = audio.record(.end)
            }
            reply.succeed(state())
        }
        table.register(Command.CueCancel.self, on: queue) { [unowned self] _, reply in
            guard let recording else { throw ControlError(.invalidState, "no answer is being recorded") }
            drop(Event.CueDiscarded(cueId: recording.cueId, reason: .cancelled))
            reply.succeed(state())
        }
        table.register(Command.CueHistory.self, on: queue) { [unowned self] args, reply in
            let profile = try profileID()
            let limit = args.limit ?? 20
            guard (1...200).contains(limit) else { throw ControlError(.badArguments, "'limit' is from 1 to 200") }
            call({ try await $0.history(profileID: profile) }) { result in
                reply(result.map { history in
                    .init(recordings: history.recordings.prefix(limit).map { Self.summary($0, cue: $0.cue) },
                          more: max(0, history.recordings.count - limit))
                })
            }
        }
        table.register(Command.CueResults.self, on: queue) { [unowned self] args, reply in
            let profile = try profileID()
            let id = args.recordingId
            call({ try await $0.history(profileID: profile) }) { [self] result in
                switch result {
                case .success(let history):
                    guard let recording = history.recordings.first(where: { $0.profileCueRecordingId == id }) else {
                        return reply.fail(ControlError(.badArguments, "no recording \(id) for this learner"))
                    }
                    watch(id, cue: recording.cueId)
                    reply.succeed(Self.summary(recording, cue: recording.cue))
                case .failure(let error):
                    reply.fail(error)
                }
            }
        }
        table.register(Command.CuePlay.self, on: queue) { [unowned self] args, reply in
            let rate = args.rate ?? 1
            guard rate.isFinite, Command.playbackRates.contains(rate) else {
                throw ControlError(.badArguments, "'rate' must be from \(Command.playbackRates.lowerBound) to \(Command.playbackRates.upperBound) (got \(rate))")
            }
            try playRecording(args.recordingId, rate: rate, reply)
        }
        table.register(Command.CueDiscard.self, on: queue) { [unowned self] args, reply in
            try delivery.discard(args.answerId)
            reply.succeed(.init(discarded: args.answerId))
        }
    }

    // MARK: - The learner

    static func email(_ text: String) throws(ControlError) -> String {
        let email = text.trimmed()
        guard email.utf8.count <= 254, email.contains("@"), !email.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw ControlError(.badArguments, "'email' is the learner's address")
        }
        return email
    }

    func profileID() throws(ControlError) -> Int {
        guard client().isSignedIn else { throw ControlError(.signInRequired, "not signed in") }
        guard let profile = learner.profileId else { throw ControlError(.invalidState, "no language chosen yet: learner.get or learner.language first") }
        return profile
    }

    private func signedIn(email: String?, _ reply: CommandReply<some ControlCommand>) {
        logger.notice("chatterbox: a learner signed in")
        delivery.signedIn()
        learner.email = email
        refreshLearner { result in
            switch result {
            case .success(let state): reply.send(.success(ProtocolEncoder.encode(state)))
            case .failure(let error): reply.send(.failure(error))
            }
        }
    }

    /// `app_config` (languages) → `me` → the active profile (made with the default
    /// language when the account has none), then the learner is told and uploads resume.
    func refreshLearner(_ done: @escaping @Sendable (Result<LearnerState, ControlError>) -> Void) {
        call({ client -> (ChatterboxAppConfig, ChatterboxMe, ChatterboxProfileChoice?) in
            let config = try await client.appConfig()
            let me = try await client.me()
            guard me.activeProfile == nil else { return (config, me, nil) }
            let language = config.defaultProfileLanguageCode ?? config.availableLanguageCodes.first ?? "en"
            return (config, me, try await client.setActiveProfile(accountID: me.account.accountId, languageCode: language))
        }) { [self] result in
            switch result {
            case .success(let (config, me, made)):
                learner.signedIn = true
                learner.languages = config.availableLanguageCodes
                learner.accountId = me.account.accountId
                learner.email = me.account.email ?? learner.email
                learner.profileId = made?.profileId ?? me.activeProfile?.profileId
                learner.language = me.activeProfile?.languageCode ?? config.defaultProfileLanguageCode
                learnerChanged(reason: nil)
                delivery.pump()
                done(.success(learner))
            case .failure(let error):
                done(.failure(error))
            }
        }
    }

    /// Sign-in is needed: the learner is forgotten (not the spooled answers).
    func signedOut(reason: String) {
        guard learner.signedIn || learner.accountId != nil else { return }
        logger.notice("chatterbox: sign-in needed (\(reason))")
        learner = LearnerState(languages: learner.languages)
        learnerChanged(reason: reason)
    }

    private func learnerChanged(reason: String?) {
        published.withLock { $0.learner = learner }
        publish(Event.SignInChanged(learner: learner, reason: reason))
    }

    // MARK: - Recording an answer

    private func startRecording(cue: Int, handsFree: Bool) throws(ControlError) {
        _ = try profileID()
        guard recording == nil else { throw ControlError(.invalidState, "an answer is being recorded: cue.stop or cue.cancel first") }
        guard let number = audio.startRecording(handsFree: handsFree) else {
            throw ControlError(.deviceError, "the microphone is not open", retryable: true)
        }
        recording = (number, cue)
        published.withLock { $0.recording = true }
        stage = handsFree ? .listening : .recording
        publish(Event.CueRecordingStarted(cueId: cue, handsFree: handsFree))
    }

    /// Hands-free: the recorder heard speech.
    public func speechStarted(recording number: UInt64?) {
        queue.async { [self] in
            if stage == .listening, let number, number == recording?.number { stage = .recording }
        }
    }

    /// The recorder could not go on (the microphone failed).
    public func captureFailed(_ message: String) {
        queue.async { [self] in
            guard let recording else { return }
            drop(Event.CueDiscarded(cueId: recording.cueId, reason: .deviceError, message: message), cancelRecorder: false)
        }
    }

    /// An answer came from the recorder (capture thread): gated, spooled, uploaded.
    public func recorded(_ turn: RecordedTurn) {
        queue.async { [self] in
            guard let current = recording, current.number == turn.recording else {
                logger.info("a cue answer of recording \(turn.recording) arrived after it was cancelled; dropped")
                return
            }
            forgetRecording()
            publish(Event.CueRecorded(cueId: current.cueId, durationS: rounded(turn.duration), speechS: rounded(turn.speechDuration),
                                      rms: turn.level.rms.rounded(), endReason: TurnEndReason(turn.endReason)))
            guard turn.holdsSpeech else {
                metrics.increment(.cueAnswers, "no_speech")
                return publish(Event.CueDiscarded(cueId: current.cueId, reason: .noSpeech, rms: turn.level.rms.rounded()))
            }
            delivery.keep(turn, cue: current.cueId, profile: learner.profileId)
        }
    }

    func drop(_ discarded: Event.CueDiscarded, cancelRecorder: Bool = true) {
        if cancelRecorder { _ = audio.record(.cancel) }
        forgetRecording()
        publish(discarded)
    }

    private func forgetRecording() {
        recording = nil
        published.withLock { $0.recording = false }
        stage = .ready
    }

    func state() -> CuePracticeState { CuePracticeState(stage: stage, cueId: recording?.cueId, pending: delivery.pending.count) }

    // MARK: - Helpers

    func publish(_ event: any ProtocolEvent) { publisher(event) }

    /// A command's backend call (``CueContext/call(_:then:)``); a call that finds sign-in
    /// needed tells the learner's clients.
    func call<T: Sendable>(_ body: @escaping @Sendable (ChatterboxClient) async throws -> T,
                           then: @escaping @Sendable (Result<T, ControlError>) -> Void) {
        call(body) { [self] (result: Result<T, ChatterboxError>) in
            if case .failure(.signInRequired(let why)) = result { signedOut(reason: why) }
            then(result.mapError(ControlError.init))
        }
    }

    /// Follows a recording's transcript, then its evaluation (``ResultPolling``).
    func watch(_ recordingID: Int, cue: Int) {
        guard let profile = learner.profileId else { return }
        results.watch(recordingID, cue: cue, profile: profile)
    }

    struct CueWithRecordings: Codable, Sendable {
        var cue: CueCard
        var recordings: [CueRecording]
    }

    /// A fresh answer kept per account for offline use; unreachable, the last one kept.
    private func cached<T: Codable & Sendable>(_ name: String, offline: Bool = true,
                                               fetch: @escaping @Sendable (ChatterboxClient) async throws -> T,
                                               _ done: @escaping @Sendable (Result<OfflineCache.Answer<T>, ControlError>) -> Void) {
        let user = "account-\(learner.accountId ?? 0)", cache = cache
        call(fetch) { done(cache.answer($0, name: name, user: user, offline: offline)) }
    }

    static func card(_ cue: ChatterboxCue) -> CueCard {
        CueCard(cueId: cue.cueId, title: cue.content.title, details: cue.content.details ?? "")
    }

    static func summary(_ recording: ChatterboxRecording, cue: ChatterboxCue?) -> CueRecording {
        CueRecording(recordingId: recording.profileCueRecordingId, cueId: recording.cueId, cueTitle: cue?.content.title,
                     createdAt: recording.createdAt, durationS: recording.file?.metadata?.duration.flatMap(Double.init),
                     transcriptStatus: CueResultStatus(rawValue: recording.report.status) ?? .none, transcript: recording.report.transcript,
                     evaluationStatus: CueResultStatus(rawValue: recording.report.evaluation.status) ?? .none,
                     evaluation: recording.report.evaluation.result)
    }
}
