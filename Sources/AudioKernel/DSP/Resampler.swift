import FoundationEssentials
import Glibc

/// A band-limited streaming sample-rate converter for Float32 audio, any pair of rates from
/// 8 to 192 kHz, 1 to 8 interleaved channels.
///
/// The filter is a Kaiser-windowed sinc whose transition band runs from 0.9 to 1.1 times
/// the lower rate's Nyquist frequency (SoX's "aliasing allowed in the transition band"):
/// everything a tone below 0.9 × Nyquist makes outside the transition band, images when
/// upsampling and aliases when downsampling, is attenuated by the stopband (at least the
/// quality's `attenuation`), and the passband is flat to well under 0.01 dB.
///
/// Polyphase: the output's fractional position in the input advances by exactly
/// `inputRate / outputRate`, counted in integers (no drift over hours). When the reduced
/// ratio has at most ``maximumExactPhases`` phases, each phase has its own precomputed
/// coefficients; otherwise 512 phases are tabulated and adjacent ones blended linearly.
///
/// Per call: no allocation, no lock; the dot products run on `SIMD8<Float>` (a float sum is
/// not reassociated by the vectorizer on its own). The delay, the filter's half length, is
/// reported in output frames (``delay``).
public final class Resampler {
    public enum Quality: Sendable {
        /// At least 100 dB of stopband attenuation (SoX's "medium" rejection).
        case medium
        /// At least 125 dB (SoX's "high").
        case high

        /// The attenuation the filter is designed for, with a margin over the promise.
        var designAttenuation: Double {
            switch self {
            case .medium: return 110
            case .high: return 135
            }
        }
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case unsupportedRate(Int)
        case unsupportedChannels(Int)
        public var description: String {
            switch self {
            case .unsupportedRate(let rate): return "sample rate \(rate) Hz is outside 8,000 to 192,000 Hz"
            case .unsupportedChannels(let count): return "\(count) channels; 1 to 8 are supported"
            }
        }
    }

    /// Ratios with more phases than this are interpolated between 512 tabulated ones.
    public static let maximumExactPhases = 4_096
    static let interpolatedPhases = 512

    public let inputRate: Int
    public let outputRate: Int
    public let channels: Int
    /// The most input frames one ``process(_:into:)`` call takes.
    public let maximumInputFrames: Int

    /// Taps per phase, a multiple of 8.
    let taps: Int
    /// Phases tabulated: exact (`phases` = the reduced output rate, `step` = the reduced
    /// input rate) or interpolated (`phases` + 1 tables, blended).
    let phases: Int
    let exact: Bool
    /// The reduced ratio: each output advances the input by `step / phases` (exact mode), or
    /// by `inputRate / outputRate` counted over `outputRate` (interpolated mode).
    private let step: Int
    private let denominator: Int
    /// `phases` (+1 when interpolated) sets of `taps` coefficients, each reversed so that
    /// it meets the history in ascending order.
    private let coefficients: UnsafeMutablePointer<Float>
    /// One history per channel: `taps - 1` frames of the past, then the new input.
    private let history: UnsafeMutablePointer<Float>
    private let historyCapacity: Int
    /// Frames held in each history.
    private var count = 0
    /// The newest frame the next output uses, and where between it and the next the output
    /// lies: `numerator / denominator`.
    private var newest = 0
    private var numerator = 0

    /// - Parameters:
    ///   - maximumInputFrames: the most frames one call will pass (memory is sized for it).
    public init(inputRate: Int, outputRate: Int, channels: Int = 1, quality: Quality = .medium, maximumInputFrames: Int = 8_192) throws(Failure) {
        for rate in [inputRate, outputRate] where rate < 8_000 || rate > 192_000 { throw .unsupportedRate(rate) }
        guard (1...8).contains(channels) else { throw .unsupportedChannels(channels) }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        self.maximumInputFrames = max(1, maximumInputFrames)

        let divisor = Self.gcd(inputRate, outputRate)
        let reducedIn = inputRate / divisor, reducedOut = outputRate / divisor
        exact = reducedOut <= Self.maximumExactPhases
        phases = exact ? reducedOut : Self.interpolatedPhases
        step = exact ? reducedIn : inputRate
        denominator = exact ? reducedOut : outputRate

        // The cutoff sits at the lower Nyquist frequency, in the middle of a transition band
        // 0.2 × Nyquist wide; in cycles per input sample:
        let lower = Double(min(inputRate, outputRate))
        let cutoff = lower / 2 / Double(inputRate)
        let transition = 0.1 * lower / Double(inputRate)
        let attenuation = quality.designAttenuation
        let beta = 0.1102 * (attenuation - 8.7)
        let length = Int(((attenuation - 7.95) / (2.285 * 2 * Double.pi * transition)).rounded(.up)) + 1
        taps = (length + 7) / 8 * 8

        let sets = exact ? phases : phases + 1
        coefficients = .allocate(capacity: sets * taps)
        Self.design(into: coefficients, sets: sets, phases: phases, taps: taps, cutoff: cutoff, beta: beta)

        historyCapacity = taps - 1 + self.maximumInputFrames
        history = .allocate(capacity: historyCapacity * channels)
        reset()
    }

    deinit {
        coefficients.deallocate()
        history.deallocate()
    }

    /// The filter's delay in output frames: an input impulse comes out this late.
    public var delay: Double { Double(taps / 2) * Double(outputRate) / Double(inputRate) }

    /// The most output frames a call with `inputFrames` frames can give.
    public func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int {
        Int((Double(inputFrames) * Double(outputRate) / Double(inputRate)).rounded(.up)) + 2
    }

    /// Forgets the past: the next call starts from silence.
    public func reset() {
        history.initialize(repeating: 0, count: historyCapacity * channels)
        count = taps - 1
        newest = taps - 1
        numerator = 0
    }

    /// Resamples `input` (interleaved frames, at most ``maximumInputFrames``) into `output`
    /// (room for ``maximumOutputFrames(forInputFrames:)``); returns the frames written.
    public func process(_ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>) -> Int {
        let frames = input.count / channels
        precondition(frames <= maximumInputFrames, "more input than the resampler was made for")
        precondition(output.count >= maximumOutputFrames(forInputFrames: frames) * channels, "output too small")
        guard let source = input.baseAddress, let destination = output.baseAddress else { return 0 }
        // Deinterleave into the histories.
        for channel in 0..<channels {
            let line = history + channel * historyCapacity + count
            var frame = 0
            while frame < frames {
                line[frame] = source[frame &* channels &+ channel]
                frame &+= 1
            }
        }
        count += frames

        var produced = 0
        let span = taps - 1
        while newest < count {
            if exact {
                let set = coefficients + numerator * taps
                for channel in 0..<channels {
                    let past = history + channel * historyCapacity + newest - span
                    destination[produced &* channels &+ channel] = Self.dot(set, past, taps)
                }
            } else {
                // The position between two tabulated phases, blended linearly.
                let position = Double(numerator) / Double(denominator) * Double(phases)
                let index = min(Int(position), phases - 1)
                let weight = Float(position - Double(index))
                let lowerSet = coefficients + index * taps, upperSet = lowerSet + taps
                for channel in 0..<channels {
                    let past = history + channel * historyCapacity + newest - span
                    let a = Self.dot(lowerSet, past, taps), b = Self.dot(upperSet, past, taps)
                    destination[produced &* channels &+ channel] = a + (b - a) * weight
                }
            }
            numerator += step
            newest += numerator / denominator
            numerator %= denominator
            produced += 1
        }

        // Keep what the next outputs need: `taps - 1` frames before the newest one. (An
        // output never advances more than `inputRate / outputRate` + 1 frames, fewer than
        // `taps - 1`, so those frames have all arrived.)
        let keepFrom = newest - span
        if keepFrom > 0 {
            let kept = count - keepFrom
            for channel in 0..<channels {
                let line = history + channel * historyCapacity
                memmove(line, line + keepFrom, kept * MemoryLayout<Float>.stride)
            }
            count = kept
            newest -= keepFrom
        }
        return produced
    }

    /// `sum(a[i] * b[i])` for `n` a multiple of 8, in eight lanes.
    @inline(__always)
    private static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ n: Int) -> Float {
        var low = SIMD8<Float>(), high = SIMD8<Float>()
        var i = 0
        let a = UnsafeRawPointer(a), b = UnsafeRawPointer(b)
        let stride = MemoryLayout<Float>.stride
        while i + 16 <= n {
            low += a.loadUnaligned(fromByteOffset: i &* stride, as: SIMD8<Float>.self)
                * b.loadUnaligned(fromByteOffset: i &* stride, as: SIMD8<Float>.self)
            high += a.loadUnaligned(fromByteOffset: (i &+ 8) &* stride, as: SIMD8<Float>.self)
                * b.loadUnaligned(fromByteOffset: (i &+ 8) &* stride, as: SIMD8<Float>.self)
            i &+= 16
        }
        if i < n {
            low += a.loadUnaligned(fromByteOffset: i &* stride, as: SIMD8<Float>.self)
                * b.loadUnaligned(fromByteOffset: i &* stride, as: SIMD8<Float>.self)
        }
        return (low + high).sum()
    }

    /// The windowed-sinc coefficients. Set `p` serves outputs that lie `p / phases` of an
    /// input frame after the newest frame they use: tap `j` (applied to the frame `j`
    /// before the newest) is the kernel at `j + p / phases - taps / 2` input frames. Each
    /// set is scaled to a DC gain of exactly 1 and stored reversed.
    private static func design(into table: UnsafeMutablePointer<Float>, sets: Int, phases: Int, taps: Int, cutoff: Double, beta: Double) {
        let half = Double(taps / 2)
        let besselBeta = bessel0(beta)
        var row = [Double](repeating: 0, count: taps)
        for set in 0..<sets {
            let fraction = Double(set) / Double(phases)
            var sum = 0.0
            for tap in 0..<taps {
                let t = Double(tap) + fraction - half
                let ratio = t / half
                let window = abs(ratio) >= 1 ? 0 : bessel0(beta * (1 - ratio * ratio).squareRoot()) / besselBeta
                let x = 2 * cutoff * t
                let sinc = x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x)
                row[tap] = 2 * cutoff * sinc * window
                sum += row[tap]
            }
            for tap in 0..<taps { table[set * taps + (taps - 1 - tap)] = Float(row[tap] / sum) }
        }
    }

    /// The modified Bessel function of the first kind, order 0 (the Kaiser window's).
    static func bessel0(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0
        let quarter = x * x / 4
        var k = 1.0
        while term > sum * 1e-17 {
            term *= quarter / (k * k)
            sum += term
            k += 1
        }
        return sum
    }

    private static func gcd(_ a: Int, _ b: Int) -> Int {
        var (a, b) = (a, b)
        while b != 0 { (a, b) = (b, a % b) }
        return a
    }
}
