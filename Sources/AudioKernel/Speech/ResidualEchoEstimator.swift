#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How much of the kiosk's own voice reaches the microphone, block by block, estimated from
/// what the kiosk played (``EchoReference``): a residual-echo estimate of the kind an echo
/// canceller's double-talk detector keeps, on 10 ms block powers.
///
/// - **The delay** from a block handed to the device to its echo in the microphone is the lag
///   at which the two envelopes (in decibels) correlate best (normalized cross-correlation,
///   0–500 ms), over the last couple of seconds in which the kiosk alone spoke.
/// - **The gain** at that lag is the least-squares ratio of the microphone's power to the
///   reference's: the canceller's residue if the input is echo-cancelled, the room's echo if
///   not.
/// - **The residue predicted** for a block is the gain times the loudest reference block
///   within a block of the delay (the device's writes come in bursts, so the pairing wanders
///   by a block or so).
///
/// A block at most ``margin`` (3 dB) above its prediction is explained by the kiosk's
/// voice; one above it holds something else (the learner). Only explained blocks, and blocks
/// before any estimate, teach the estimate, so a learner speaking over the kiosk does not
/// raise it (an echo canceller's detectors gate their adaptation the same way). No estimate
/// (nothing learned yet, or envelopes that do not correlate: a canceller that removes the
/// echo leaves nothing that follows the kiosk) predicts no residue, and every block is the
/// learner's, as without a reference.
///
/// A value type, allocation-free after its initializer: it runs on the capture thread.
struct ResidualEchoEstimator {
    /// The delays searched, in blocks (0–490 ms).
    static let lags = 50
    /// How many blocks of the reference ``predict(microphone:reference:learning:)`` reads.
    static let referenceBlocks = lags + 2
    /// A block above its predicted residue by more than this (power ratio: 3 dB) is not the residue.
    static let margin: Float = 2
    /// The correlation below which the envelopes are not taken to follow each other.
    static let minimumCorrelation: Float = 0.5
    /// Blocks of the kiosk alone before an estimate is used (0.2 s).
    static let minimumBlocks: Float = 20
    /// A reference block quieter than this (PCM16 RMS 30, about −61 dBFS) is silence: it
    /// teaches nothing about the echo path.
    static let silentPower: Float = 900
    /// The averages' memory: 1 − 1/200 a block, about two seconds.
    private let decay: Float = 1 - 1 / 200

    private var count: Float = 0
    private var sumX: Float = 0, sumXX: Float = 0
    /// Per lag: the reference's log power, its square, its product with the microphone's,
    /// and, in power, the product and the reference's square (the gain's least squares).
    private var sumY: [Float], sumYY: [Float], sumXY: [Float], sumMF: [Float], sumFF: [Float]

    /// The delay in blocks and the gain (power ratio) in force, nil while there is no estimate.
    private(set) var estimate: (delay: Int, gain: Float, correlation: Float)?

    init() {
        // Each its own buffer: copies of one would share it, and the first write to each on
        // the capture thread would allocate (copy-on-write: 4 mallocs, in the benchmark gate).
        sumY = [Float](repeating: 0, count: Self.lags)
        sumYY = [Float](repeating: 0, count: Self.lags)
        sumXY = [Float](repeating: 0, count: Self.lags)
        sumMF = [Float](repeating: 0, count: Self.lags)
        sumFF = [Float](repeating: 0, count: Self.lags)
    }

    /// The residue predicted for a microphone block of power `microphone` (PCM16 units
    /// squared) against `reference`, the newest ``referenceBlocks`` reference block powers
    /// (oldest first, the newest last, as they were when the block was captured), and, when
    /// `learning` (the kiosk playing, no speech under way), the estimate taught by it.
    mutating func predict(microphone: Float, reference: UnsafeBufferPointer<Float>, learning: Bool) -> Float {
        precondition(reference.count >= Self.referenceBlocks)
        let newest = reference.count - 1
        var predicted: Float = 0
        if let estimate {
            let at = newest - estimate.delay
            let loudest = max(reference[at - 1], reference[at], reference[min(newest, at + 1)])
            predicted = estimate.gain * loudest
        }
        // Taught by the kiosk's voice alone: its echo, not a learner over it.
        guard learning, estimate == nil || microphone <= Self.margin * predicted else { return predicted }
        var active = false
        for lag in 0..<Self.lags where reference[newest - lag] > Self.silentPower { active = true; break }
        guard active else { return predicted }
        let x = Self.decibels(microphone)
        count = decay * count + 1
        sumX = decay * sumX + x
        sumXX = decay * sumXX + x * x
        var best = (lag: 0, correlation: -Float.infinity)
        let spreadX = count * sumXX - sumX * sumX
        for lag in 0..<Self.lags {
            let f = reference[newest - lag]
            let y = Self.decibels(f)
            sumY[lag] = decay * sumY[lag] + y
            sumYY[lag] = decay * sumYY[lag] + y * y
            sumXY[lag] = decay * sumXY[lag] + x * y
            sumMF[lag] = decay * sumMF[lag] + microphone * f
            sumFF[lag] = decay * sumFF[lag] + f * f
            let spreadY = count * sumYY[lag] - sumY[lag] * sumY[lag]
            let product = spreadX * spreadY
            guard product > 0 else { continue }
            let correlation = (count * sumXY[lag] - sumX * sumY[lag]) / product.squareRoot()
            if correlation > best.correlation { best = (lag, correlation) }
        }
        if count >= Self.minimumBlocks, best.correlation >= Self.minimumCorrelation, sumFF[best.lag] > 0 {
            estimate = (best.lag, sumMF[best.lag] / sumFF[best.lag], best.correlation)
        } else {
            estimate = nil
        }
        return predicted
    }

    /// Forgets what was learned (a new reply may sound through another path: the volume moved,
    /// the canceller reconverged).
    mutating func reset() {
        count = 0; sumX = 0; sumXX = 0
        for lag in 0..<Self.lags { sumY[lag] = 0; sumYY[lag] = 0; sumXY[lag] = 0; sumMF[lag] = 0; sumFF[lag] = 0 }
        estimate = nil
    }

    /// A power in decibels, floored at PCM16 RMS 1 (0 dB).
    private static func decibels(_ power: Float) -> Float { 10 * log10(max(power, 1)) }
}
