import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Settings of the ``StreamingPlayer``.
public struct StreamingPlayerConfiguration: Hashable, Sendable {
    /// The jitter buffer: a reply starts once this much audio is queued *and* this long
    /// has passed since its first chunk arrived (or at once when the reply is complete).
    /// A backend that streams at exactly real time (as the practice backend does) gives
    /// a queue-size rule no lead at all when its first chunk is large; the time rule keeps
    /// this much lead for the whole reply.
    public var prebufferMilliseconds: Int = 50
    /// The adaptive jitter buffer's ceiling. After an underrun the lead a reply starts
    /// with (and rebuffers to) grows to cover the gap the network left, up to this; while
    /// replies play without one it shrinks back toward ``prebufferMilliseconds`` by
    /// ``leadDecayMillisecondsPerSecond`` per second played, as WebRTC's NetEQ lets its
    /// target delay forget old jitter.
    public var maximumLeadMilliseconds: Int = 500
    public var leadDecayMillisecondsPerSecond: Int = 4
    /// How far beyond the gap of an underrun the lead grows.
    public var leadStepMilliseconds: Int = 200
    /// The fade-out of `stop` (barge-in, void turn): short enough to feel instant, long
    /// enough not to click.
    public var fadeMilliseconds: Int = 20
    /// The most audio queued ahead of the device; a reply arriving faster than real time
    /// is held up to this much.
    public var capacitySeconds: Int = 120
    /// How long a volume change takes: a step in gain clicks ("zipper noise"); a ramp this
    /// long is heard as a smooth change.
    public var volumeRampMilliseconds: Int = 30

    public init() {}
}

/// How a reply's playback ended.
public struct PlaybackReport: Equatable, Sendable {
    /// Seconds of the reply that were played.
    public var playedSeconds: Double
    /// Whether `stop` cut it short.
    public var interrupted: Bool
    /// Underruns during the reply (the network was late; silence was played).
    public var underruns: Int
    /// The number ``StreamingPlayer/beginReply()`` returned for the reply.
    public var reply: Int
    /// The jitter buffer's lead when the reply started, in milliseconds: how much audio it
    /// waited for before the first sample.
    public var leadMilliseconds: Int
    /// The lead the next reply will start with (grown by this reply's underruns, or shrunk
    /// by its steady playback).
    public var nextLeadMilliseconds: Int

    public init(playedSeconds: Double, interrupted: Bool, underruns: Int, reply: Int, leadMilliseconds: Int = 0, nextLeadMilliseconds: Int = 0) {
        self.playedSeconds = playedSeconds
        self.interrupted = interrupted
        self.underruns = underruns
        self.reply = reply
        self.leadMilliseconds = leadMilliseconds
        self.nextLeadMilliseconds = nextLeadMilliseconds
    }
}

/// What the player reports, on the playback thread.
public enum PlayerEvent: Equatable, Sendable {
    /// The reply's first sample was handed to the device; it is heard after `latencyFrames`.
    /// `reply` is the number ``StreamingPlayer/beginReply()`` returned for it.
    case started(latencyFrames: Int, reply: Int)
    /// The queue ran dry before the reply's end; silence is played until the jitter buffer
    /// holds its (now longer) lead again.
    case underrun(total: Int)
    /// The device has played the reply's last sample (or the fade after `stop`).
    case finished(PlaybackReport)
    /// A clip mixed over whatever plays (``StreamingPlayer/beginMix()``) reached the device.
    case mixStarted(mix: Int)
    /// The mixed clip ended, played out or stopped; `reply` in the report is its mix number.
    case mixFinished(PlaybackReport)

    /// Whether the event is the mix layer's (a clip mixed over whatever plays).
    public var isMixLayer: Bool {
        switch self {
        case .mixStarted, .mixFinished: return true
        case .started, .underrun, .finished: return false
        }
    }
}

/// Plays a reply's PCM16 audio as its chunks arrive from the network.
///
/// The network side calls ``beginReply()``, then ``enqueue(_:)`` with chunks of any size (an
/// odd trailing byte is carried to the next chunk), then ``endReply()``. Each chunk is
/// converted to Float32 by the vectorised kernel as it arrives; everything after that is
/// Float32: the ring, the fade, and on the device thread the device's converter
/// (resampling, channel mapping, the device's sample format). Samples cross to the device
/// thread through a lock-free ring. The device thread starts a reply after a small
/// prebuffer, fills an underrun with silence (counted and reported) and continues when data
/// comes, and reports `finished` only once the device has drained the last sample.
/// ``stop()`` (barge-in, void turn) takes effect within one period with a short linear
/// fade-out, then flushes everything queued.
///
/// Nothing on the per-chunk or per-period path allocates.
public final class StreamingPlayer: @unchecked Sendable {
    public let configuration: StreamingPlayerConfiguration
    public let format: WAVFormat
    private let device: PlaybackDevice?
    private let onEvent: @Sendable (PlayerEvent) -> Void
    private let ring: RingBuffer<Float>

    // Producer side (the network thread).
    private var carry: UInt8?
    /// Where the ring's free pages were last given back (``RingBuffer/releaseFreePages()``):
    /// the ring is sized for the longest reply, but only what is queued stays resident.
    private var releasedAt = 0
    private let releaseEvery: Int
    /// When the reply's first audio arrived, and the samples that came before the chunk now
    /// arriving: each chunk's lateness against the first one's is the delay the jitter
    /// buffer must absorb (RFC 3550's relative transit time, as NetEQ measures it).
    private var replyFirstArrival: Int64 = 0
    /// Nanoseconds, monotonic: when chunks arrive (a test's simulated network sets its own).
    private let clock: @Sendable () -> Int64
    private var replyQueued = 0
    /// The reply's latest chunk against its media time, in samples: the lead it needed.
    private let peakDelay = Atomic<Int>(0)
    private let scratch: UnsafeMutableBufferPointer<Int16>
    private let floats: UnsafeMutableBufferPointer<Float>

    // Shared flags.
    /// The reply's flags, shared by the network side and the device thread.
    private let reply = PlaybackLayer()
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
    private var fade: GainRamp?
    private let prebufferSamples: Int
    // The adaptive jitter buffer (device thread): the lead replies start with and rebuffer
    // to, in samples; it outlives a reply, because the network's jitter does.
    private var targetLead: Int
    private let maximumLead: Int
    private let leadDecayPerSecond: Int
    private let samplesPerSecond: Int
    /// 10 ms: the granularity of the device's periods, added to a measured delay.
    private let leadMargin: Int
    private let leadStep: Int
    /// Samples played without an underrun since the lead last shrank.
    private var steadyPlayed = 0
    private var replyLead = 0
    /// The target lead, published for ``lead``.
    private let publishedLead = Atomic<Int>(0)
    private let fadeSamples: Int

    // Volume: the level clients set (bits of a Float) and, on the device thread, the gain
    // applied now and the ramp toward the level.
    private let volumeBits = Atomic<UInt32>(Float(1).bitPattern)
    private var gain: Float = 1
    private var volumeRamp: GainRamp?
    private let volumeRampSamples: Int

    // The mix layer: a clip mixed over the reply (or over silence), with its own ring and
    // life cycle, summed in Float32 and passed through a soft limiter.
    private let mixRing: RingBuffer<Float>
    private let mixScratch: UnsafeMutableBufferPointer<Float>
    private let mix = PlaybackLayer()
    private var seenMix = 0
    private var mixPlaying = false
    private var mixPlayed = 0
    private var mixFade: GainRamp?
    /// Samples still to render after the mix's last one before it has been heard.
    private var mixDrainLeft: Int?
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
        self.clock = clock
        self.format = format
        self.configuration = configuration
        self.onEvent = onEvent
        let perMillisecond = format.sampleRate * format.channels / 1000
        prebufferSamples = configuration.prebufferMilliseconds * perMillisecond
        targetLead = prebufferSamples
        maximumLead = max(prebufferSamples, configuration.maximumLeadMilliseconds * perMillisecond)
        leadDecayPerSecond = configuration.leadDecayMillisecondsPerSecond * perMillisecond
        samplesPerSecond = 1000 * perMillisecond
        leadMargin = 10 * perMillisecond
        leadStep = configuration.leadStepMilliseconds * perMillisecond
        publishedLead.store(prebufferSamples, ordering: .relaxed)
        fadeSamples = max(1, configuration.fadeMilliseconds * perMillisecond)
        volumeRampSamples = max(1, configuration.volumeRampMilliseconds * perMillisecond)
        drainFallbackSamples = drainFallback * format.channels
        ring = RingBuffer(minimumCapacity: configuration.capacitySeconds * 1000 * perMillisecond)
        releaseEvery = 1000 * perMillisecond
        scratch = .allocate(capacity: 8_192)
        floats = .allocate(capacity: 8_192)
        // Clips are streamed from disk as the ring has room: a few seconds suffice.
        mixRing = RingBuffer(minimumCapacity: 8 * 1000 * perMillisecond)
        mixScratch = .allocate(capacity: 16_384)
        mixScratch.initialize(repeating: 0)
    }

    deinit {
        device?.stop()
        scratch.deallocate()
        floats.deallocate()
        mixScratch.deallocate()
    }

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

    /// What a layer can give a device without a clock.
    private enum Readiness { case idle, ready, waiting }

    /// On the device thread of a device without a clock: whether the next `samples` can be
    /// rendered without silence inside a sound (every layer that plays has them, or has
    /// ended), and at least one layer has something to do.
    func hasSound(toRender samples: Int) -> Bool {
        let reply = replyReadiness(samples)
        let mix = mixReadiness(samples)
        return reply != .waiting && mix != .waiting && (reply == .ready || mix == .ready)
    }

    private func replyReadiness(_ samples: Int) -> Readiness {
        if reply.stopRequested.load(ordering: .acquiring) || fade != nil { return .ready }
        let enough = ring.availableToRead >= samples || reply.ended.load(ordering: .acquiring)
        if reply.generation.load(ordering: .acquiring) != seenGeneration { return enough ? .ready : .waiting }
        switch state {
        case .idle: return .idle
        case .draining: return .ready
        case .prebuffering, .playing, .rebuffering: return enough ? .ready : .waiting
        }
    }

    private func mixReadiness(_ samples: Int) -> Readiness {
        if mix.stopRequested.load(ordering: .acquiring) || mixFade != nil || mixDrainLeft != nil { return .ready }
        let begun = mix.generation.load(ordering: .acquiring) != seenMix
        let open = mix.open.load(ordering: .acquiring)
        guard begun || open || mixPlaying || mixRing.availableToRead > 0 else { return .idle }
        return mixRing.availableToRead >= samples || mix.ended.load(ordering: .acquiring) ? .ready : .waiting
    }

    /// On the device thread, between periods: whether nothing plays nor is about to (no reply
    /// or clip begun, playing, fading or draining; no volume ramp). A reply or a clip begun
    /// wakes the device (``beginReply()``, ``beginMix()``), and says false here from then on.
    var isIdleOnDeviceThread: Bool {
        guard case .idle = state, fade == nil, seenGeneration == reply.generation.load(ordering: .acquiring),
              !reply.stopRequested.load(ordering: .acquiring) else { return false }
        guard !mixPlaying, mixDrainLeft == nil, mixFade == nil, seenMix == mix.generation.load(ordering: .acquiring),
              !mix.stopRequested.load(ordering: .acquiring), mixRing.availableToRead == 0,
              !mix.open.load(ordering: .acquiring) || mix.ended.load(ordering: .acquiring) else { return false }
        return volumeRamp == nil
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

    /// Whether a reply or a mixed clip is being played (from its first sample to `finished`):
    /// the recorder's half-duplex switch.
    public var isActive: Bool { reply.active.load(ordering: .relaxed) || mix.active.load(ordering: .relaxed) }

    /// Whether a reply (not a mixed clip) is being played.
    public var isReplyActive: Bool { reply.active.load(ordering: .relaxed) }

    /// Sets what is called when ``isActive`` turns false (on the device thread; also after
    /// ``shutdown()``): a half-duplex recorder's cue to listen again. One observer; nil
    /// removes it.
    public func whenInactive(_ body: (@Sendable () -> Void)?) { inactiveObserver.withLock { $0 = body } }

    /// Tells the observer, once neither layer is active.
    private func notifyIfInactive() {
        guard !isActive else { return }
        inactiveObserver.withLock { $0 }?()
    }

    /// The volume, a linear gain from 0 to 1 applied to everything played (replies and
    /// clips); a change is ramped over ``StreamingPlayerConfiguration/volumeRampMilliseconds``.
    public var volume: Float {
        get { Float(bitPattern: volumeBits.load(ordering: .relaxed)) }
        set {
            let level = newValue.isNaN ? 1 : min(max(newValue, 0), 1)
            volumeBits.store(level.bitPattern, ordering: .releasing)
        }
    }

    /// Seconds of the current (or last) reply handed to the device.
    public var position: Double { Double(playedSamples.load(ordering: .relaxed)) / Double(format.sampleRate * format.channels) }

    // MARK: Network side (one thread at a time)

    /// Starts a new reply. A reply still playing is stopped first (fade-out and flush, at
    /// most a few periods), so that no sample of the new reply is flushed with it.
    ///
    /// - Returns: the reply's number, which its `started` and `finished` events carry (a
    ///   late event of a stopped reply is told apart from the new one's).
    @discardableResult
    public func beginReply() -> Int {
        let number = reply.beginNext(deviceRunning: device?.isRunning ?? false) {
            carry = nil
            replyQueued = 0
            peakDelay.store(0, ordering: .relaxed)
            // What the last reply left resident goes back before this one starts.
            ring.releaseFreePages()
            releasedAt = ring.writtenCount
        }
        device?.wakeFromIdle()
        return number
    }

    /// Measures how late `samples` more samples arrive against the reply's first chunk.
    private func measureArrival(of samples: Int) {
        let now = clock()
        if replyQueued == 0 {
            replyFirstArrival = now
        } else {
            let elapsed = Int((now - replyFirstArrival) / 1_000) * samplesPerSecond / 1_000_000
            let late = elapsed - replyQueued
            if late > peakDelay.load(ordering: .relaxed) { peakDelay.store(late, ordering: .relaxed) }
        }
        replyQueued += samples
    }

    /// Every second of audio queued, the pages already played go back to the kernel.
    private func releasePlayedPages() {
        guard ring.writtenCount - releasedAt >= releaseEvery else { return }
        ring.releaseFreePages()
        releasedAt = ring.writtenCount
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
        measureArrival(of: bytes.count / 2)
        var input = bytes
        var complete = true
        if let first = carry {
            // The odd byte of the previous chunk is the low byte of this sample.
            let sample = Int16(bitPattern: UInt16(first) | UInt16(input[0]) << 8)
            floats[0] = Float(sample) * SampleConverter.int16ToFloatScale
            complete = ring.write(UnsafeBufferPointer(rebasing: floats[0..<1])) == 1 && complete
            carry = nil
            input = UnsafeRawBufferPointer(rebasing: input[1...])
        }
        while input.count >= 2 {
            let n = min(scratch.count, input.count / 2)
            // memcpy into aligned scratch: the chunk's bytes may sit at any address.
            UnsafeMutableRawBufferPointer(scratch).copyMemory(from: UnsafeRawBufferPointer(rebasing: input[0..<(n * 2)]))
            #if _endian(big)
            for i in 0..<n { scratch[i] = Int16(littleEndian: scratch[i]) }
            #endif
            let converted = UnsafeMutableBufferPointer(rebasing: floats[0..<n])
            SampleConverter.int16ToFloat32(UnsafeBufferPointer(rebasing: scratch[0..<n]), into: converted)
            if ring.write(UnsafeBufferPointer(converted)) < n { complete = false }
            input = UnsafeRawBufferPointer(rebasing: input[(n * 2)...])
        }
        if input.count == 1 { carry = input[0] }
        releasePlayedPages()
        device?.soundArrived()
        return complete
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
        measureArrival(of: samples.count)
        defer {
            releasePlayedPages()
            device?.soundArrived()
        }
        return ring.write(samples) == samples.count
    }

    /// No more chunks for this reply: `finished` follows when the device has played it all.
    public func endReply() {
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
        renderMix(over: buffer)
        applyVolume(to: buffer)
    }

    // MARK: The mix layer

    /// Starts a clip mixed over whatever plays (a reply, or silence); a mixed clip still
    /// playing is stopped first. Feed it with ``enqueueMix(samples:)``, end it with
    /// ``endMix()``.
    ///
    /// - Returns: the mix's number, which its `mixStarted` and `mixFinished` carry.
    @discardableResult
    public func beginMix() -> Int {
        let number = mix.beginNext(deviceRunning: device?.isRunning ?? false) { mixRing.releaseFreePages() }
        device?.wakeFromIdle()
        return number
    }

    /// Samples the mix layer can take now.
    public var mixQueueSpace: Int { mixRing.availableToWrite }

    /// Queues samples of the mixed clip (in the player's format).
    @discardableResult
    public func enqueueMix(samples: UnsafeBufferPointer<Float>) -> Bool {
        guard mix.open.load(ordering: .acquiring), !samples.isEmpty else { return true }
        defer { device?.soundArrived() }
        return mixRing.write(samples) == samples.count
    }

    /// No more samples for the mixed clip: `mixFinished` follows when it has played.
    public func endMix() {
        mix.ended.store(true, ordering: .releasing)
        device?.soundArrived()
    }

    /// Stops the mixed clip within a period, with the stop fade.
    public func stopMix() {
        mix.stop()
        device?.soundArrived()
    }

    /// Adds the mixed clip to `buffer`; where it plays, the sum goes through the limiter.
    private func renderMix(over buffer: UnsafeMutableBufferPointer<Float>) {
        let generation = mix.generation.load(ordering: .acquiring)
        if generation != seenMix {
            if mixPlaying { finishMix(interrupted: true) }
            seenMix = generation
            mixPlaying = false
            mixPlayed = 0
            mixFade = nil
            mixDrainLeft = nil
        }
        if let left = mixDrainLeft {
            // The last sample is on its way to the speaker.
            let remaining = left - buffer.count
            if remaining <= 0 { finishMix(interrupted: false) } else { mixDrainLeft = remaining }
            return
        }
        guard mix.open.load(ordering: .acquiring) || mixRing.availableToRead > 0 || mixPlaying || mix.stopRequested.load(ordering: .acquiring) else {
            return
        }
        let scratch = UnsafeMutableBufferPointer(rebasing: mixScratch[0..<min(buffer.count, mixScratch.count)])
        if mix.stopRequested.load(ordering: .acquiring), mixFade == nil {
            if mixPlaying { mixFade = GainRamp(from: 1, to: 0, length: fadeSamples) } else {
                mixRing.discard()
                mix.stopRequested.store(false, ordering: .relaxed)
                return
            }
        }
        let n = mixRing.read(into: scratch)
        if n > 0, !mixPlaying {
            mixPlaying = true
            mix.active.store(true, ordering: .relaxed)
            onEvent(.mixStarted(mix: seenMix))
        }
        guard mixPlaying else { return }
        if n < scratch.count { UnsafeMutableBufferPointer(rebasing: scratch[n...]).update(repeating: 0) }
        if var ramp = mixFade {
            ramp.apply(to: scratch)
            mixFade = ramp
        }
        mixPlayed += n
        SoftLimiter.mix(UnsafeBufferPointer(scratch), into: buffer)
        if let ramp = mixFade, ramp.isFinished {
            mixRing.discard()
            mixFade = nil
            mix.stopRequested.store(false, ordering: .relaxed)
            finishMix(interrupted: true)
        } else if n < scratch.count, mix.ended.load(ordering: .acquiring), mixRing.availableToRead == 0 {
            let left = drainSamples() - (scratch.count - n)
            if left <= 0 { finishMix(interrupted: false) } else { mixDrainLeft = left }
        }
    }

    private func finishMix(interrupted: Bool) {
        mixDrainLeft = nil
        mixPlaying = false
        mix.active.store(false, ordering: .relaxed)
        notifyIfInactive()
        let seconds = Double(mixPlayed) / Double(format.sampleRate * format.channels)
        onEvent(.mixFinished(PlaybackReport(playedSeconds: seconds, interrupted: interrupted, underruns: 0, reply: seenMix)))
    }

    /// Moves the gain toward the volume along a ramp, then applies it.
    private func applyVolume(to buffer: UnsafeMutableBufferPointer<Float>) {
        let level = Float(bitPattern: volumeBits.load(ordering: .acquiring))
        if level != (volumeRamp?.target ?? gain) {
            // A new level, even mid-ramp: a new ramp from the gain reached so far.
            volumeRamp = GainRamp(from: volumeRamp?.gain ?? gain, to: level, length: volumeRampSamples)
        }
        if var ramp = volumeRamp {
            ramp.apply(to: buffer)
            gain = ramp.gain
            volumeRamp = ramp.isFinished ? nil : ramp
        } else if gain != 1 {
            Gain.apply(gain, to: buffer)
        }
    }

    private func renderReply(into buffer: UnsafeMutableBufferPointer<Float>) {
        let currentGeneration = reply.generation.load(ordering: .acquiring)
        if currentGeneration != seenGeneration {
            // A new reply: whatever was left of the old one is dropped.
            seenGeneration = currentGeneration
            state = .prebuffering(waited: 0)
            startedReported = false
            underruns = 0
            replyLead = targetLead
            fade = nil
            playedSamples.store(0, ordering: .relaxed)
            reply.active.store(true, ordering: .relaxed)
        }
        if reply.stopRequested.load(ordering: .acquiring), fade == nil {
            switch state {
            case .prebuffering, .playing, .rebuffering:
                fade = GainRamp(from: 1, to: 0, length: fadeSamples)
            default:
                break
            }
        }
        if var ramp = fade {
            // Fade what is queued (silence where nothing is), then flush the rest.
            let n = ring.read(into: buffer)
            if n < buffer.count { UnsafeMutableBufferPointer(rebasing: buffer[n...]).update(repeating: 0) }
            ramp.apply(to: buffer)
            fade = ramp
            if ramp.isFinished {
                ring.discard()
                fade = nil
                reply.stopRequested.store(false, ordering: .relaxed)
                state = .draining(left: drainSamples(), interrupted: true)
            }
            return
        }

        switch state {
        case .idle:
            buffer.update(repeating: 0)
        case .prebuffering(let waited):
            let available = ring.availableToRead
            let ended = reply.ended.load(ordering: .acquiring)
            // Time since the first chunk, counted in rendered samples (the device's clock).
            let nowWaited = available > 0 ? waited + buffer.count : waited
            // Without a clock there is no network jitter to cover: start with the first period.
            let leadReached = devicePaced ? available >= targetLead && nowWaited > targetLead : available >= buffer.count
            if leadReached || (ended && available > 0) {
                state = .playing
                play(into: buffer)
            } else if ended {
                // A reply with no audio at all.
                buffer.update(repeating: 0)
                finish(interrupted: false)
            } else {
                buffer.update(repeating: 0)
                state = .prebuffering(waited: nowWaited)
            }
        case .playing:
            play(into: buffer)
        case .rebuffering(let starved, var grown):
            let available = ring.availableToRead
            let ended = reply.ended.load(ordering: .acquiring)
            if available > 0, !grown {
                // The gap is known. The lead doubles, and covers at least this gap and the
                // configured step beyond it, for this reply and the ones after: fast growth
                // on an underrun, slow decay while steady (the AIMD shape of NetEQ's target
                // delay). A late burst is rarely the latest one: a lead that only covered
                // this gap underran again at the next.
                grown = true
                setTargetLead(max(2 * targetLead, starved + leadStep))
            }
            // The silence inserted shifts the rest of the reply later by the new lead, so
            // one gap absorbs the network's jitter instead of a gap at every late burst.
            if (grown && available > 0 && (starved >= targetLead || !devicePaced)) || (ended && available > 0) {
                state = .playing
                play(into: buffer)
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

    private func play(into buffer: UnsafeMutableBufferPointer<Float>) {
        let n = ring.read(into: buffer)
        if n > 0 {
            playedSamples.add(n, ordering: .relaxed)
            if !startedReported {
                startedReported = true
                onEvent(.started(latencyFrames: device?.statistics.latencyFrames ?? 0, reply: seenGeneration))
            }
        }
        if n < buffer.count {
            UnsafeMutableBufferPointer(rebasing: buffer[n...]).update(repeating: 0)
            if reply.ended.load(ordering: .acquiring), ring.availableToRead == 0 {
                // The last sample is now on its way: wait until the device has played it.
                let left = drainSamples() - (buffer.count - n)
                if left <= 0 { finish(interrupted: false) } else { state = .draining(left: left, interrupted: false) }
            } else {
                underruns += 1
                steadyPlayed = 0
                state = .rebuffering(starved: buffer.count - n, grown: false)
                onEvent(.underrun(total: underruns))
            }
        } else {
            // Steady playback lets the lead shrink back, slowly.
            steadyPlayed += n
            if steadyPlayed >= samplesPerSecond {
                steadyPlayed -= samplesPerSecond
                if targetLead > prebufferSamples { setTargetLead(max(prebufferSamples, targetLead - leadDecayPerSecond)) }
            }
        }
    }

    private func setTargetLead(_ samples: Int) {
        targetLead = min(maximumLead, samples)
        publishedLead.store(targetLead, ordering: .relaxed)
    }

    /// The jitter buffer's current target lead, in seconds: what the next reply waits for
    /// before its first sample.
    public var lead: Double { Double(publishedLead.load(ordering: .relaxed)) / Double(samplesPerSecond) }

    /// Samples to render after the last one before it has been heard: the device's reported
    /// latency (in the engine's frames, converter included), or its buffer when it reports none.
    private func drainSamples() -> Int {
        if let latency = device?.statistics.latencyFrames { return max(latency * format.channels, 1) }
        return drainFallbackSamples
    }

    private func finish(interrupted: Bool) {
        state = .idle
        // The lead this reply's network needed, with two periods of margin: the next reply
        // starts with it even if this one got away without an underrun.
        let needed = peakDelay.load(ordering: .relaxed) + 2 * leadMargin
        if needed > targetLead { setTargetLead(needed) }
        reply.active.store(false, ordering: .relaxed)
        notifyIfInactive()
        let report = PlaybackReport(playedSeconds: position, interrupted: interrupted, underruns: underruns, reply: seenGeneration,
                                    leadMilliseconds: replyLead * 1000 / samplesPerSecond, nextLeadMilliseconds: targetLead * 1000 / samplesPerSecond)
        onEvent(.finished(report))
    }
}

/// The flags of one layer of the player (the reply, or the clip mixed over it), shared by the
/// network side and the device thread: whether it takes samples, whether its last came,
/// whether it is to stop, which sound it is, and whether the device is playing it.
final class PlaybackLayer: Sendable {
    let open = Atomic<Bool>(false)
    let ended = Atomic<Bool>(false)
    let stopRequested = Atomic<Bool>(false)
    let generation = Atomic<Int>(0)
    let active = Atomic<Bool>(false)

    /// Starts the layer's next sound. One still playing is stopped first (fade-out and flush,
    /// at most a few periods, 500 ms at worst) when a device runs, so that no sample of the
    /// new sound is flushed with it; `reset` clears the caller's own state meanwhile.
    func beginNext(deviceRunning: Bool, reset: () -> Void) -> Int {
        if active.load(ordering: .acquiring), deviceRunning {
            stop()
            let deadline = Monotonic.now() + 500_000_000
            while active.load(ordering: .acquiring), Monotonic.now() < deadline { usleep(1_000) }
        }
        reset()
        ended.store(false, ordering: .relaxed)
        stopRequested.store(false, ordering: .relaxed)
        let number = generation.add(1, ordering: .releasing).newValue
        open.store(true, ordering: .releasing)
        return number
    }

    /// Takes no more samples; the device thread fades out what plays.
    func stop() {
        open.store(false, ordering: .releasing)
        stopRequested.store(true, ordering: .releasing)
    }
}
