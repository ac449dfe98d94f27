import Glibc

/// The modified discrete cosine transform of AAC's filterbank (ISO/IEC 14496-3, 4.6.11),
/// for a window of `size` samples (2048 long, 256 short) and `size / 2` coefficients:
///
///     X[k] = Σ x[n] cos(2π/N (n + n₀)(k + ½)),   n₀ = N/4 + ½      (forward)
///     y[n] = Σ X[k] cos(2π/N (n + n₀)(k + ½))                     (inverse)
///
/// both unscaled (the caller's window and gain carry the scale). Each is a fold or unfold of
/// the input's quarters around a DCT-IV of N/2 points, computed by an N/8-point complex FFT
/// between two rotations: N/2 · log₂(N/8) butterflies in place of N²/2 products.
/// Not thread-safe: it owns its scratch space, so one instance per thread.
public final class MDCT {
    public let size: Int
    private let half: Int
    private let fft: ComplexFFT
    private let preCos: UnsafeMutablePointer<Float>, preSin: UnsafeMutablePointer<Float>
    private let postCos: UnsafeMutablePointer<Float>, postSin: UnsafeMutablePointer<Float>
    private let re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>
    private let folded: UnsafeMutablePointer<Float>

    public init(size: Int) {
        precondition(size >= 32 && size & (size - 1) == 0, "a power of two from 32")
        self.size = size
        half = size / 2
        let quarter = size / 4
        fft = ComplexFFT(length: quarter)
        preCos = .allocate(capacity: quarter); preSin = .allocate(capacity: quarter)
        postCos = .allocate(capacity: quarter); postSin = .allocate(capacity: quarter)
        for n in 0..<quarter {
            let pre = -Double.pi * (Double(n) + 0.25) / Double(half)
            preCos[n] = Float(cos(pre)); preSin[n] = Float(sin(pre))
            let post = -Double.pi * Double(n) / Double(half)
            postCos[n] = Float(cos(post)); postSin[n] = Float(sin(post))
        }
        re = .allocate(capacity: quarter); im = .allocate(capacity: quarter)
        folded = .allocate(capacity: half)
    }

    deinit {
        for p in [preCos, preSin, postCos, postSin, re, im, folded] { p.deallocate() }
    }

    /// `size` windowed samples in, `size / 2` coefficients out.
    public func forward(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        // Quarters a b c d of the input fold into (-c_r - d, a - b_r).
        let q = size / 4
        for n in 0..<q {
            folded[n] = -input[3 * q - 1 - n] - input[3 * q + n]
            folded[q + n] = input[n] - input[2 * q - 1 - n]
        }
        dctIV(folded, output)
    }

    /// `size / 2` coefficients in, `size` samples out (to be windowed and overlapped).
    public func inverse(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        dctIV(input, folded)
        // The DCT-IV's halves v1 v2 unfold into (v2, -v2_r, -v1_r, -v1).
        let q = size / 4
        for n in 0..<q {
            let v1 = folded[n], v2 = folded[q + n]
            output[n] = v2
            output[half - 1 - n] = -v2
            output[half + q - 1 - n] = -v1
            output[half + q + n] = -v1
        }
    }

    /// X[k] = Σ u[n] cos(π/M (n + ½)(k + ½)) for M = size/2, through an M/2-point FFT.
    private func dctIV(_ u: UnsafePointer<Float>, _ x: UnsafeMutablePointer<Float>) {
        let m = half, h = half / 2
        for n in 0..<h {
            let a = u[2 * n], b = u[m - 1 - 2 * n]
            let c = preCos[n], s = preSin[n]
            re[n] = a * c - b * s
            im[n] = a * s + b * c
        }
        fft.forward(re: re, im: im)
        for k in 0..<h {
            let c = postCos[k], s = postSin[k]
            let yr = re[k] * c - im[k] * s
            let yi = re[k] * s + im[k] * c
            x[2 * k] = yr
            x[m - 1 - 2 * k] = -yi
        }
    }
}
