/// Halves the rate: output `m` is `½ · x[2m]` plus the half-band filter's odd taps over the
/// odd input frames around it:
///
///     y[m] = ½ · x[2m] + fold(o, m − 1),   o[t] = x[2t + 1]
///
/// The line keeps the frames as they came; the filter's own split pass takes the odd ones
/// out (a split here, as they are written, would be a pass of its own). An input of odd
/// length leaves its last frame waiting for its partner. The delay is `pairs − 1` output
/// frames.
final class HalfBandDownsampler: ResamplingStage {
    let channels: Int
    let maximumInputFrames: Int
    private let filter: HalfBandFilter
    /// One line per channel, `lineCapacity` long: `4 · pairs − 2` frames of the past, then
    /// the new input (and twice the filter's slack, read one frame in two).
    private let history: UnsafeMutablePointer<Float>
    private let lineCapacity: Int
    private var count = 0
    /// The output to make next: it is centred on frame `2 · next`.
    private var next = 0

    init(channels: Int, design: HalfBandFilter.Design, maximumInputFrames: Int) {
        self.channels = channels
        self.maximumInputFrames = max(1, maximumInputFrames)
        filter = HalfBandFilter(design, gain: 0.5, maximumCount: self.maximumInputFrames / 2 + 1)
        lineCapacity = 4 * filter.pairs - 2 + self.maximumInputFrames + 1 + 2 * HalfBandFilter.slack
        history = .allocate(capacity: lineCapacity * channels)
        reset()
    }

    deinit {
        history.deallocate()
    }

    var pairs: Int { filter.pairs }
    var delay: Double { Double(filter.pairs - 1) }
    func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int { (inputFrames + 1) / 2 }
    func minimumOutputFrames(forInputFrames inputFrames: Int) -> Int { inputFrames / 2 }

    func reset() {
        history.initialize(repeating: 0, count: lineCapacity * channels)
        count = 4 * filter.pairs - 2
        next = filter.pairs
    }

    func inputSlot(frames: Int) -> (slot: UnsafeMutablePointer<Float>, channelStride: Int) {
        precondition(count + frames + 2 * HalfBandFilter.slack <= lineCapacity, "more input than the resampler was made for")
        return (history + count, lineCapacity)
    }

    func commit(_ frames: Int) { count += frames }

    func run(into output: UnsafeMutablePointer<Float>, channelStride: Int) -> Int {
        // Output m needs x[2m + 2 · pairs − 1].
        let end = (count - 2 * filter.pairs) / 2 + 1
        let frames = end - next
        guard frames > 0 else { return 0 }
        for channel in 0..<channels {
            let line = UnsafePointer(history + channel * lineCapacity)
            // fold(o, next − 1) starts from o[next − 1] = x[2 · next − 1].
            filter.run(line + (2 * next - 1), everyOther: true, count: frames,
                       finish: .plusHalf(everyOther: line + 2 * next, into: output + channel * channelStride))
        }
        next = end
        // Keep from the oldest odd frame the next output reads, o[next − pairs].
        let keepFrom = 2 * (next - filter.pairs)
        Self.drop(keepFrom, keeping: count - keepFrom, lines: channels, from: history, stride: lineCapacity)
        count -= keepFrom
        next -= keepFrom / 2
        return frames
    }
}
