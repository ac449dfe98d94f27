import Synchronization

/// One layer of the player (the reply, or the clip mixed over it): its ring, and the flags
/// the network side and the device thread share. Whether it takes samples, whether its last
/// came, whether it is to stop, which sound it is, where in the ring that sound starts, and
/// whether the device is playing it.
///
/// Starting the next sound never waits: the network side marks where the new sound's samples
/// begin in the ring and moves to the next number; the device thread, seeing the number
/// change while the old sound still sounds, fades the old one out from what it queued before
/// that mark (``StopFade``), drops the rest of it, tells its end, and only then plays the
/// new one. No sample of the new sound is read by the old sound's fade.
final class PlaybackLayer: Sendable {
    let ring: RingBuffer<Float>
    let open = Atomic<Bool>(false)
    let ended = Atomic<Bool>(false)
    let stopRequested = Atomic<Bool>(false)
    let generation = Atomic<Int>(0)
    /// The ring's ``RingBuffer/writtenCount`` when the current sound began: the old sound's
    /// samples are the ones before it. Stored before ``generation`` moves.
    let start = Atomic<Int>(0)
    let active = Atomic<Bool>(false)
    /// The current sound is all at hand (a replay from memory): no jitter lead. Stored
    /// before ``generation`` moves.
    let immediate = Atomic<Bool>(false)
    /// One caller at a time on the network side, and "is this sound still the current one,
    /// and taking samples" answered in the same step as its samples are queued: a chunk of a
    /// stopped or replaced sound can never slip into the next one. A bare lock: a `Locked`
    /// of an empty value handed its zero-sized `inout` to ThreadSanitizer as an access to
    /// the object's first bytes, which it reported as a race with `stop()` (CI, once).
    private let producer = Lock()

    init(capacity: Int) { ring = RingBuffer(minimumCapacity: capacity) }

    // MARK: Network side

    /// Runs `body` (which queues samples) only while sound `number` is the current one and
    /// takes samples; nil when it does not.
    func whileOpen<T>(_ number: Int, _ body: () -> T) -> T? {
        producer.withLock {
            guard generation.load(ordering: .relaxed) == number, open.load(ordering: .relaxed) else { return nil }
            return body()
        }
    }

    /// Starts the layer's next sound and returns its number, at once: a sound still playing
    /// is faded out by the device thread (``render(from:)``'s caller), which plays the new
    /// one after it. `reset` clears the caller's own producer-side state.
    func beginNext(immediate: Bool = false, reset: () -> Void) -> Int {
        producer.withLock { beginNextLocked(immediate: immediate, reset: reset) }
    }

    private func beginNextLocked(immediate: Bool, reset: () -> Void) -> Int {
        open.store(false, ordering: .releasing)
        reset()
        self.immediate.store(immediate, ordering: .relaxed)
        ended.store(false, ordering: .relaxed)
        stopRequested.store(false, ordering: .relaxed)
        start.store(ring.writtenCount, ordering: .relaxed)
        let number = generation.add(1, ordering: .releasing).newValue
        open.store(true, ordering: .releasing)
        return number
    }

    /// Takes no more samples; the device thread fades out what plays.
    func stop() {
        producer.withLock {
            open.store(false, ordering: .releasing)
            stopRequested.store(true, ordering: .releasing)
        }
    }

    /// Stops sound `number` if it is the current one (playing out, or still taking samples);
    /// whether it was.
    func stop(_ number: Int) -> Bool {
        producer.withLock {
            guard generation.load(ordering: .relaxed) == number else { return false }
            open.store(false, ordering: .releasing)
            stopRequested.store(true, ordering: .releasing)
            return true
        }
    }

    /// No more samples for sound `number` (if it is still the current one, taking samples);
    /// `finishing` queues what the producer still holds first.
    func end(_ number: Int, finishing: () -> Void = {}) -> Bool {
        whileOpen(number) { () -> Bool in
            finishing()
            ended.store(true, ordering: .releasing)
            open.store(false, ordering: .releasing)
            return true
        } ?? false
    }

    // MARK: Device side

    /// What the device thread may read now for the sound numbered `seen`: the readable
    /// samples, or, once a later sound has begun, only the old sound's samples before the
    /// new one's start (with `superseded` true).
    ///
    /// The ring's count is taken before the number: a count that includes a new sound's
    /// samples was published after its number moved, so an unchanged number means every
    /// readable sample is the old sound's.
    func readable(for seen: Int) -> (samples: Int, superseded: Bool) {
        let available = ring.availableToRead
        guard generation.load(ordering: .acquiring) != seen else { return (available, false) }
        return (max(0, min(available, start.load(ordering: .relaxed) - ring.readCount)), true)
    }

    /// Reads at most `limit` samples into the front of `buffer` and zeroes the rest;
    /// returns how many were read.
    func read(into buffer: UnsafeMutableBufferPointer<Float>, limit: Int) -> Int {
        let n = ring.read(into: UnsafeMutableBufferPointer(rebasing: buffer[0..<min(buffer.count, limit)]))
        if n < buffer.count { UnsafeMutableBufferPointer(rebasing: buffer[n...]).update(repeating: 0) }
        return n
    }

    /// Drops the sound numbered `seen`'s samples still queued (up to the next sound's start
    /// if one has begun).
    func flush(_ seen: Int) { ring.discard(readable(for: seen).samples) }
}

/// A stopped sound's last moment: what it has queued fades out over the fade's length
/// (silence where nothing is queued), then the rest of it is dropped. One for the reply,
/// one for the mixed clip.
struct StopFade {
    private var ramp: GainRamp

    init(length: Int) { ramp = GainRamp(from: 1, to: 0, length: length) }

    /// Renders the fade's next part of the sound numbered `seen` into `buffer`; true once the
    /// fade is over and the sound's remaining samples are dropped.
    mutating func render(_ layer: PlaybackLayer, _ seen: Int, into buffer: UnsafeMutableBufferPointer<Float>) -> Bool {
        _ = layer.read(into: buffer, limit: layer.readable(for: seen).samples)
        ramp.apply(to: buffer)
        guard ramp.isFinished else { return false }
        layer.flush(seen)
        return true
    }
}
