#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whisper's log-mel features as smart-turn v3 is fed them (pipecat's
/// `_whisper_features.py`, after transformers' WhisperFeatureExtractor with chunk_length 8):
/// 8 s at 16 kHz normalized to zero mean and unit variance; a centred STFT (reflect padding
/// of 200, periodic Hann window of 400, hop 160); power onto 80 Slaney mel filters from 0 to
/// 8 kHz; log10 floored at 1e-10; the last of the 801 frames dropped; everything below the
/// window's maximum − 8 raised to it; (x + 4) / 4. Output [80][800], bin-major.
///
/// In double precision, as the reference: the features agree with it to within 1e-6.
public final class WhisperFeatures {
    public static let sampleRate = 16_000
    public static let windowSamples = 128_000
    public static let bins = 80, frames = 800
    static let fftLength = 400, hop = 160, spectrumBins = 201

    private let dft = MixedRadixDFT()
    private let window: [Double]
    /// [mel][first, count, weights...]: each filter's nonzero span of the 201 bins.
    private let filters: [(first: Int, weights: [Double])]
    private var frame: [Double]
    private var power: [Double]

    public init() {
        window = (0..<Self.fftLength).map { 0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(Self.fftLength)) }
        filters = Self.melFilters()
        frame = [Double](repeating: 0, count: Self.fftLength)
        power = [Double](repeating: 0, count: Self.spectrumBins)
    }

    /// Slaney's mel scale: linear below 1 kHz, logarithmic above.
    static func hertzToMel(_ f: Double) -> Double {
        f < 1000 ? 3 * f / 200 : 15 + log(f / 1000) * 27 / log(6.4)
    }

    static func melToHertz(_ m: Double) -> Double {
        m < 15 ? 200 * m / 3 : 1000 * exp(log(6.4) / 27 * (m - 15))
    }

    /// Triangular filters between mel-spaced edges, each scaled to unit area (Slaney's norm).
    static func melFilters() -> [(first: Int, weights: [Double])] {
        let low = hertzToMel(0), high = hertzToMel(8000)
        let edges = (0..<(bins + 2)).map { melToHertz(low + (high - low) * Double($0) / Double(bins + 1)) }
        let frequencies = (0..<spectrumBins).map { 8000 * Double($0) / Double(spectrumBins - 1) }
        return (0..<bins).map { m in
            let norm = 2 / (edges[m + 2] - edges[m])
            let weights = frequencies.map { f -> Double in
                let down = (f - edges[m]) / (edges[m + 1] - edges[m])
                let up = (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1])
                return max(0, min(down, up)) * norm
            }
            let first = weights.firstIndex { $0 > 0 } ?? 0
            let last = weights.lastIndex { $0 > 0 } ?? 0
            return (first, Array(weights[first...max(first, last)]))
        }
    }

    /// The features of exactly 8 s of audio (`samples.count == 128_000`; pad with zeros at the
    /// front, as pipecat does, for less), written to `output` ([80][800] floats).
    public func compute(_ samples: UnsafeBufferPointer<Float>, into output: UnsafeMutablePointer<Float>) {
        compute(samples.count, into: output) { Double(samples[$0]) }
    }

    /// The same for PCM16 samples, each read as `sample / 32768`: the features are those of
    /// the Float samples `Float(sample) / 32768`, to the bit (both conversions are exact). The
    /// daemon keeps its 8 s as PCM16, half the memory of floats.
    public func compute(_ samples: UnsafeBufferPointer<Int16>, into output: UnsafeMutablePointer<Float>) {
        compute(samples.count, into: output) { Double(samples[$0]) / 32_768 }
    }

    @inline(__always)
    private func compute(_ n: Int, into output: UnsafeMutablePointer<Float>, sample: (Int) -> Double) {
        precondition(n == Self.windowSamples, "Whisper's features take 8 s at 16 kHz")
        let pad = Self.fftLength / 2
        var sum = 0.0
        for i in 0..<n { sum += sample(i) }
        let mean = sum / Double(n)
        var squares = 0.0
        for i in 0..<n { squares += (sample(i) - mean) * (sample(i) - mean) }
        let scale = 1 / (squares / Double(n) + 1e-7).squareRoot()
        // Each frame is read from the samples where it lies, normalized as it is read, the
        // reflections at both ends included: no padded copy of the 8 s (1 MB of doubles).
        // Each log-mel value goes to `output` at once as (x + 4) / 4, and the floor (the
        // maximum − 8) is applied there afterwards: x ↦ Float((x + 4) / 4) never decreases,
        // so raising its result to the floor's gives the bits raising x would have given,
        // without a window of doubles (512 KB) held until the maximum is known.
        var maximum = -Double.infinity
        frame.withUnsafeMutableBufferPointer { frame in
            power.withUnsafeMutableBufferPointer { power in
                for t in 0..<Self.frames {
                    for i in 0..<Self.fftLength {
                        // Padded index t · hop + i is sample t · hop + i − pad, reflected
                        // about the first and the last sample (numpy's "reflect").
                        var j = t * Self.hop + i - pad
                        if j < 0 { j = -j } else if j >= n { j = 2 * (n - 1) - j }
                        frame[i] = (sample(j) - mean) * scale * window[i]
                    }
                    dft.powerSpectrum(frame.baseAddress!, into: power.baseAddress!)
                    for (m, filter) in filters.enumerated() {
                        var energy = 0.0
                        for (j, weight) in filter.weights.enumerated() { energy += weight * power[filter.first + j] }
                        let value = log10(max(energy, 1e-10))
                        output[m * Self.frames + t] = Self.scaled(value)
                        maximum = max(maximum, value)
                    }
                }
            }
        }
        let floor = Self.scaled(maximum - 8)
        for i in 0..<(Self.bins * Self.frames) where output[i] < floor {
            output[i] = floor
        }
    }

    @inline(__always)
    private static func scaled(_ logMel: Double) -> Float {
        Float((logMel + 4) / 4)
    }
}
