import Synchronization

/// What the kiosk handed its device, 10 ms at a time: each block's power (mean square, PCM16
/// units squared, after the volume, the mixed clip included), numbered, for the last 1.28 s.
/// The recorder lines the microphone up against it to tell the residue of the kiosk's own
/// voice from the learner's (``ResidualEchoEstimator``): the residue follows what was played,
/// block for block, some tens of milliseconds later; a learner does not.
///
/// Written on the device thread (``add(_:)``), read on the capture thread
/// (``copyRecent(into:)``); nothing allocates after the initializer.
final class EchoReference: Sendable {
    /// Blocks kept: the delays searched (0.5 s) and the neighbourhood read around one, with
    /// room for a device that writes a few hundred milliseconds ahead of what it plays.
    static let capacity = 128

    private struct Blocks {
        var powers: [Float]
        /// Blocks completed so far; the newest is at `(written - 1) % capacity`.
        var written = 0
        var sum: Float = 0
        var count = 0
    }
    private let blocks: Mutex<Blocks>
    private let blockSamples: Int

    /// A reference for samples at `samplesPerSecond` (all channels).
    init(samplesPerSecond: Int) {
        blockSamples = max(1, samplesPerSecond / 100)
        blocks = Mutex(Blocks(powers: [Float](repeating: 0, count: Self.capacity)))
    }

    /// Adds samples the device is about to play (Float32, full scale 1).
    func add(_ samples: UnsafeBufferPointer<Float>) {
        blocks.withLock { state in
            var index = 0
            while index < samples.count {
                let take = min(blockSamples - state.count, samples.count - index)
                state.sum += OutputEnvelope.sumOfSquares(UnsafeBufferPointer(rebasing: samples[index..<(index + take)]))
                state.count += take
                index += take
                guard state.count == blockSamples else { break }
                state.powers[state.written % Self.capacity] = state.sum / Float(blockSamples) * (32_768 * 32_768)
                state.written += 1
                state.sum = 0
                state.count = 0
            }
        }
    }

    /// Copies the newest `recent.count` block powers (at most ``capacity``) into `recent`,
    /// oldest first, the newest last; blocks never written read 0. Returns how many blocks
    /// have been written in all.
    @discardableResult
    func copyRecent(into recent: UnsafeMutableBufferPointer<Float>) -> Int {
        blocks.withLock { state in
            let n = min(recent.count, Self.capacity)
            for i in 0..<n {
                let block = state.written - n + i
                recent[i] = block < 0 ? 0 : state.powers[block % Self.capacity]
            }
            return state.written
        }
    }
}
