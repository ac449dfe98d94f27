/// The microphone's 10 ms blocks beside the kiosk's voice predicted in them
/// (``ResidualEchoEstimator`` against the followed player's ``EchoReference``), for as long
/// as the recorder's pre-roll ring holds audio: where a barge-in's turn starts is decided on
/// them (``Recorder/bargeInStart(onset:)``).
///
/// Block `k` holds the recorder's absolute positions `k × blockSamples ..< (k + 1) × blockSamples`;
/// every captured period passes through ``add(_:reference:learning:)``, so the two counts
/// stay together. Allocation-free after the initializer; a class, so that the estimator
/// learns while the reference's copy is read (the capture thread's alone).
final class EchoResidueTrack {
    let blockSamples: Int
    private(set) var estimator = ResidualEchoEstimator()
    private var microphone: [Float]
    private var predicted: [Float]
    /// The reference's newest blocks as the last block was captured (scratch).
    private var reference: [Float]
    private var sum: Float = 0
    private var count = 0
    /// Blocks completed so far.
    private(set) var completed = 0

    /// A track of `capacityBlocks` blocks of `blockSamples` samples each.
    init(blockSamples: Int, capacityBlocks: Int) {
        self.blockSamples = max(1, blockSamples)
        // Separate buffers (a copy would share one, and its first write allocate).
        microphone = [Float](repeating: 0, count: max(1, capacityBlocks))
        predicted = [Float](repeating: 0, count: max(1, capacityBlocks))
        reference = [Float](repeating: 0, count: ResidualEchoEstimator.referenceBlocks)
    }

    /// Adds a captured period: each block it completes is weighed against `reference` (the
    /// followed player's, nil when nothing plays: no residue), the estimate taught by it
    /// when `learning`.
    func add(_ period: UnsafeBufferPointer<Int16>, reference echo: EchoReference?, learning: Bool) {
        var index = 0
        while index < period.count {
            let take = min(blockSamples - count, period.count - index)
            for i in index..<(index + take) {
                let x = Float(period[i])
                sum += x * x
            }
            count += take
            index += take
            guard count == blockSamples else { break }
            let power = sum / Float(blockSamples)
            let slot = completed % microphone.count
            microphone[slot] = power
            if let echo {
                reference.withUnsafeMutableBufferPointer { _ = echo.copyRecent(into: $0) }
                predicted[slot] = reference.withUnsafeBufferPointer { estimator.predict(microphone: power, reference: $0, learning: learning) }
            } else {
                predicted[slot] = 0
            }
            completed += 1
            sum = 0
            count = 0
        }
    }

    /// Whether block `block` (an absolute block number still held) is the kiosk's residue:
    /// predicted, and not above the prediction by more than the estimator's margin.
    func isResidue(block: Int) -> Bool {
        guard block >= 0, block < completed, completed - block <= microphone.count else { return false }
        let slot = block % microphone.count
        return predicted[slot] > 0 && microphone[slot] <= ResidualEchoEstimator.margin * predicted[slot]
    }

    /// Whether the blocks over positions `range` hold no more than the kiosk's residue: their
    /// power together within the margin of the residue predicted in them. A block not yet
    /// completed (the range's end in the period being captured) or no longer held is left out.
    func isResidue(positions range: Range<Int>) -> Bool {
        var heard: Float = 0, expected: Float = 0
        var block = max(0, range.lowerBound / blockSamples, completed - microphone.count)
        while block * blockSamples < range.upperBound, block < completed {
            heard += microphone[block % microphone.count]
            expected += predicted[block % microphone.count]
            block += 1
        }
        return expected > 0 && heard <= ResidualEchoEstimator.margin * expected
    }

    /// The end of the last run of at least `minimumBlocks` residue blocks that lies wholly
    /// in `range` (positions), nil if none: the kiosk's voice, not a gap between two of the
    /// learner's syllables where only the residue sounds.
    func residueEnd(in range: Range<Int>, minimumBlocks: Int) -> Int? {
        var block = range.upperBound / blockSamples - 1
        var run = 0
        while block >= 0, block * blockSamples >= range.lowerBound {
            if isResidue(block: block) {
                run += 1
                if run >= minimumBlocks { return (block + run) * blockSamples }
            } else {
                run = 0
            }
            block -= 1
        }
        return nil
    }
}
