/// The half-band low-pass both factor-of-two stages use.
///
/// At the higher rate `2f` the filter passes up to 0.45 `f` and stops from 0.55 `f`: a band
/// symmetric about a quarter of the rate, so that every other tap of the windowed sinc is
/// zero and the centre tap is ½. What is left to compute is the odd taps, `pairs` on each
/// side, applied at the lower rate:
///
///     fold(x, j) = Σₖ c[k] · (x[j − k] + x[j + 1 + k]),   k = 0 ..< pairs
///
/// a correlation of `2 · pairs` taps, which ``FastFIR`` runs two levels down.
final class HalfBandFilter {
    /// Distinct odd taps.
    let pairs: Int
    private let correlation: FastFIR

    /// A Kaiser-windowed half-band filter: `pairs` odd taps on each side, window shape `beta`.
    struct Design: Sendable {
        var pairs: Int
        var beta: Double
    }

    /// The windowed sinc over the 0.45 to 0.55 transition. `gain` is what the odd taps add
    /// up to over both sides: 1 for the upsampler (the odd outputs pass DC as the even ones
    /// do), ½ for the downsampler (the centre tap gives the other half). `maximumCount`:
    /// the most outputs of one run.
    init(_ design: Design, gain: Double, maximumCount: Int) {
        pairs = design.pairs
        // The window reaches zero on the even taps ±2 · pairs, which are zero anyway: the
        // last odd taps get a window of order 4 · pairs for free.
        let half = Double(2 * pairs)
        let beta = design.beta
        var c = (0..<pairs).map { k -> Double in
            let t = Double(2 * k + 1)
            return KaiserDesign.sinc(t / 2) * KaiserDesign.window(t, half: half, beta: beta)
        }
        let sum = c.reduce(0, +) * 2
        c = c.map { $0 / sum * gain }
        // fold(x, j) = Σᵢ h[i] · x[j − (pairs − 1) + i]: c reversed, then c.
        let taps = (c.reversed() + c).map(Float.init)
        correlation = FastFIR(taps: taps, maximumCount: maximumCount)
    }

    /// Frames a caller leaves readable past the last one a run uses (twice as many when it
    /// reads every other one).
    static let slack = FastFIR.slack

    /// `fold(x, j)` for `j < count`, finished as `finish` says: reads
    /// `x[−(pairs − 1) ..< count + pairs]` (and the slack after), where `x[i]` is
    /// `line[i]`, or `line[2i]` when `everyOther`.
    @inline(__always)
    func run(_ line: UnsafePointer<Float>, everyOther: Bool = false, count: Int, finish: FastFIR.Finish) {
        correlation.run(line - (everyOther ? 2 : 1) * (pairs - 1), everyOther: everyOther, count: count, finish: finish)
    }
}
