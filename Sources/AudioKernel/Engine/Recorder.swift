import SpeechModels
import Synchronization

/// Records spoken turns from a capture device: push-to-talk (`beginTurn`/`endTurn`) and
/// hands-free (`listen`: the turn starts when speech starts, with the pre-roll before it,
/// and ends by itself after the hangover). It meters the input level and reports speech
/// start and stop. While the kiosk plays (``setPlaybackActive(_:)``) it does not treat the
/// kiosk's own voice as speech unless the input is declared echo-cancelled.
///
/// Half-duplex, nothing the microphone hears while the kiosk speaks can become speech, so
/// the capture device rests meanwhile (PulseAudio: the stream is corked) unless a turn is
/// being recorded, speech is going on, or a command waits: no period wakes the capture
/// thread or the sound server, and no level is reported. It listens again the moment the
/// kiosk falls silent or a command comes; the pre-roll never reaches back across the rest.
///
/// All audio work runs on the capture device's thread; commands from other threads pass
/// through a small inbox. Per period nothing is allocated; a turn's buffer is allocated
/// once when the turn starts, sized for the maximum turn.
public final class Recorder: @unchecked Sendable {
    public let configuration: RecorderConfiguration
    public let format: WAVFormat
    private let device: CaptureDevice?
    let onEvent: @Sendable (RecorderEvent) -> Void

    private enum Command { case begin(UInt64), end, cancel, listen(UInt64) }
    /// Numbers recordings across every recorder of the process (a recorder reopened on a
    /// new device never reuses one).
    private static let recordingsIssued = Atomic<UInt64>(0)
    /// What other threads hand the capture thread, under the recorder's one lock: the
    /// commands posted, and the player whose activity makes the recorder half-duplex.
    private struct Inbox {
        var commands: [Command] = []
        var player: StreamingPlayer?
        /// Models handed over after the recorder opened without them (``adopt(_:)``).
        var adoption: Adoption?
    }
    private let inbox = Locked(Inbox())
    private let playbackActive = Atomic<Bool>(false)

    // Capture-thread state.
    var detector: SpeechDetector
    /// Learned endpointing (nil: the level rule, ``SpeechDetector``'s hangover), or ``adopt(_:)``'s.
    var endpointing: LearnedEndpointing?
    var vadStream: VoiceActivityStream?
    /// Adopted models waiting for the turn in progress to end (capture thread).
    var pendingAdoption: Adoption?
    var endpointer: TurnEndpointer
    /// The number of the last question put to smart-turn (a late answer carries an older one).
    var question = 0
    /// What smart-turn's window leaves out at the next question, reserved once (the
    /// endpointer keeps at most 8 waited pauses).
    var omittedSpans: [(start: Int, end: Int)] = {
        var spans: [(start: Int, end: Int)] = []
        spans.reserveCapacity(8)
        return spans
    }()
    var lastFinishedProbability: Float?
    /// How long ago the speech ended when the last speech end was decided, in seconds (the
    /// turn's ``RecordedTurn/endWait``).
    var lastSpeechEndWait: Double?
    /// How long smart-turn took over its last answer, in seconds (``RecorderEvent/speechPaused(probability:waiting:after:)``).
    var lastAnswerSeconds = 0.0
    /// VAD speech in the turn being recorded, in samples: a turn with less holds no speech.
    var turnVADSpeechSamples = 0
    var preRoll: [Int16]
    var preRollEnd = 0  // absolute position of the sample after the newest
    /// The pre-roll's blocks beside the kiosk's voice predicted in them (a barge-in's start).
    let echoTrack: EchoResidueTrack
    /// The oldest absolute position the pre-roll may hand to a turn: where the input
    /// resumed after its last rest (what came before is another moment).
    private var preRollValidFrom = 0
    let preRollSamples: Int
    private var pending: [Command] = []
    enum Mode { case idle, listening, recording(handsFree: Bool) }
    var mode = Mode.idle
    /// The number of the recording the current (or next hands-free) turn answers.
    var recordingNumber: UInt64 = 0
    var turn: PagedBytes
    var turnLevel = SignalLevel.zero
    var turnSpeechOnset: Int?
    var turnSpeechSamples = 0
    var turnStartPosition = 0
    /// The absolute position after the last turn's last sample: no later turn's pre-roll
    /// reaches back before it (the same audio is never in two turns).
    var lastTurnEnd = 0
    private let maximumTurnSamples: Int
    private var meter = SignalLevel.zero
    private let meterInterval: Int

    /// A recorder on a capture device; call ``start()`` to open it.
    public convenience init(
        device name: AudioDeviceName, stream: AudioStreamConfiguration = AudioStreamConfiguration(),
        configuration: RecorderConfiguration = RecorderConfiguration(), endpointing: LearnedEndpointing? = nil,
        onEvent: @escaping @Sendable (RecorderEvent) -> Void
    ) throws(AudioError) {
        try self.init(device: CaptureDevice(name: name, configuration: stream), format: stream.format,
                      configuration: configuration, endpointing: endpointing, onEvent: onEvent)
    }

    /// A recorder fed by ``process(_:)`` directly (tests, offline processing).
    public convenience init(format: WAVFormat = .speech, configuration: RecorderConfiguration = RecorderConfiguration(),
                            endpointing: LearnedEndpointing? = nil, onEvent: @escaping @Sendable (RecorderEvent) -> Void) {
        self.init(device: nil, format: format, configuration: configuration, endpointing: endpointing, onEvent: onEvent)
    }

    private init(device: CaptureDevice?, format: WAVFormat, configuration: RecorderConfiguration,
                 endpointing: LearnedEndpointing?, onEvent: @escaping @Sendable (RecorderEvent) -> Void) {
        self.device = device
        self.endpointing = endpointing
        // The learned rule needs the recorder's speech format (24 kHz mono); another format
        // keeps the level rule.
        vadStream = endpointing.flatMap { e in
            format.channels == 1 ? try? VoiceActivityStream(model: e.vad, inputRate: format.sampleRate) : nil
        }
        endpointer = TurnEndpointer(configuration: endpointing?.configuration ?? TurnEndpointerConfiguration(),
                                    sampleRate: format.sampleRate)
        self.format = format
        self.configuration = configuration
        self.onEvent = onEvent
        let samplesPerMillisecond = format.sampleRate * format.channels / 1000
        detector = SpeechDetector(configuration: configuration.detector, sampleRate: format.sampleRate * format.channels)
        preRollSamples = configuration.preRollMilliseconds * samplesPerMillisecond
        // The ring also holds the detector's onset window (speech is confirmed up to that
        // long after its first loud block, where the turn starts) and a second more, so that
        // a `listen` sent once speech was heard (a UI re-arming, a round trip away) still
        // finds the first syllable with its whole pre-roll: 2.3 s, 110 KB at 24 kHz.
        let onsetWindow = max(configuration.detector.onsetWindowMilliseconds, configuration.detector.minimumSpeechMilliseconds,
                              configuration.detector.bargeInMinimumSpeechMilliseconds)
        let ringSize = preRollSamples + (onsetWindow + 1_000) * samplesPerMillisecond
        preRoll = [Int16](repeating: 0, count: ringSize)
        echoTrack = EchoResidueTrack(blockSamples: 10 * samplesPerMillisecond, capacityBlocks: ringSize / (10 * samplesPerMillisecond) + 1)
        maximumTurnSamples = configuration.detector.maximumTurnMilliseconds * samplesPerMillisecond
        meterInterval = max(1, configuration.levelIntervalMilliseconds * samplesPerMillisecond)
        pending.reserveCapacity(16)
        inbox.withLock { $0.commands.reserveCapacity(16) }
        // One buffer for every turn, reserved once for the longest: a fresh 2.9 MB block per
        // turn was allocated on the capture thread, and glibc's moving mmap threshold then
        // served it from the heap, which fragmented. Pages become resident only as written
        // and are given back when the turn has been handed over.
        turn = PagedBytes(capacity: WAVEncoder.headerSize + maximumTurnSamples * 2 + 9_600)
    }

    /// Opens the capture device; levels and speech events start flowing.
    public func start(onDeviceEvent: @escaping @Sendable (AudioDeviceEvent) -> Void = { _ in }) throws(AudioError) {
        try device?.start(onPeriod: { [unowned self] period in self.process(period) },
                          rest: { [unowned self] in self.restIsDue },
                          resumed: { [unowned self] in self.resumedAfterRest() },
                          onEvent: onDeviceEvent)
    }

    /// Closes the capture device. A turn in progress is ended as if released.
    public func stop() {
        device?.stop()
        if case .recording = mode { finishTurn(.released) }
        mode = .idle
    }

    /// The capture device's counters.
    public var deviceStatistics: AudioDeviceStatistics? { device?.statistics }

    /// The format the device runs at, once opened (the recorder gets PCM16 24 kHz mono whatever it is).
    public var deviceFormat: StreamFormat? { device?.deviceFormat }

    /// Samples processed so far (read it on the capture thread, e.g. in an event handler).
    public var samplesProcessed: Int { detector.position }

    // MARK: Commands (any thread)

    /// Push-to-talk: starts a turn now, with the pre-roll before it. Returns the recording's
    /// number, which its turn carries (``RecordedTurn/recording``).
    @discardableResult
    public func beginTurn() -> UInt64 { post(numbered: Command.begin) }
    /// Push-to-talk: ends the turn; the ``RecorderEvent/turn(_:)`` event follows.
    public func endTurn() { post(.end) }
    /// Drops the turn in progress (or stops listening) without a turn event.
    public func cancelTurn() { post(.cancel) }
    /// Hands-free: the next turn starts when speech starts and ends by itself. Returns the
    /// recording's number, which its turn carries.
    @discardableResult
    public func listen() -> UInt64 { post(numbered: Command.listen) }

    /// Whether speech may start while the kiosk speaks: the configuration's
    /// ``RecorderConfiguration/echoCancelledInput``, or else what the device says.
    public var inputIsEchoCancelled: Bool {
        configuration.echoCancelledInput ?? device?.inputIsEchoCancelled ?? false
    }

    /// Whether the kiosk is playing (half-duplex: no speech may start meanwhile), for a
    /// playback path that is not a ``StreamingPlayer``.
    public func setPlaybackActive(_ active: Bool) {
        playbackActive.store(active, ordering: .releasing)
        if !active { device?.wakeFromRest() }
    }

    /// Makes the recorder half-duplex against `player`: while it plays a reply, no speech may
    /// start (unless the input is echo-cancelled), and the input rests. Pass nil to stop
    /// following.
    public func follow(_ player: StreamingPlayer?) {
        let previous = inbox.withLock { inbox in
            defer { inbox.player = player }
            return inbox.player
        }
        if previous !== player { previous?.whenInactive(nil) }
        player?.whenInactive { [weak self] in self?.device?.wakeFromRest() }
        device?.wakeFromRest()
    }

    /// On the capture thread, between periods: whether the input may rest. Only while the
    /// kiosk speaks half-duplex, and never with a turn recording, speech going on (it may
    /// still become a turn) or a command waiting.
    private var restIsDue: Bool {
        guard !speechInProgress else { return false }
        if case .recording = mode { return false }
        guard playbackActive.load(ordering: .acquiring) || inbox.withLock({ $0.player?.isActive ?? false }),
              !inputIsEchoCancelled else { return false }
        return inbox.withLock { $0.commands.isEmpty }
    }

    /// Whether speech is going on by the rule in use.
    var speechInProgress: Bool { vadStream == nil ? detector.inSpeech : endpointer.inSpeech }

    /// On the capture thread, after a rest: the pre-roll starts again here, and the level
    /// meter's partial interval is dropped.
    func resumedAfterRest() {
        preRollValidFrom = preRollEnd
        meter = .zero
    }

    /// Posts a command that starts a recording, under a fresh number; the number.
    private func post(numbered command: (UInt64) -> Command) -> UInt64 {
        let number = Self.recordingsIssued.add(1, ordering: .relaxed).newValue
        post(command(number))
        return number
    }

    private func post(_ command: Command) {
        inbox.withLock { $0.commands.append(command) }
        device?.wakeFromRest()
    }

    /// Hands `adoption` to the capture thread, which installs it between turns.
    func post(_ adoption: Adoption) {
        inbox.withLock { $0.adoption = adoption }
        device?.wakeFromRest()
    }

    // MARK: Audio (capture thread)

    /// Processes one period of captured samples.
    public func process(_ period: UnsafeBufferPointer<Int16>) {
        inbox.withLock { inbox in
            pending.append(contentsOf: inbox.commands)
            inbox.commands.removeAll(keepingCapacity: true)
            if let adoption = inbox.adoption {
                pendingAdoption = adoption
                inbox.adoption = nil
            }
        }
        if pendingAdoption != nil { installAdoptedModels() }
        for command in pending { apply(command) }
        pending.removeAll(keepingCapacity: true)

        storePreRoll(period)
        let level = SignalLevel(measuring: period)
        meter.merge(level)
        if meter.sampleCount >= meterInterval {
            onEvent(.level(rmsDBFS: meter.rmsDBFS, peakDBFS: meter.peakDBFS))
            meter = .zero
        }

        let playing = kioskIsPlaying
        // The kiosk's voice as the microphone hears it, learned while it speaks alone.
        echoTrack.add(period, reference: playing && inputIsEchoCancelled ? followedEchoReference : nil, learning: !speechInProgress)
        let kiosk = playing && inputIsEchoCancelled ? kioskLevel : 0
        let decision = detector.process(level, speaker: !playing ? .silent : inputIsEchoCancelled ? .overEchoCancelledInput(kioskLevel: kiosk) : .halfDuplex)
        if case .recording = mode {
            appendToTurn(period, level: level)
        }
        if let vadStream {
            processLearned(period, stream: vadStream, playing: playing, kioskLevel: kiosk)
        } else {
            apply(decision)
        }
        // The maximum also cuts a push-to-talk turn.
        if case .recording = mode, (turn.count - WAVEncoder.headerSize) / 2 >= maximumTurnSamples {
            finishTurn(.maximumLength)
        }
    }

    /// Speech began at `onset`, by either rule: told, and a hands-free turn starts there.
    func speechBegan(at onset: Int) {
        switch mode {
        case .idle: onEvent(.speechStarted(recording: nil))
        case .listening, .recording: onEvent(.speechStarted(recording: recordingNumber))
        }
        if case .listening = mode {
            startTurn(from: bargeInStart(onset: onset), handsFree: true)
        }
        if case .recording = mode, turnSpeechOnset == nil { turnSpeechOnset = onset }
    }

    /// Speech ended at `end`, by either rule: told, and counted in the turn's speech.
    func speechEnded(at end: Int) {
        onEvent(.speechStopped)
        lastSpeechEndWait = Double(max(0, preRollEnd - end)) / Double(format.sampleRate * format.channels)
        if case .recording = mode, let onset = turnSpeechOnset {
            turnSpeechSamples += end - max(onset, turnStartPosition)
            turnSpeechOnset = nil
        }
    }

    /// The level rule's decision (``SpeechDetector``).
    private func apply(_ decision: SpeechDetector.Decision) {
        switch decision {
        case .none:
            break
        case .speechStarted(let onset):
            speechBegan(at: onset)
        case .speechEnded(let end), .maximumReached(let end):
            speechEnded(at: end)
            if case .recording(let handsFree) = mode, handsFree {
                if case .maximumReached = decision { finishTurn(.maximumLength) } else { finishTurn(.endOfSpeech) }
            }
        }
    }

    /// Whether the kiosk is playing (read on the capture thread).
    var kioskIsPlaying: Bool {
        playbackActive.load(ordering: .relaxed) || inbox.withLock { $0.player?.isActive ?? false }
    }

    /// How loud the followed player has been in the last half second (0 without one), what a
    /// barge-in is weighed against (read on the capture thread).
    private var kioskLevel: Double { inbox.withLock { $0.player?.outputLevel ?? 0 } }

    /// What the followed player handed its device (nil without one).
    private var followedEchoReference: EchoReference? { inbox.withLock { $0.player?.echoReference } }

    private func apply(_ command: Command) {
        switch (command, mode) {
        case (.begin(let number), .recording), (.listen(let number), .recording):
            // The turn in progress goes on, and now answers the newest request.
            recordingNumber = number
        case (.end, .idle), (.end, .listening):
            break
        case (.begin(let number), _):
            recordingNumber = number
            startTurn(from: detector.position - preRollSamples, handsFree: false)
            if speechInProgress { turnSpeechOnset = detector.position }
        case (.listen(let number), _):
            recordingNumber = number
            mode = .listening
            // The learner began a moment before listening was asked for (the kiosk re-arms
            // after its reply, a round trip through the UI): while the speech's first
            // syllable is still in the ring, the turn starts there, with what pre-roll is
            // left. Otherwise the speech in progress is let go and the next one is the turn.
            // Not while the kiosk speaks: that speech was heard under the quiet kiosk's rule,
            // and a listen under a reply (barge-in over an echo-cancelled input) must hear
            // speech start under the barge-in's stricter one.
            let onsetInProgress = vadStream == nil ? detector.onsetOfSpeechInProgress : endpointer.onsetOfSpeechInProgress
            if !kioskIsPlaying, let onset = onsetInProgress, onset >= oldestHeldPosition {
                onEvent(.speechStarted(recording: number, again: true))
                startTurn(from: onset - preRollSamples, handsFree: true)
                turnSpeechOnset = onset
            }
        case (.end, .recording):
            finishTurn(.released)
        case (.cancel, _):
            mode = .idle
            turn.removeAll()
            detector.reset()
            endpointer.reset()
        }
    }

    /// Copies the period into the ring in at most two contiguous runs (as `startTurn` reads
    /// it), not sample by sample: this runs on every capture period.
    private func storePreRoll(_ period: UnsafeBufferPointer<Int16>) {
        let size = preRoll.count
        var copied = 0
        preRoll.withUnsafeMutableBufferPointer { ring in
            while copied < period.count {
                let start = (preRollEnd + copied) % size
                let run = min(period.count - copied, size - start)
                _ = UnsafeMutableBufferPointer(rebasing: ring[start..<(start + run)])
                    .update(fromContentsOf: UnsafeBufferPointer(rebasing: period[copied..<(copied + run)]))
                copied += run
            }
        }
        preRollEnd += period.count
    }

    /// The oldest absolute position a turn may start at: what the ring still holds, since
    /// the input's last rest, after the last turn.
    var oldestHeldPosition: Int { max(0, preRollEnd - preRoll.count, preRollValidFrom, lastTurnEnd) }

    /// Starts a turn whose first sample is at absolute position `from` (clamped to what the
    /// pre-roll ring still holds); the samples up to now come from the ring.
    func startTurn(from: Int, handsFree: Bool) {
        let first = max(from, oldestHeldPosition)
        turn.removeAll()
        turn.appendZeros(WAVEncoder.headerSize)
        turnLevel = .zero
        turnSpeechSamples = 0
        turnVADSpeechSamples = 0
        turnSpeechOnset = nil
        turnStartPosition = first
        mode = .recording(handsFree: handsFree)
        let size = preRoll.count
        // The ring is copied in at most two contiguous runs.
        var position = first
        while position < preRollEnd {
            let start = position % size
            let run = min(preRollEnd - position, size - start)
            preRoll.withUnsafeBufferPointer { ring in
                appendToTurn(UnsafeBufferPointer(rebasing: ring[start..<(start + run)]), level: nil)
            }
            position += run
        }
    }

    private func appendToTurn(_ samples: UnsafeBufferPointer<Int16>, level: SignalLevel?) {
        turnLevel.merge(level ?? SignalLevel(measuring: samples))
        #if _endian(little)
        turn.append(UnsafeRawBufferPointer(samples))
        #else
        for s in samples { withUnsafeBytes(of: s.littleEndian) { turn.append($0) } }
        #endif
    }
}
