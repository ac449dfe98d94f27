import Synchronization

/// The network side of ``StreamingPlayer``'s reply: chunks of PCM16 bytes of any length
/// (an odd trailing byte carried to the next chunk) converted to Float32 as they arrive and
/// written to the reply's ring, with each chunk's lateness measured for the jitter buffer.
/// One thread at a time; nothing on it allocates.
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

    init(ring: RingBuffer<Float>, samplesPerSecond: Int, clock: @escaping @Sendable () -> Int64) {
        self.ring = ring
        self.samplesPerSecond = samplesPerSecond
        self.clock = clock
        releaseEvery = samplesPerSecond
        scratch = .allocate(capacity: 8_192)
        floats = .allocate(capacity: 8_192)
    }

    deinit {
        scratch.deallocate()
        floats.deallocate()
    }

    /// A new reply: nothing carried, its lateness measured afresh (the old reply's is
    /// forgotten with it: it was cut short), and what the last one left resident given back.
    func reset() {
        carry = nil
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
        return complete
    }

    /// Queues Float32 samples already in the player's format; false when some were dropped.
    func enqueue(samples: UnsafeBufferPointer<Float>) -> Bool {
        measureArrival(of: samples.count)
        defer { releasePlayedPages() }
        return ring.write(samples) == samples.count
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
