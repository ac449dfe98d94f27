import Synchronization

/// Plays a reply's PCM16 audio as its chunks arrive from the network.
///
/// The network side calls ``beginReply()``, then ``enqueue(_:)`` with chunks of any size (an
/// odd trailing byte is carried to the next chunk), then ``endReply()``. Each chunk is
/// converted to Float32 by the vectorised kernel as it arrives; everything after that is
/// Float32: the ring, the fade, and on the device thread the device's converter
/// (resampling, channel mapping, the device's sample format). Samples cross to the device
/// thread through a lock-free ring. The device thread starts a reply after its lead
/// (``JitterLead``), fills an underrun with silence (counted and reported) and continues
/// when data comes, and reports `finished` only once the device has drained the last
/// sample. ``stop()`` (barge-in, void turn) takes effect within one period with a short
/// linear fade-out, then flushes everything queued; ``beginReply()`` never waits for that:
/// the device thread fades the old reply out and plays the new one after it
/// (``PlaybackLayer``). A clip can be mixed over the reply (``beginMix()``, ``MixLayer``).
///
/// Nothing on the per-chunk or per-period path allocates.
public final class StreamingPlayer: @unchecked Sendable {
    public let configuration: StreamingPlayerConfiguration
    public let format: WAVFormat
    let device: PlaybackDevice?
    private let onEvent: @Sendable (PlayerEvent) -> Void
    /// The reply's ring and flags, shared by the network side and the device thread.
    let reply: PlaybackLayer
    var ring: RingBuffer<Float> { reply.ring }

    /// The reply's network side: chunks converted and queued, their lateness measured.
    let intake: ReplyIntake

    private let playedSamples = Atomic<Int>(0)
    private let inactiveObserver = Locked<(@Sendable () -> Void)?>(nil)

    // Device-thread state.
    private enum State {
        case idle, prebuffering(waited: Int), playing, draining(left: Int, interrupted: Bool)
        /// Silence after an underrun: `starved` samples so far, `grown` once the gap is
        /// known (data came again) and the target lead was raised to cover it.
        case rebuffering(starved: Int, grown: Bool)
    }
    private var state = State.idle
    private var seenGeneration = 0
    private var startedReported = false
    private var underruns = 0
    private var fade: StopFade?
    private let fadeSamples: Int
    /// The adaptive jitter buffer: it outlives a reply, because the network's jitter does.
    private var lead: JitterLead
    private var replyLead = 0
    /// The reply playing is all at hand (``beginReply(rate:immediate:)``).
    private var replyImmediate = false
    /// The target lead, published for ``leadSeconds``.
    private let publishedLead = Atomic<Int>(0)

    /// The level clients set (bits of a Float), and the device thread's gain moving toward it.
    private let volumeBits = Atomic<UInt32>(Float(1).bitPattern)
    private var volumeRamp: VolumeRamp

    private(set) var mix: MixLayer!
    /// How loud the kiosk has been in the last half second (``outputLevel``).
    private let envelope: OutputEnvelope
    /// What was handed to the device, 10 ms a block, for the recorder's residual-echo estimate.
    let echoReference: EchoReference
    private let drainFallbackSamples: Int

    /// A player on a playback device; call ``start()`` to open it.
    public convenience init(
        device name: AudioDeviceName, stream: AudioStreamConfiguration = AudioStreamConfiguration(),
        configuration: StreamingPlayerConfiguration = StreamingPlayerConfiguration(),
        onEvent: @escaping @Sendable (PlayerEvent) -> Void
    ) throws(AudioError) {
        try self.init(device: PlaybackDevice(name: name, configuration: stream), format: stream.format,
                      drainFallback: stream.bufferFrames + stream.periodFrames, configuration: configuration, onEvent: onEvent)
    }

    /// A player whose periods are pulled with ``render(into:)`` directly (tests); `clock`
    /// (monotonic nanoseconds) times the chunks' arrival.
    public convenience init(format: WAVFormat = .speech, configuration: StreamingPlayerConfiguration = StreamingPlayerConfiguration(),
                            clock: @escaping @Sendable () -> Int64 = Monotonic.now, onEvent: @escaping @Sendable (PlayerEvent) -> Void) {
        self.init(device: nil, format: format, drainFallback: 0, configuration: configuration, clock: clock, onEvent: onEvent)
    }

    private init(device: PlaybackDevice?, format: WAVFormat, drainFallback: Int, configuration: StreamingPlayerConfiguration,
                 clock: @escaping @Sendable () -> Int64 = Monotonic.now, onEvent: @escaping @Sendable (PlayerEvent) -> Void) {
        self.device = device
        self.format = format
        self.configuration = configuration
        self.onEvent = onEvent
        let perMillisecond = format.sampleRate * format.channels / 1000
        lead = JitterLead(configuration: configuration, samplesPerMillisecond: perMillisecond)
        publishedLead.store(lead.target, ordering: .relaxed)
        fadeSamples = max(1, configuration.fadeMilliseconds * perMillisecond)
        volumeRamp = VolumeRamp(length: configuration.volumeRampMilliseconds * perMillisecond)
        drainFallbackSamples = drainFallback * format.channels
        envelope = OutputEnvelope(samplesPerSecond: 1000 * perMillisecond)
        echoReference = EchoReference(samplesPerSecond: 1000 * perMillisecond)
        reply = PlaybackLayer(capacity: configuration.capacitySeconds * 1000 * perMillisecond)
        intake = ReplyIntake(ring: reply.ring, sampleRate: format.sampleRate, channels: format.channels, clock: clock)
        mix = MixLayer(capacity: 8 * 1000 * perMillisecond, fadeSamples: fadeSamples, samplesPerSecond: 1000 * perMillisecond,
                       drainSamples: { [unowned self] in drainSamples() }, onEvent: onEvent,
                       becameInactive: { [unowned self] in notifyIfInactive() })
    }

    deinit { device?.stop() }

    /// Opens the device. Between sounds it is parked where the device can be (PulseAudio
    /// corks the stream), and plays silence otherwise.
    public func start(onDeviceEvent: @escaping @Sendable (AudioDeviceEvent) -> Void = { _ in }) throws(AudioError) {
        try device?.start(render: { [unowned self] buffer in self.render(into: buffer) },
                          idle: { [unowned self] in self.isIdleOnDeviceThread },
                          ready: { [unowned self] samples in self.hasSound(toRender: samples) },
                          onEvent: onDeviceEvent)
    }

    /// Whether the device has a clock: false for an unpaced WAV file, which takes a period
    /// only when there is one to give (``hasSound(toRender:)``). Then a sound starts without
    /// a lead and never runs dry: the device waits for its data instead of playing silence.
    private var devicePaced: Bool { device?.hasClock ?? true }

    /// On the device thread of a device without a clock: whether the next `samples` can be
    /// rendered without silence inside a sound (every layer that plays has them, or has
    /// ended), and at least one layer has something to do.
    func hasSound(toRender samples: Int) -> Bool {
        let reply = replyReadiness(samples)
        let mix = mix.readiness(samples)
        return reply != .waiting && mix != .waiting && (reply == .ready || mix == .ready)
    }

    private func replyReadiness(_ samples: Int) -> LayerReadiness {
        if reply.stopRequested.load(ordering: .acquiring) || fade != nil { return .ready }
        let enough = ring.availableToRead >= samples || reply.ended.load(ordering: .acquiring)
        if reply.generation.load(ordering: .acquiring) != seenGeneration {
            // The old reply still has its fade or drain to render first.
            if case .idle = state { return enough ? .ready : .waiting }
            return .ready
        }
        switch state {
        case .idle: return .idle
        case .draining: return .ready
        case .prebuffering, .playing, .rebuffering: return enough ? .ready : .waiting
        }
    }

    /// On the device thread, between periods: whether nothing plays nor is about to (no reply
    /// or clip begun, playing, fading or draining; no volume ramp). A reply or a clip begun
    /// wakes the device (``beginReply()``, ``beginMix()``), and says false here from then on.
    var isIdleOnDeviceThread: Bool {
        guard case .idle = state, fade == nil, seenGeneration == reply.generation.load(ordering: .acquiring),
              !reply.stopRequested.load(ordering: .acquiring) else { return false }
        return mix.isIdle && !volumeRamp.isMoving
    }

    /// Closes the device at once.
    public func shutdown() {
        device?.stop()
        inactiveObserver.withLock { $0 }?()
    }

    /// The format the device runs at, once opened.
    public var deviceFormat: StreamFormat? { device?.deviceFormat }

    /// The playback device's counters.
    public var deviceStatistics: AudioDeviceStatistics? { device?.statistics }

    /// Whether a reply or a mixed clip is playing (started and not yet finished): what a
    /// half-duplex microphone rests for.
    /// The loudest 20 ms the player handed its device in the last half second, in PCM16 RMS units
    /// (after the volume, the mixed clip included): what the recorder weighs a barge-in
    /// against (``OutputEnvelope``).
    public var outputLevel: Double { envelope.level }

    public var isActive: Bool { reply.active.load(ordering: .relaxed) || mix.layer.active.load(ordering: .relaxed) }

    /// Whether a reply is playing (a mixed clip aside): what voice barge-in listens over.
    public var isReplyActive: Bool { reply.active.load(ordering: .relaxed) }

    /// Calls `body` on the device thread each time the player falls silent (the reply and
    /// the mixed clip both finished): a resting microphone is woken then, without polling.
    public func whenInactive(_ body: (@Sendable () -> Void)?) { inactiveObserver.withLock { $0 = body } }

    private func notifyIfInactive() {
        guard !isActive else { return }
        inactiveObserver.withLock { $0 }?()
    }

    /// The volume, 0 to 1 (NaN counts as 1). A change is ramped over a few milliseconds on
    /// the device thread.
    public var volume: Float {
        get { Float(bitPattern: volumeBits.load(ordering: .relaxed)) }
        set {
            let level = newValue.isNaN ? 1 : min(max(newValue, 0), 1)
            volumeBits.store(level.bitPattern, ordering: .releasing)
            device?.wakeFromIdle()
        }
    }

    /// Seconds of the current (or last) reply handed to the device.
    public var position: Double { Double(playedSamples.load(ordering: .relaxed)) / Double(format.sampleRate * format.channels) }

    /// The jitter buffer's current target lead, in seconds: what the next reply waits for
    /// before its first sample.
    public var leadSeconds: Double { Double(publishedLead.load(ordering: .relaxed)) / Double(lead.samplesPerSecond) }

    // MARK: Network side (one thread at a time)

    /// Starts a new reply, at once. A reply still playing is faded out by the device thread
    /// first (a stop's fade, then the device's drain), and the new one plays after it; none
    /// of the new reply's samples is read by the old one's fade.
    ///
    /// - Returns: the reply's number, which its `started` and `finished` events carry (a
    ///   late event of a stopped reply is told apart from the new one's).
    /// - Parameters:
    ///   - rate: the reply's own playback rate (a replay's), or nil to play at
    ///     ``playbackRate`` as it is at each chunk. Checked by ``checkRate(_:)``.
    ///   - immediate: the whole sound is at hand (a replay from memory): it starts with its
    ///     first period, without the jitter buffer's lead, and teaches the lead nothing.
    @discardableResult
    public func beginReply(rate: Double? = nil, immediate: Bool = false) -> Int {
        let number = reply.beginNext(immediate: immediate) { intake.reset(rate: rate) }
        device?.wakeFromIdle()
        return number
    }

    /// The playback rate of replies without a rate of their own: 1.0 (the default) plays
    /// them as they come; 0.5 to 2.0 slows or speeds them at the same pitch
    /// (``TimeStretcher``), from a streaming reply's next chunk on. A player of more than one
    /// channel plays at 1.0 whatever is set.
    public var playbackRate: Double { Double(bitPattern: intake.playerRate.load(ordering: .relaxed)) }

    /// Sets ``playbackRate``; refuses NaN and anything outside ``TimeStretcher/rates``.
    public func setPlaybackRate(_ rate: Double) throws(TimeStretcher.Failure) {
        try Self.checkRate(rate)
        intake.playerRate.store(rate.bitPattern, ordering: .relaxed)
    }

    /// Whether `rate` is one the player plays at.
    public static func checkRate(_ rate: Double) throws(TimeStretcher.Failure) {
        guard rate.isFinite, TimeStretcher.rates.contains(rate) else { throw .unsupportedRate(rate) }
    }

    /// Samples that can be queued now without dropping any (a clip streamed from disk waits
    /// for room rather than holding the whole file).
    public var queueSpace: Int { ring.availableToWrite }

    /// Queues a chunk of PCM16 little-endian bytes of any length.
    ///
    /// - Returns: false when the queue was full and some audio was dropped.
    @discardableResult
    public func enqueue(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard reply.open.load(ordering: .acquiring), !bytes.isEmpty else { return true }
        defer { device?.soundArrived() }
        return intake.enqueue(bytes)
    }

    /// Queues a chunk of PCM16 little-endian bytes.
    @discardableResult
    public func enqueue(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { enqueue($0) } }

    /// Queues Float32 samples already in the player's format (a clip converted from its
    /// file's format by an ``InputConverter``).
    ///
    /// - Returns: false when the queue was full and some audio was dropped.
    @discardableResult
    public func enqueue(samples: UnsafeBufferPointer<Float>) -> Bool {
        guard reply.open.load(ordering: .acquiring), !samples.isEmpty else { return true }
        defer { device?.soundArrived() }
        return intake.enqueue(samples: samples)
    }

    /// No more chunks for this reply: `finished` follows when the device has played it all.
    public func endReply() {
        _ = intake.finish()
        reply.ended.store(true, ordering: .releasing)
        device?.soundArrived()
    }

    /// Stops the reply within one period, with a short fade-out, and drops what is queued
    /// and any chunk of this reply still to come (until the next ``beginReply()``).
    public func stop() {
        reply.stop()
        device?.soundArrived()
    }

    // MARK: Device side

    /// Fills `buffer` with the next Float32 samples for the device (any length; the device's
    /// converter asks for about one period at a time): the reply, the mixed clip over it,
    /// at the volume.
    public func render(into buffer: UnsafeMutableBufferPointer<Float>) {
        renderReply(into: buffer)
        mix.render(over: buffer)
        volumeRamp.apply(Float(bitPattern: volumeBits.load(ordering: .acquiring)), to: buffer)
        envelope.add(UnsafeBufferPointer(buffer))
        echoReference.add(UnsafeBufferPointer(buffer))
    }

    private func renderReply(into buffer: UnsafeMutableBufferPointer<Float>) {
        var readable = reply.readable(for: seenGeneration)
        if readable.superseded, case .idle = state {
            // Nothing of the old reply sounds: the new one starts now.
            reply.flush(seenGeneration)
            adoptReply()
            readable = reply.readable(for: seenGeneration)
        }
        let stopAsked = reply.stopRequested.load(ordering: .acquiring)
        if fade == nil, readable.superseded || stopAsked {
            switch state {
            case .prebuffering, .playing, .rebuffering: fade = StopFade(length: fadeSamples)
            case .idle where stopAsked: reply.stopRequested.store(false, ordering: .relaxed)
            default: break
            }
        }
        if var stopping = fade {
            // Fade what is queued (silence where nothing is), then flush the rest.
            let over = stopping.render(reply, seenGeneration, into: buffer)
            fade = stopping
            if over {
                fade = nil
                if !readable.superseded { reply.stopRequested.store(false, ordering: .relaxed) }
                state = .draining(left: drainSamples(), interrupted: true)
            }
            return
        }

        switch state {
        case .idle:
            buffer.update(repeating: 0)
        case .prebuffering(let waited):
            let available = readable.samples
            let ended = reply.ended.load(ordering: .acquiring)
            // Time since the first chunk, counted in rendered samples (the device's clock).
            let nowWaited = available > 0 ? waited + buffer.count : waited
            // Without a clock there is no network jitter to cover: start with the first period.
            let leadReached = devicePaced && !replyImmediate ? available >= lead.target && nowWaited > lead.target : available >= buffer.count
            if leadReached || (ended && available > 0) {
                state = .playing
                play(into: buffer, readable: available)
            } else if ended {
                // A reply with no audio at all.
                buffer.update(repeating: 0)
                finish(interrupted: false)
            } else {
                buffer.update(repeating: 0)
                state = .prebuffering(waited: nowWaited)
            }
        case .playing:
            play(into: buffer, readable: readable.samples)
        case .rebuffering(let starved, var grown):
            let available = readable.samples
            let ended = reply.ended.load(ordering: .acquiring)
            if available > 0, !grown {
                // The gap is known: the lead grows to cover it (``JitterLead/grow(afterGap:)``).
                grown = true
                lead.grow(afterGap: starved)
                publishedLead.store(lead.target, ordering: .relaxed)
            }
            // The silence inserted shifts the rest of the reply later by the new lead, so
            // one gap absorbs the network's jitter instead of a gap at every late burst.
            if (grown && available > 0 && (starved >= lead.target || !devicePaced)) || (ended && available > 0) {
                state = .playing
                play(into: buffer, readable: available)
            } else if ended {
                buffer.update(repeating: 0)
                state = .draining(left: drainSamples(), interrupted: false)
            } else {
                buffer.update(repeating: 0)
                state = .rebuffering(starved: starved + buffer.count, grown: grown)
            }
        case .draining(let left, let interrupted):
            buffer.update(repeating: 0)
            let remaining = left - buffer.count
            if remaining <= 0 { finish(interrupted: interrupted) } else { state = .draining(left: remaining, interrupted: interrupted) }
        }
    }

    /// The reply now numbered becomes the one this thread plays.
    private func adoptReply() {
        seenGeneration = reply.generation.load(ordering: .acquiring)
        state = .prebuffering(waited: 0)
        startedReported = false
        underruns = 0
        replyImmediate = reply.immediate.load(ordering: .relaxed)
        replyLead = replyImmediate ? 0 : lead.target
        fade = nil
        playedSamples.store(0, ordering: .relaxed)
        reply.active.store(true, ordering: .relaxed)
    }

    private func play(into buffer: UnsafeMutableBufferPointer<Float>, readable: Int) {
        let n = reply.read(into: buffer, limit: readable)
        if n > 0 {
            playedSamples.add(n, ordering: .relaxed)
            if !startedReported {
                startedReported = true
                onEvent(.started(latencyFrames: device?.statistics.latencyFrames ?? 0, reply: seenGeneration))
            }
        }
        if n < buffer.count {
            if reply.ended.load(ordering: .acquiring), ring.availableToRead == 0 {
                // The last sample is now on its way: wait until the device has played it.
                let left = drainSamples() - (buffer.count - n)
                if left <= 0 { finish(interrupted: false) } else { state = .draining(left: left, interrupted: false) }
            } else {
                underruns += 1
                lead.underran()
                state = .rebuffering(starved: buffer.count - n, grown: false)
                onEvent(.underrun(total: underruns))
            }
        } else {
            // Steady playback lets the lead shrink back, slowly.
            lead.playedSteadily(n)
            publishedLead.store(lead.target, ordering: .relaxed)
        }
    }

    /// Samples to render after the last one before it has been heard: the device's reported
    /// latency (in the engine's frames, converter included), or its buffer when it reports none.
    private func drainSamples() -> Int {
        if let latency = device?.statistics.latencyFrames { return max(latency * format.channels, 1) }
        return drainFallbackSamples
    }

    private func finish(interrupted: Bool) {
        state = .idle
        // A sound from memory had no network to wait for: the lead learns nothing from it.
        if !replyImmediate { lead.replyFinished(peakDelay: intake.peakDelay.load(ordering: .relaxed)) }
        publishedLead.store(lead.target, ordering: .relaxed)
        // A reply begun meanwhile plays next: the player does not fall silent in between.
        if !reply.readable(for: seenGeneration).superseded {
            reply.active.store(false, ordering: .relaxed)
            notifyIfInactive()
        }
        let report = PlaybackReport(playedSeconds: position, interrupted: interrupted, underruns: underruns, reply: seenGeneration,
                                    leadMilliseconds: lead.milliseconds(replyLead), nextLeadMilliseconds: lead.milliseconds(lead.target))
        onEvent(.finished(report))
    }
}
