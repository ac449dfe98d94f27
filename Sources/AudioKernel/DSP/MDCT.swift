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
        dctIV(folded, output, scale: 1)
    }

    /// The inverse transform before its unfolding: `size / 2` coefficients in, the DCT-IV's
    /// `size / 2` outputs times `scale` out. ``inverse(_:_:)`` unfolds them into
    /// `(v2, -v2_r, -v1_r, -v1)`; a caller that windows the result can read them from here
    /// and skip writing and reading the `size` samples.
    public func inverseFolded(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>, scale: Float) {
        dctIV(input, output, scale: scale)
    }

    /// `size / 2` coefficients in, `size` samples out (to be windowed and overlapped).
    public func inverse(_ input: UnsafePointer<Float>, _ output: UnsafeMutablePointer<Float>) {
        dctIV(input, folded, scale: 1)
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
    /// Both rotations run four points at a time: the input's even samples and its odd ones
    /// read backwards come from two 8-wide loads, and the output's even slots (`yr` at k) and
    /// odd slots (`-yi` at h − 1 − k, backwards) go out in one 8-wide store.
    private func dctIV(_ u: UnsafePointer<Float>, _ x: UnsafeMutablePointer<Float>, scale: Float) {
        if fft.startsWithRadix4 {
            rotateWithFirstPass(u)
            fft.forwardPermuted(re: re, im: im, firstPassDone: true)
        } else {
            rotate(u)
            fft.forwardPermuted(re: re, im: im)
        }
        let h = half / 2
        var k = 0
        while k < h {
            // yr for k...k+3; yi for the mirrored block h-4-k ... h-1-k.
            let c = Self.load4(postCos + k) * scale, s = Self.load4(postSin + k) * scale
            let yr = Self.load4(re + k) * c - Self.load4(im + k) * s
            let mirror = h - 4 - k
            let cm = Self.load4(postCos + mirror) * scale, sm = Self.load4(postSin + mirror) * scale
            let yi = Self.load4(re + mirror) * sm + Self.load4(im + mirror) * cm
            var out = SIMD8<Float>()
            out.evenHalf = yr
            out.oddHalf = -Self.reversed(yi)
            UnsafeMutableRawPointer(x + 2 * k).storeBytes(of: out, as: SIMD8<Float>.self)
            k &+= 4
        }
    }

    /// The pre-rotation z[n] = (u[2n] + i·u[M−1−2n])·e^(−iπ(n + ¼)/M) for n n+1 n+2 n+3.
    @inline(__always)
    private func rotated(_ u: UnsafePointer<Float>, _ n: Int) -> (re: SIMD4<Float>, im: SIMD4<Float>) {
        let a = Self.load8(u + 2 * n).evenHalf
        let b = Self.reversed(Self.load8(u + (half - 8 - 2 * n)).oddHalf)
        let c = Self.load4(preCos + n), s = Self.load4(preSin + n)
        return (a * c - b * s, a * s + b * c)
    }

    /// The pre-rotation, stored in bit-reversed order: the FFT skips its permutation pass.
    private func rotate(_ u: UnsafePointer<Float>) {
        let reversal = fft.reversal
        var n = 0
        while n < half / 2 {
            let (r, i) = rotated(u, n)
            for j in 0..<4 {
                let at = Int(reversal[n + j])
                re[at] = r[j]
                im[at] = i[j]
            }
            n &+= 4
        }
    }

    /// The pre-rotation and the FFT's first radix-4 pass (span 1, no twiddles) together: the
    /// four inputs of that pass's butterfly at 4·rev(n) are z[n], z[n + L/2], z[n + L/4] and
    /// z[n + 3L/4] (L the FFT's length), computed here four n at a time, each lane one
    /// butterfly, and stored as its four outputs.
    private func rotateWithFirstPass(_ u: UnsafePointer<Float>) {
        let reversal = fft.reversal
        let quarter = half / 8
        var n = 0
        while n < quarter {
            let (r0, i0) = rotated(u, n), (r1, i1) = rotated(u, n + quarter)
            let (r2, i2) = rotated(u, n + 2 * quarter), (r3, i3) = rotated(u, n + 3 * quarter)
            let ar = r0 + r2, ai = i0 + i2, br = r0 - r2, bi = i0 - i2
            let cr = r1 + r3, ci = i1 + i3, dr = r1 - r3, di = i1 - i3
            let outR = Self.transpose(ar + cr, br + di, ar - cr, br - di)
            let outI = Self.transpose(ai + ci, bi - dr, ai - ci, bi + dr)
            for j in 0..<4 {
                let at = Int(reversal[n + j])
                UnsafeMutableRawPointer(re + at).storeBytes(of: outR[j], as: SIMD4<Float>.self)
                UnsafeMutableRawPointer(im + at).storeBytes(of: outI[j], as: SIMD4<Float>.self)
            }
            n &+= 4
        }
    }

    /// Rows of the 4 × 4 matrix whose columns are `a b c d`.
    @inline(__always)
    private static func transpose(_ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>, _ d: SIMD4<Float>) -> InlineArray<4, SIMD4<Float>> {
        [SIMD4(a[0], b[0], c[0], d[0]), SIMD4(a[1], b[1], c[1], d[1]),
         SIMD4(a[2], b[2], c[2], d[2]), SIMD4(a[3], b[3], c[3], d[3])]
    }

    @inline(__always)
    private static func load4(_ p: UnsafePointer<Float>) -> SIMD4<Float> { UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self) }
    @inline(__always)
    private static func load4(_ p: UnsafeMutablePointer<Float>) -> SIMD4<Float> { UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self) }
    @inline(__always)
    private static func load8(_ p: UnsafePointer<Float>) -> SIMD8<Float> { UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float>.self) }
    @inline(__always)
    private static func reversed(_ v: SIMD4<Float>) -> SIMD4<Float> { SIMD4(v[3], v[2], v[1], v[0]) }
}
