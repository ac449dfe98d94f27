import Synchronization

/// The network side of ``StreamingPlayer``'s reply: chunks of PCM16 bytes of any length
/// (an odd trailing byte carried to the next chunk) converted to Float32 as they arrive and
/// written to the reply's ring, with each chunk's lateness measured for the jitter buffer.
/// One thread at a time; nothing on it allocates.
///
/// At a playback rate other than 1.0 (a mono player only) the samples go through a
/// ``TimeStretcher`` on their way to the ring: the network's thread does the stretching,
/// the device thread still only copies. The rate is the reply's own (a replay's, fixed when
/// it begins) or the player's ``StreamingPlayer/playbackRate``, read at every chunk, so a
/// change reaches a reply that is streaming from its next chunk.
final class ReplyIntake: @unchecked Sendable {
    private let ring: RingBuffer<Float>
    private var carry: UInt8?
    /// Where the ring's free pages were last given back (``RingBuffer/releaseFreePages()``):
    /// the ring is sized for the longest reply, but only what is queued stays resident.
    private var releasedAt = 0
    private let releaseEvery: Int
    private let samplesPerSecond: Int
    /// When the reply's first audio arrived, and the samples that came before the chunk now
    /// arriving: each chunk's lateness against the first one's is the delay the jitter
    /// buffer must absorb (RFC 3550's relative transit time, as NetEQ measures it).
    private var firstArrival: Int64 = 0
    private var queued = 0
    /// Nanoseconds, monotonic: when chunks arrive (a test's simulated network sets its own).
    private let clock: @Sendable () -> Int64
    /// The reply's latest chunk against its media time, in samples: the lead it needed
    /// (read by the device thread when the reply ends).
    let peakDelay = Atomic<Int>(0)
    private let scratch: UnsafeMutableBufferPointer<Int16>
    private let floats: UnsafeMutableBufferPointer<Float>
    /// Nil for a player of more than one channel, which plays at 1.0 only.
    private let stretcher: TimeStretcher?
    private let stretched: UnsafeMutableBufferPointer<Float>
    /// The player's rate (a Double's bits), for every reply without one of its own.
    let playerRate = Atomic<UInt64>(Double(1).bitPattern)
    /// This reply's own rate (a replay's), or nil to follow ``playerRate``.
    private var replyRate: Double?

    /// `sampleRate` and `channels`: the player's format.
    init(ring: RingBuffer<Float>, sampleRate: Int, channels: Int, clock: @escaping @Sendable () -> Int64) {
        self.ring = ring
        samplesPerSecond = sampleRate * channels
        self.clock = clock
        releaseEvery = samplesPerSecond
        scratch = .allocate(capacity: 8_192)
        floats = .allocate(capacity: 8_192)
        stretcher = channels == 1 ? try? TimeStretcher(sampleRate: sampleRate, maximumInputFrames: 8_192) : nil
        stretched = .allocate(capacity: stretcher?.maximumOutputFrames(forInputFrames: 8_192) ?? 0)
    }

    deinit {
        scratch.deallocate()
        floats.deallocate()
        stretched.deallocate()
    }

    /// Whether rates other than 1.0 play (a mono player).
    var stretches: Bool { stretcher != nil }

    /// A new reply: nothing carried, its lateness measured afresh (the old reply's is
    /// forgotten with it: it was cut short), and what the last one left resident given back.
    func reset(rate: Double?) {
        carry = nil
        replyRate = rate
        stretcher?.reset()
        queued = 0
        peakDelay.store(0, ordering: .relaxed)
        ring.releaseFreePages()
        releasedAt = ring.writtenCount
    }

    /// Converts and queues PCM16 little-endian bytes; false when the ring was full and some
    /// audio was dropped.
    func enqueue(_ bytes: UnsafeRawBufferPointer) -> Bool {
        measureArrival(of: bytes.count / 2)
        var input = bytes
        var complete = true
        if let first = carry {
            // The odd byte of the previous chunk is the low byte of this sample.
            let sample = Int16(bitPattern: UInt16(first) | UInt16(input[0]) << 8)
            floats[0] = Float(sample) * SampleConverter.int16ToFloatScale
            complete = write(UnsafeBufferPointer(rebasing: floats[0..<1])) && complete
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
            if !write(UnsafeBufferPointer(converted)) { complete = false }
            input = UnsafeRawBufferPointer(rebasing: input[(n * 2)...])
        }
        if input.count == 1 { carry = input[0] }
        releasePlayedPages()
        return complete
    }

    /// Queues Float32 samples already in the player's format; false when some were dropped.
    func enqueue(samples: UnsafeBufferPointer<Float>) -> Bool {
        measureArrival(of: samples.count)
        defer { releasePlayedPages() }
        var complete = true
        var rest = samples
        while !rest.isEmpty {
            let n = min(rest.count, 8_192)
            if !write(UnsafeBufferPointer(rebasing: rest[0..<n])) { complete = false }
            rest = UnsafeBufferPointer(rebasing: rest[n...])
        }
        return complete
    }

    /// The reply's last chunk came: what the stretcher holds goes to the ring. False when
    /// some of it did not fit.
    func finish() -> Bool {
        guard let stretcher else { return true }
        let n = stretcher.flush(into: stretched)
        return n == 0 || ring.write(UnsafeBufferPointer(rebasing: stretched[0..<n])) == n
    }

    /// The samples a reply's rate should play at this moment: 1.0, or the rate in force.
    private var rate: Double { replyRate ?? Double(bitPattern: playerRate.load(ordering: .relaxed)) }

    /// Writes at most 8,192 samples to the ring, stretched at the rate in force; false when
    /// some were dropped.
    private func write(_ samples: UnsafeBufferPointer<Float>) -> Bool {
        guard let stretcher else { return ring.write(samples) == samples.count }
        let wanted = rate
        // The rate was checked where it was set; a stretcher that never left 1.0 copies.
        if wanted != stretcher.rate { try? stretcher.setRate(wanted) }
        let n = stretcher.process(samples, into: stretched)
        return n == 0 || ring.write(UnsafeBufferPointer(rebasing: stretched[0..<n])) == n
    }

    /// Measures how late `samples` more samples arrive against the reply's first chunk.
    private func measureArrival(of samples: Int) {
        let now = clock()
        if queued == 0 {
            firstArrival = now
        } else {
            let elapsed = Int((now - firstArrival) / 1_000) * samplesPerSecond / 1_000_000
            let late = elapsed - queued
            if late > peakDelay.load(ordering: .relaxed) { peakDelay.store(late, ordering: .relaxed) }
        }
        queued += samples
    }

    /// Every second of audio queued, the pages already played go back to the kernel.
    private func releasePlayedPages() {
        guard ring.writtenCount - releasedAt >= releaseEvery else { return }
        ring.releaseFreePages()
        releasedAt = ring.writtenCount
    }
}
