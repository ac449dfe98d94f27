#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Silero's front end, the export's "learned" STFT, as a fast transform. The file stores it as
/// a convolution of 258 filters of 256 taps (the real then the imaginary parts of each bin),
/// but those filters are a periodic Hann window times the DFT's cosines and sines (within
/// 8e-8 in the pinned file). Run as that convolution, they were 264,000 multiply-adds and
/// 264 KB of weights read four times a frame, two fifths of the model's work; as a real FFT
/// of 256 they are a few thousand, and the window is the only table.
///
/// The window is read from the file (the zero-frequency row), and the whole basis is checked
/// against it at load: a file whose filters are anything else is refused rather than run as
/// something it is not. The four frames of a call go through the transform side by side, one
/// in each lane of a `SIMD4<Float>`.
final class SileroSTFT {
    static let length = 256, bins = 129, frames = 4, hop = 128
    /// The real FFT of 256 runs as a complex FFT of 128 (even samples real, odd imaginary).
    private static let half = 128

    private let window: [Float]
    /// e^(−2πi j / 128) for j < 64 (the complex FFT's butterflies), and e^(−2πi k / 256) for
    /// k ≤ 128 (the split that recovers the real signal's bins); real and imaginary apart.
    private let butterflyCos: [Float], butterflySin: [Float]
    private let splitCos: [Float], splitSin: [Float]
    private let reversal: [Int]
    private let real = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: half)
    private let imaginary = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: half)

    /// `basis` is the file's [258][256] filters; throws when they are not a windowed DFT.
    init(basis: [Float]) throws(ModelError) {
        let n = Self.length
        precondition(basis.count == 2 * Self.bins * n)
        let window = Array(basis[0..<n])
        for k in 0..<Self.bins {
            for t in 0..<n {
                let angle = 2 * Double.pi * Double((k * t) % n) / Double(n)
                let w = Double(window[t])
                let re = Double(basis[k * n + t]), im = Double(basis[(Self.bins + k) * n + t])
                guard abs(re - w * cos(angle)) <= 1e-6, abs(im + w * sin(angle)) <= 1e-6 else {
                    throw .unexpectedGraph("Silero's STFT filter \(k) is not the windowed DFT this build computes")
                }
            }
        }
        self.window = window
        butterflyCos = (0..<Self.half / 2).map { Float(cos(-2 * Double.pi * Double($0) / Double(Self.half))) }
        butterflySin = (0..<Self.half / 2).map { Float(sin(-2 * Double.pi * Double($0) / Double(Self.half))) }
        splitCos = (0...Self.half).map { Float(cos(-2 * Double.pi * Double($0) / Double(n))) }
        splitSin = (0...Self.half).map { Float(sin(-2 * Double.pi * Double($0) / Double(n))) }
        let bits = Self.half.trailingZeroBitCount
        reversal = (0..<Self.half).map { i in
            var r = 0
            for b in 0..<bits where i & (1 << b) != 0 { r |= 1 << (bits - 1 - b) }
            return r
        }
    }

    deinit {
        real.deallocate()
        imaginary.deallocate()
    }

    /// The magnitudes of the four frames of 256 that start every 128 samples of `signal`
    /// (640 samples), stored [bin][frame]: `magnitudes[4·bin + frame]`.
    func magnitudes(_ signal: UnsafePointer<Float>, into magnitudes: UnsafeMutablePointer<Float>) {
        let half = Self.half, hop = Self.hop
        // Windowed, paired (z[m] = y[2m] + i·y[2m+1]) and written in bit-reversed order.
        window.withUnsafeBufferPointer { w in
            reversal.withUnsafeBufferPointer { reversal in
                for m in 0..<half {
                    let even = w[2 * m], odd = w[2 * m + 1]
                    let s = signal + 2 * m
                    real[reversal[m]] = SIMD4(s[0], s[hop], s[2 * hop], s[3 * hop]) * even
                    imaginary[reversal[m]] = SIMD4(s[1], s[hop + 1], s[2 * hop + 1], s[3 * hop + 1]) * odd
                }
            }
        }
        // Radix-2 passes: spans of 1, 2, 4 … 64, each butterfly on all four frames.
        butterflyCos.withUnsafeBufferPointer { wc in
            butterflySin.withUnsafeBufferPointer { ws in
                var span = 1
                while span < half {
                    let step = half / (2 * span)
                    var group = 0
                    while group < half {
                        for j in 0..<span {
                            let c = SIMD4<Float>(repeating: wc[j * step]), s = SIMD4<Float>(repeating: ws[j * step])
                            let a = group + j, b = a + span
                            let br = real[b] * c - imaginary[b] * s
                            let bi = real[b] * s + imaginary[b] * c
                            real[b] = real[a] - br
                            imaginary[b] = imaginary[a] - bi
                            real[a] += br
                            imaginary[a] += bi
                        }
                        group += 2 * span
                    }
                    span *= 2
                }
            }
        }
        // X[k] = (Z[k] + conj Z[128−k]) / 2 + W_256^k · (Z[k] − conj Z[128−k]) / 2i.
        splitCos.withUnsafeBufferPointer { wc in
            splitSin.withUnsafeBufferPointer { ws in
                for k in 0...half {
                    let a = k % half, b = (half - k) % half
                    let zr = real[a], zi = imaginary[a], cr = real[b], ci = -imaginary[b]
                    let er = (zr + cr) * 0.5, ei = (zi + ci) * 0.5
                    // (Z[k] − conj Z[128−k]) / 2, divided by i.
                    let or = (zi - ci) * 0.5, oi = (cr - zr) * 0.5
                    let c = SIMD4<Float>(repeating: wc[k]), s = SIMD4<Float>(repeating: ws[k])
                    let xr = er + c * or - s * oi
                    let xi = ei + c * oi + s * or
                    UnsafeMutableRawPointer(magnitudes + 4 * k).storeBytes(of: (xr * xr + xi * xi).squareRoot(), as: SIMD4<Float>.self)
                }
            }
        }
    }
}
