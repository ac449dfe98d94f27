import Synchronization

/// How loud the kiosk has been in the last half second: the loudest 20 ms of what the player
/// handed its device (after the volume, the mixed clip included), in PCM16 RMS units. The
/// recorder sets the level speech must reach to interrupt the kiosk against it (voice
/// barge-in, ``SpeechDetectorConfiguration/bargeInLevel(kioskLevel:)``): whatever the echo
/// canceller does, its residue is never louder than the speaker's own sound on the way to the
/// microphone, and that follows what was played.
///
/// Half a second covers the device's buffer (what was handed over is heard later), the
/// room's echo and the capture's latency; a shorter window would let the echo of a loud word
/// arrive after its level had left the window, and a longer one holds the kiosk's loudest
/// word over its quieter ones, where the learner speaking up should be heard (a second
/// missed 6 of 30 espeak-ng phrases spoken over the tutor at 10 dB, half a second 2).
///
/// Written on the device thread (``add(_:)``), read from any thread (``level``); nothing
/// allocates after the initializer.
final class OutputEnvelope: Sendable {
    /// The loudest bucket's RMS (bits of a Float, PCM16 units), published after each bucket.
    private let published = Atomic<UInt32>(0)
    /// Device-thread state: one RMS per 20 ms bucket over the window, the bucket being
    /// filled (its sum of squares and samples so far) and where it goes.
    private struct Buckets {
        var levels: [Float]
        var next = 0
        var sum: Float = 0
        var count = 0
    }
    private let buckets: Mutex<Buckets>
    private let bucketSamples: Int

    /// An envelope over `windowMilliseconds` of samples at `samplesPerSecond` (all channels).
    init(samplesPerSecond: Int, windowMilliseconds: Int = 500, bucketMilliseconds: Int = 20) {
        bucketSamples = max(1, samplesPerSecond * bucketMilliseconds / 1_000)
        buckets = Mutex(Buckets(levels: [Float](repeating: 0, count: max(1, windowMilliseconds / bucketMilliseconds))))
    }

    /// The loudest 20 ms of the window, in PCM16 RMS units (0: silent for the whole window).
    var level: Double { Double(Float(bitPattern: published.load(ordering: .relaxed))) }

    /// Adds samples the device is about to play (Float32, full scale 1).
    func add(_ samples: UnsafeBufferPointer<Float>) {
        buckets.withLock { state in
            var index = 0
            while index < samples.count {
                let take = min(bucketSamples - state.count, samples.count - index)
                state.sum += Self.sumOfSquares(UnsafeBufferPointer(rebasing: samples[index..<(index + take)]))
                state.count += take
                index += take
                guard state.count == bucketSamples else { break }
                state.levels[state.next] = (state.sum / Float(bucketSamples)).squareRoot() * 32_768
                state.next = (state.next + 1) % state.levels.count
                state.sum = 0
                state.count = 0
                published.store(state.levels.max()!.bitPattern, ordering: .relaxed)
            }
        }
    }

    /// The sum of squares, eight lanes at a time (a Float sum in order would not vectorise).
    static func sumOfSquares(_ samples: UnsafeBufferPointer<Float>) -> Float {
        guard let base = samples.baseAddress else { return 0 }
        var lanes = SIMD8<Float>()
        var index = 0
        while index + 8 <= samples.count {
            let v = UnsafeRawPointer(base + index).loadUnaligned(as: SIMD8<Float>.self)
            lanes.addProduct(v, v)
            index += 8
        }
        var sum = lanes.sum()
        while index < samples.count {
            sum += samples[index] * samples[index]
            index += 1
        }
        return sum
    }
}
