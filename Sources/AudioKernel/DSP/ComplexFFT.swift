import Glibc

/// An in-place complex FFT of a power-of-two length, on split real and imaginary arrays:
/// the engine of ``MDCT``.
///
/// Radix-4 passes (a radix-2 pass first when the length is an odd power of two) over a
/// bit-reversed input. Each pass's twiddle factors are tabulated at init in the order the
/// pass reads them, so that the butterflies run four at a time on `SIMD4<Float>` (a pass of
/// span 4 or more) with contiguous loads: per call no allocation, no trigonometry.
/// Forward: `X[k] = Σ x[n] e^(-2πi nk / L)`, unscaled.
final class ComplexFFT {
    let length: Int
    /// The bit-reversed index of each index: the caller writes its input through it (the
    /// transform itself has no permutation pass).
    let reversal: UnsafeMutablePointer<Int32>
    /// Per radix-4 pass of quarter size `s`: w^j, w^2j, w^3j for j < s (real then imaginary
    /// parts), w = e^(-2πi / 4s).
    private let twiddles: UnsafeMutablePointer<Float>
    private let passes: [(size: Int, offset: Int)]

    init(length: Int) {
        precondition(length >= 4 && length & (length - 1) == 0, "a power of two from 4")
        self.length = length
        let bits = length.trailingZeroBitCount
        reversal = .allocate(capacity: length)
        for i in 0..<length {
            var r = 0
            for b in 0..<bits where i & (1 << b) != 0 { r |= 1 << (bits - 1 - b) }
            reversal[i] = Int32(r)
        }
        var size = bits & 1 == 1 ? 2 : 1
        var total = 0
        var passes: [(size: Int, offset: Int)] = []
        while size < length {
            passes.append((size, total))
            total += 6 * size
            size *= 4
        }
        self.passes = passes
        twiddles = .allocate(capacity: max(total, 1))
        for (size, offset) in passes {
            for j in 0..<size {
                for m in 1...3 {
                    let angle = -2 * Double.pi * Double(m * j) / Double(4 * size)
                    twiddles[offset + (2 * (m - 1)) * size + j] = Float(cos(angle))
                    twiddles[offset + (2 * (m - 1) + 1) * size + j] = Float(sin(angle))
                }
            }
        }
    }

    deinit {
        reversal.deallocate()
        twiddles.deallocate()
    }

    /// Whether the first pass is a radix-4 one of span 1 (an even power of two), which a
    /// caller may fuse into the writing of its input (``forwardPermuted(re:im:firstPassDone:)``).
    var startsWithRadix4: Bool { length.trailingZeroBitCount & 1 == 0 }

    /// Transforms in place an input already stored in bit-reversed order (`x[n]` at
    /// `reversal[n]`); with `firstPassDone`, one that has been through the span-1 radix-4
    /// pass as well.
    func forwardPermuted(re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>, firstPassDone: Bool = false) {
        let n = length
        if n.trailingZeroBitCount & 1 == 1 {
            var i = 0
            while i < n {
                let ar = re[i], ai = im[i], br = re[i + 1], bi = im[i + 1]
                re[i] = ar + br; im[i] = ai + bi
                re[i + 1] = ar - br; im[i + 1] = ai - bi
                i += 2
            }
        }
        // Each radix-4 pass joins four transforms of `size` into one of 4·size. Bit reversal
        // put the quarters in the order 0, 2, 1, 3 mod 4 of the samples.
        for (size, offset) in passes {
            let w1r = twiddles + offset, w1i = w1r + size
            let w2r = w1i + size, w2i = w2r + size
            let w3r = w2i + size, w3i = w3r + size
            var start = 0
            if size == 1 && firstPassDone { continue }
            if size == 1 {
                // The first radix-4 pass: every twiddle is 1, so no products.
                var i = 0
                while i < n {
                    Self.butterfly(re + i, im + i)
                    i &+= 4
                }
                continue
            }
            while start < n {
                if size >= 4 {
                    var j = 0
                    while j < size {
                        Self.butterfly4(re + start + j, im + start + j, size,
                                        Self.load(w1r + j), Self.load(w1i + j), Self.load(w2r + j),
                                        Self.load(w2i + j), Self.load(w3r + j), Self.load(w3i + j))
                        j &+= 4
                    }
                } else {
                    for j in 0..<size {
                        Self.butterfly(re + start + j, im + start + j, size, w1r[j], w1i[j], w2r[j], w2i[j], w3r[j], w3i[j])
                    }
                }
                start &+= 4 * size
            }
        }
    }

    /// One radix-4 butterfly: x0 + w^2j·x(2 mod 4) ± w^j·x(1 mod 4) ± w^3j·x(3 mod 4).
    @inline(__always)
    private static func butterfly(_ re: UnsafeMutablePointer<Float>, _ im: UnsafeMutablePointer<Float>, _ s: Int,
                                  _ w1r: Float, _ w1i: Float, _ w2r: Float, _ w2i: Float, _ w3r: Float, _ w3i: Float) {
        let x0r = re[0], x0i = im[0]
        // The second quarter holds the samples 2 mod 4: their factor is w^2j.
        let x2r = re[s] * w2r - im[s] * w2i, x2i = re[s] * w2i + im[s] * w2r
        let x1r = re[2 * s] * w1r - im[2 * s] * w1i, x1i = re[2 * s] * w1i + im[2 * s] * w1r
        let x3r = re[3 * s] * w3r - im[3 * s] * w3i, x3i = re[3 * s] * w3i + im[3 * s] * w3r
        let ar = x0r + x2r, ai = x0i + x2i, br = x0r - x2r, bi = x0i - x2i
        let cr = x1r + x3r, ci = x1i + x3i, dr = x1r - x3r, di = x1i - x3i
        re[0] = ar + cr; im[0] = ai + ci
        re[2 * s] = ar - cr; im[2 * s] = ai - ci
        re[s] = br + di; im[s] = bi - dr
        re[3 * s] = br - di; im[3 * s] = bi + dr
    }

    @inline(__always)
    private static func load(_ p: UnsafeMutablePointer<Float>) -> SIMD4<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self)
    }

    /// A radix-4 butterfly of span 1 (j = 0: no twiddles).
    @inline(__always)
    private static func butterfly(_ re: UnsafeMutablePointer<Float>, _ im: UnsafeMutablePointer<Float>) {
        let ar = re[0] + re[1], ai = im[0] + im[1], br = re[0] - re[1], bi = im[0] - im[1]
        let cr = re[2] + re[3], ci = im[2] + im[3], dr = re[2] - re[3], di = im[2] - im[3]
        re[0] = ar + cr; im[0] = ai + ci
        re[2] = ar - cr; im[2] = ai - ci
        re[1] = br + di; im[1] = bi - dr
        re[3] = br - di; im[3] = bi + dr
    }

    /// Four butterflies at once, j to j + 3.
    @inline(__always)
    private static func butterfly4(_ re: UnsafeMutablePointer<Float>, _ im: UnsafeMutablePointer<Float>, _ s: Int,
                                   _ w1r: SIMD4<Float>, _ w1i: SIMD4<Float>, _ w2r: SIMD4<Float>, _ w2i: SIMD4<Float>,
                                   _ w3r: SIMD4<Float>, _ w3i: SIMD4<Float>) {
        func load(_ p: UnsafeMutablePointer<Float>) -> SIMD4<Float> { UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self) }
        func store(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<Float>) { UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD4<Float>.self) }
        let x0r = load(re), x0i = load(im)
        let ar1 = load(re + s), ai1 = load(im + s)
        let ar2 = load(re + 2 * s), ai2 = load(im + 2 * s)
        let ar3 = load(re + 3 * s), ai3 = load(im + 3 * s)
        let x2r = ar1 * w2r - ai1 * w2i, x2i = ar1 * w2i + ai1 * w2r
        let x1r = ar2 * w1r - ai2 * w1i, x1i = ar2 * w1i + ai2 * w1r
        let x3r = ar3 * w3r - ai3 * w3i, x3i = ar3 * w3i + ai3 * w3r
        let ar = x0r + x2r, ai = x0i + x2i, br = x0r - x2r, bi = x0i - x2i
        let cr = x1r + x3r, ci = x1i + x3i, dr = x1r - x3r, di = x1i - x3i
        store(ar + cr, re); store(ai + ci, im)
        store(ar - cr, re + 2 * s); store(ai - ci, im + 2 * s)
        store(br + di, re + s); store(bi - dr, im + s)
        store(br - di, re + 3 * s); store(bi + dr, im + 3 * s)
    }
}
