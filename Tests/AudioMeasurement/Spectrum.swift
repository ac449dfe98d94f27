import Foundation

// Measurements of audio for the tests and the benchmarks (not shipped): a spectrum good to
// well under -150 dB, and the rejection of a sample-rate converter read from it.

/// A spectrum under a Kaiser window (β = 20: sidelobes under -180 dB, so leakage never
/// hides a spur; main lobe ±8 bins). Amplitudes come from the energy of a tone's main lobe
/// (Parseval), so they do not depend on where the tone falls between bins.
public struct Spectrum {
    public let magnitudes: [Double]
    public let rate: Double
    public let size: Int
    /// The window's equivalent noise bandwidth in bins: lobe energy / ENBW = amplitude².
    private let bandwidth: Double
    static let lobe = 8

    /// The spectrum of `samples` (a power of two of them) taken at `rate` Hz.
    public init(_ samples: [Double], rate: Double) {
        let size = samples.count
        self.size = size
        self.rate = rate
        let beta = 20.0
        let window = (0..<size).map { i -> Double in
            let r = 2 * Double(i) / Double(size - 1) - 1
            return Spectrum.bessel0(beta * max(0, 1 - r * r).squareRoot()) / Spectrum.bessel0(beta)
        }
        let sum = window.reduce(0, +)
        bandwidth = Double(size) * window.map { $0 * $0 }.reduce(0, +) / (sum * sum)
        var re = zip(samples, window).map { $0 * $1 }, im = [Double](repeating: 0, count: size)
        Spectrum.fft(&re, &im)
        let (real, imaginary) = (re, im)
        magnitudes = (0...(samples.count / 2)).map { 2 * (real[$0] * real[$0] + imaginary[$0] * imaginary[$0]).squareRoot() / sum }
    }

    private func bin(_ frequency: Double) -> Int { Int((frequency / rate * Double(size)).rounded()) }

    private func lobeEnergy(_ centre: Int) -> Double {
        (max(1, centre - Self.lobe)...min(magnitudes.count - 1, centre + Self.lobe)).map { magnitudes[$0] * magnitudes[$0] }.reduce(0, +)
    }

    /// A tone's amplitude.
    public func amplitude(at frequency: Double) -> Double { (lobeEnergy(bin(frequency)) / bandwidth).squareRoot() }

    /// The loudest bin outside the tone's main lobe, in dB relative to the tone.
    public func worstSpur(excluding frequency: Double) -> (level: Double, frequency: Double) {
        let centre = bin(frequency)
        let tone = amplitude(at: frequency)
        var worst = (level: -400.0, frequency: 0.0)
        for index in 1..<magnitudes.count where abs(index - centre) > Self.lobe {
            let level = 20 * log10(max(magnitudes[index], 1e-30) / tone)
            if level > worst.level { worst = (level, Double(index) * rate / Double(size)) }
        }
        return worst
    }

    /// Everything but the fundamental, against the fundamental, in dB.
    public func thdPlusNoise(fundamental frequency: Double) -> Double {
        let centre = bin(frequency)
        var rest = 0.0
        for index in 1..<magnitudes.count where abs(index - centre) > Self.lobe { rest += magnitudes[index] * magnitudes[index] }
        return 10 * log10(rest / lobeEnergy(centre))
    }

    /// In-place radix-2 FFT (the size is a power of two).
    static func fft(_ re: inout [Double], _ im: inout [Double]) {
        let n = re.count
        var j = 0
        for i in 1..<n {
            var bit = n >> 1
            while j & bit != 0 { j ^= bit; bit >>= 1 }
            j |= bit
            if i < j { re.swapAt(i, j); im.swapAt(i, j) }
        }
        var length = 2
        while length <= n {
            let angle = -2 * Double.pi / Double(length)
            for start in stride(from: 0, to: n, by: length) {
                for k in 0..<(length / 2) {
                    let (wr, wi) = (cos(angle * Double(k)), sin(angle * Double(k)))
                    let (a, b) = (start + k, start + k + length / 2)
                    let (xr, xi) = (re[b] * wr - im[b] * wi, re[b] * wi + im[b] * wr)
                    re[b] = re[a] - xr; im[b] = im[a] - xi
                    re[a] += xr; im[a] += xi
                }
            }
            length <<= 1
        }
    }

    /// The modified Bessel function of the first kind, order 0 (the Kaiser window's). The
    /// resampler has its own: a measurement must not share code with what it measures.
    static func bessel0(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0, k = 1.0
        let quarter = x * x / 4
        while term > sum * 1e-17 {
            term *= quarter / (k * k)
            sum += term
            k += 1
        }
        return sum
    }
}
