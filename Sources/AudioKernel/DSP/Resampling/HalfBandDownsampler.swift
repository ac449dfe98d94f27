import Glibc

/// Halves the rate: output `m` is `½ · x[2m]` plus the half-band filter's odd taps over the
/// odd input frames around it. The input is split as it is written into its even frames
/// `e` and odd frames `o`, so that the filter reads contiguous memory:
///
///     y[m] = ½ · e[m] + fold(o, m − 1)
///
/// An input of odd length leaves its last frame waiting for its partner. The delay is
/// `pairs − 1` output frames.
final class HalfBandDownsampler: ResamplingStage {
    let channels: Int
    let maximumInputFrames: Int
    private let filter: HalfBandFilter
    /// Per channel, a line of even frames then a line of odd frames, each
    /// `lineCapacity` long: `2 · pairs − 1` of the past, then the new input (and the
    /// filter's slack).
    private let history: UnsafeMutablePointer<Float>
    private let lineCapacity: Int
    private var evenCount = 0
    private var oddCount = 0
    /// The output (an index into both lines) to make next.
    private var next = 0


    init(channels: Int, design: HalfBandFilter.Design, maximumInputFrames: Int) {
        self.channels = channels
        self.maximumInputFrames = max(1, maximumInputFrames)
        filter = HalfBandFilter(design, gain: 0.5, maximumCount: self.maximumInputFrames / 2 + 1)
        lineCapacity = 2 * filter.pairs - 1 + self.maximumInputFrames / 2 + 1 + HalfBandFilter.slack
        history = .allocate(capacity: 2 * lineCapacity * channels)
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
        history.initialize(repeating: 0, count: 2 * lineCapacity * channels)
        evenCount = 2 * filter.pairs - 1
        oddCount = evenCount
        next = filter.pairs
    }

    private func even(_ channel: Int) -> UnsafeMutablePointer<Float> { history + 2 * channel * lineCapacity }
    private func odd(_ channel: Int) -> UnsafeMutablePointer<Float> { history + (2 * channel + 1) * lineCapacity }

    func write(_ source: UnsafePointer<Float>, frames: Int, channelStride: Int, frameStride: Int) {
        guard frames > 0 else { return }
        // The first frame completes a pair when an even frame is waiting for its partner;
        // then whole pairs; then perhaps an even frame left waiting.
        let lead = evenCount == oddCount ? 0 : 1
        let pairs = (frames - lead) / 2, leftover = (frames - lead) % 2
        precondition(evenCount + pairs + leftover + HalfBandFilter.slack <= lineCapacity, "more input than the resampler was made for")
        for channel in 0..<channels {
            let line = source + channel * channelStride
            let even = even(channel) + evenCount, odd = odd(channel) + oddCount
            if lead == 1 { odd[0] = line[0] }
            if frameStride == 1 {
                Self.split(line + lead, pairs: pairs, into: even, odd + lead)
            } else {
                Self.copy(line + lead * frameStride, stride: 2 * frameStride, frames: pairs, into: even)
                Self.copy(line + (lead + 1) * frameStride, stride: 2 * frameStride, frames: pairs, into: odd + lead)
            }
            if leftover == 1 { even[pairs] = line[(frames - 1) * frameStride] }
        }
        evenCount += pairs + leftover
        oddCount += lead + pairs
    }

    /// `even[t] = x[2t]`, `odd[t] = x[2t + 1]` for `t < pairs`, four pairs at a time.
    private static func split(_ x: UnsafePointer<Float>, pairs: Int, into even: UnsafeMutablePointer<Float>, _ odd: UnsafeMutablePointer<Float>) {
        let raw = UnsafeRawPointer(x)
        let evens = UnsafeMutableRawPointer(even), odds = UnsafeMutableRawPointer(odd)
        var t = 0
        while t &+ 4 <= pairs {
            let eight = raw.loadUnaligned(fromByteOffset: t &* 8, as: SIMD8<Float>.self)
            evens.storeBytes(of: eight.evenHalf, toByteOffset: t &* 4, as: SIMD4<Float>.self)
            odds.storeBytes(of: eight.oddHalf, toByteOffset: t &* 4, as: SIMD4<Float>.self)
            t &+= 4
        }
        while t < pairs {
            even[t] = x[2 &* t]
            odd[t] = x[2 &* t &+ 1]
            t &+= 1
        }
    }

    func run(into output: UnsafeMutablePointer<Float>, channelStride: Int) -> Int {
        // Output m needs o[m + pairs − 1].
        let end = oddCount - filter.pairs + 1
        let frames = end - next
        guard frames > 0 else { return 0 }
        for channel in 0..<channels {
            filter.run(odd(channel) + next - 1, count: frames, finish: .plusHalf(of: even(channel) + next, into: output + channel * channelStride))
        }
        next = end
        // Keep from `next − pairs`, the oldest odd frame the next output reads.
        let keepFrom = next - filter.pairs
        Self.drop(keepFrom, keeping: evenCount - keepFrom, lines: channels, from: even(0), stride: 2 * lineCapacity)
        Self.drop(keepFrom, keeping: oddCount - keepFrom, lines: channels, from: odd(0), stride: 2 * lineCapacity)
        evenCount -= keepFrom
        oddCount -= keepFrom
        next -= keepFrom
        return frames
    }
}
