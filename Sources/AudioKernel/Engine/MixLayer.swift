/// The clip mixed over the reply (or over silence): its own ring and life cycle, summed with
/// the reply in Float32 and passed through the soft limiter. ``StreamingPlayer`` owns one;
/// its network side is the player's `beginMix`, `enqueueMix`, `endMix` and `stopMix`, its
/// device side ``render(over:)``, called after the reply has rendered into the period.
final class MixLayer: @unchecked Sendable {
    let layer: PlaybackLayer
    private let scratch: UnsafeMutableBufferPointer<Float>
    private let fadeSamples: Int
    private let samplesPerSecond: Int
    /// Samples to render after the last one before it has been heard (the device's latency).
    private let drainSamples: () -> Int
    private let onEvent: @Sendable (PlayerEvent) -> Void
    private let becameInactive: () -> Void

    // Device-thread state.
    private var seen = 0
    private var playing = false
    private var played = 0
    private var fade: StopFade?
    /// Samples still to render after the clip's last one before it has been heard.
    private var drainLeft: Int?

    init(capacity: Int, fadeSamples: Int, samplesPerSecond: Int, drainSamples: @escaping () -> Int,
         onEvent: @escaping @Sendable (PlayerEvent) -> Void, becameInactive: @escaping () -> Void) {
        // Clips are streamed from disk as the ring has room: a few seconds suffice.
        layer = PlaybackLayer(capacity: capacity)
        scratch = .allocate(capacity: 16_384)
        scratch.initialize(repeating: 0)
        self.fadeSamples = fadeSamples
        self.samplesPerSecond = samplesPerSecond
        self.drainSamples = drainSamples
        self.onEvent = onEvent
        self.becameInactive = becameInactive
    }

    deinit { scratch.deallocate() }

    // MARK: Network side

    func begin() -> Int { layer.beginNext { layer.ring.releaseFreePages() } }

    func enqueue(_ samples: UnsafeBufferPointer<Float>) -> Bool {
        guard layer.open.load(ordering: .acquiring), !samples.isEmpty else { return true }
        return layer.ring.write(samples) == samples.count
    }

    func end() { layer.ended.store(true, ordering: .releasing) }

    // MARK: Device side

    /// Whether a device without a clock can take `samples` of the clip now.
    func readiness(_ samples: Int) -> LayerReadiness {
        if layer.stopRequested.load(ordering: .acquiring) || fade != nil || drainLeft != nil { return .ready }
        let begun = layer.generation.load(ordering: .acquiring) != seen
        guard begun || layer.open.load(ordering: .acquiring) || playing || layer.ring.availableToRead > 0 else { return .idle }
        return layer.ring.availableToRead >= samples || layer.ended.load(ordering: .acquiring) ? .ready : .waiting
    }

    /// Whether nothing of the clip plays nor is about to (between periods).
    var isIdle: Bool {
        !playing && drainLeft == nil && fade == nil && seen == layer.generation.load(ordering: .acquiring)
            && !layer.stopRequested.load(ordering: .acquiring) && layer.ring.availableToRead == 0
            && (!layer.open.load(ordering: .acquiring) || layer.ended.load(ordering: .acquiring))
    }

    /// Adds the clip to `buffer`; where it plays, the sum goes through the limiter.
    func render(over buffer: UnsafeMutableBufferPointer<Float>) {
        // Nearly every period of a kiosk has no clip: leave at once.
        guard playing || fade != nil || drainLeft != nil || layer.open.load(ordering: .relaxed)
            || layer.generation.load(ordering: .acquiring) != seen || layer.stopRequested.load(ordering: .relaxed)
            || layer.ring.availableToRead > 0 else { return }
        let scratch = UnsafeMutableBufferPointer(rebasing: scratch[0..<min(buffer.count, scratch.count)])
        var readable = layer.readable(for: seen)
        if readable.superseded, !playing, drainLeft == nil {
            // Nothing of the old clip sounds: the new one starts now.
            layer.flush(seen)
            adopt()
            readable = layer.readable(for: seen)
        }
        if let left = drainLeft {
            // The last sample is on its way to the speaker.
            let remaining = left - buffer.count
            if remaining <= 0 { finish(interrupted: false) } else { drainLeft = remaining }
            return
        }
        if fade == nil, playing, readable.superseded || layer.stopRequested.load(ordering: .acquiring) {
            fade = StopFade(length: fadeSamples)
        } else if fade == nil, !playing, layer.stopRequested.load(ordering: .acquiring) {
            layer.flush(seen)
            layer.stopRequested.store(false, ordering: .relaxed)
            return
        }
        if var stopping = fade {
            let over = stopping.render(layer, seen, into: scratch)
            fade = stopping
            SoftLimiter.mix(UnsafeBufferPointer(scratch), into: buffer)
            if over {
                fade = nil
                if !readable.superseded { layer.stopRequested.store(false, ordering: .relaxed) }
                finish(interrupted: true)
            }
            return
        }
        let n = layer.read(into: scratch, limit: readable.samples)
        if n > 0, !playing {
            playing = true
            layer.active.store(true, ordering: .relaxed)
            onEvent(.mixStarted(mix: seen))
        }
        guard playing else { return }
        played += n
        SoftLimiter.mix(UnsafeBufferPointer(scratch), into: buffer)
        if n < scratch.count, layer.ended.load(ordering: .acquiring), layer.ring.availableToRead == 0 {
            let left = drainSamples() - (scratch.count - n)
            if left <= 0 { finish(interrupted: false) } else { drainLeft = left }
        }
    }

    /// The sound now numbered in the layer becomes the one this thread plays.
    private func adopt() {
        seen = layer.generation.load(ordering: .acquiring)
        playing = false
        played = 0
        fade = nil
        drainLeft = nil
    }

    private func finish(interrupted: Bool) {
        drainLeft = nil
        guard playing else { return }
        playing = false
        layer.active.store(false, ordering: .relaxed)
        becameInactive()
        onEvent(.mixFinished(PlaybackReport(playedSeconds: Double(played) / Double(samplesPerSecond), interrupted: interrupted,
                                            underruns: 0, reply: seen)))
    }
}

/// What a layer can give a device without a clock.
enum LayerReadiness { case idle, ready, waiting }
