/// Doubles the rate: each input frame `x[n]` gives `x[n]` itself (the centre tap ½, times
/// the 2 of zero-stuffing) and, between it and the next, `fold(x, n)` from the half-band
/// filter. Exactly two output frames per input frame; the delay is `2 · pairs` of them.
final class HalfBandUpsampler: ResamplingStage {
    let channels: Int
    let maximumInputFrames: Int
    private let filter: HalfBandFilter
    /// One line per channel: `2 · pairs − 1` frames of the past, then the new input (and
    /// the filter's slack).
    private let history: UnsafeMutablePointer<Float>
    private let lineCapacity: Int
    private var count = 0
    /// The frame the next output pair is centred on.
    private var next = 0

    init(channels: Int, design: HalfBandFilter.Design, maximumInputFrames: Int) {
        self.channels = channels
        self.maximumInputFrames = max(1, maximumInputFrames)
        filter = HalfBandFilter(design, gain: 1, maximumCount: self.maximumInputFrames)
        lineCapacity = 2 * filter.pairs - 1 + self.maximumInputFrames + HalfBandFilter.slack
        history = .allocate(capacity: lineCapacity * channels)
        reset()
    }

    deinit {
        history.deallocate()
    }

    var pairs: Int { filter.pairs }
    var delay: Double { Double(2 * filter.pairs) }
    func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int { 2 * inputFrames }
    func minimumOutputFrames(forInputFrames inputFrames: Int) -> Int { 2 * inputFrames }

    func reset() {
        history.initialize(repeating: 0, count: lineCapacity * channels)
        count = 2 * filter.pairs - 1
        next = filter.pairs - 1
    }

    func inputSlot(frames: Int) -> (slot: UnsafeMutablePointer<Float>, channelStride: Int) {
        precondition(count + frames + HalfBandFilter.slack <= lineCapacity, "more input than the resampler was made for")
        return (history + count, lineCapacity)
    }

    func commit(_ frames: Int) { count += frames }

    func run(into output: UnsafeMutablePointer<Float>, channelStride: Int) -> Int {
        // A pair centred on n needs x[n + pairs].
        let end = count - filter.pairs
        let frames = end - next
        guard frames > 0 else { return 0 }
        for channel in 0..<channels {
            let x = UnsafePointer(history + channel * lineCapacity + next)
            filter.run(x, count: frames, finish: .after(x, into: output + channel * channelStride))
        }
        next = end
        // Keep `2 · pairs − 1` frames: the pair centred on `next` reaches back `pairs − 1`.
        let keepFrom = next - (filter.pairs - 1)
        let kept = count - keepFrom
        Self.drop(keepFrom, keeping: kept, lines: channels, from: history, stride: lineCapacity)
        count = kept
        next -= keepFrom
        return 2 * frames
    }
}
