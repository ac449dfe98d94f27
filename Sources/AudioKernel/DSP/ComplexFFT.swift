import Glibc

/// An in-place complex FFT of a power-of-two length, on split real and imaginary arrays:
/// the engine of ``MDCT``.
///
/// Radix-4 passes (a radix-2 pass first when the length is an odd power of two) over a
/// bit-reversed input, with every twiddle factor tabulated at init: per call no allocation,
/// no trigonometry, and three quarters of radix-2's multiplications by a twiddle.
/// Forward: `X[k] = Σ x[n] e^(-2πi nk / L)`, unscaled.
final class ComplexFFT {
    let length: Int
    private let reversal: UnsafeMutablePointer<Int32>
    /// cos and -sin of 2πj/L for j < L.
    private let cosines: UnsafeMutablePointer<Float>
    private let sines: UnsafeMutablePointer<Float>

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
        cosines = .allocate(capacity: length)
        sines = .allocate(capacity: length)
        for j in 0..<length {
            let angle = 2 * Double.pi * Double(j) / Double(length)
            cosines[j] = Float(cos(angle))
            sines[j] = Float(-sin(angle))
        }
    }

    deinit {
        reversal.deallocate()
        cosines.deallocate()
        sines.deallocate()
    }

    /// Transforms `re` + i`im` (each `length` long) in place.
    func forward(re: UnsafeMutablePointer<Float>, im: UnsafeMutablePointer<Float>) {
        let n = length
        for i in 0..<n {
            let j = Int(reversal[i])
            if j > i {
                swap(&re[i], &re[j])
                swap(&im[i], &im[j])
            }
        }
        var size = 1
        if n.trailingZeroBitCount & 1 == 1 {
            var i = 0
            while i < n {
                let ar = re[i], ai = im[i], br = re[i + 1], bi = im[i + 1]
                re[i] = ar + br; im[i] = ai + bi
                re[i + 1] = ar - br; im[i + 1] = ai - bi
                i += 2
            }
            size = 2
        }
        // Each radix-4 pass joins four transforms of `size` into one of 4·size: bit reversal
        // put the four quarters' inputs in order, so the butterfly reads them at stride `size`.
        while size < n {
            let span = size * 4
            let step = n / span
            var start = 0
            while start < n {
                for j in 0..<size {
                    let t1 = j * step, t2 = 2 * t1, t3 = 3 * t1
                    let i0 = start + j, i1 = i0 + size, i2 = i1 + size, i3 = i2 + size
                    // Inputs in bit-reversed quarters: i1 holds the transform of the samples
                    // 2 mod 4, i2 those 1 mod 4.
                    let w1r = cosines[t2], w1i = sines[t2]
                    let w2r = cosines[t1], w2i = sines[t1]
                    let w3r = cosines[t3], w3i = sines[t3]
                    let x0r = re[i0], x0i = im[i0]
                    let x2r = re[i1] * w1r - im[i1] * w1i, x2i = re[i1] * w1i + im[i1] * w1r
                    let x1r = re[i2] * w2r - im[i2] * w2i, x1i = re[i2] * w2i + im[i2] * w2r
                    let x3r = re[i3] * w3r - im[i3] * w3i, x3i = re[i3] * w3i + im[i3] * w3r
                    let ar = x0r + x2r, ai = x0i + x2i
                    let br = x0r - x2r, bi = x0i - x2i
                    let cr = x1r + x3r, ci = x1i + x3i
                    let dr = x1r - x3r, di = x1i - x3i
                    re[i0] = ar + cr; im[i0] = ai + ci
                    re[i2] = ar - cr; im[i2] = ai - ci
                    // -i·d
                    re[i1] = br + di; im[i1] = bi - dr
                    re[i3] = br - di; im[i3] = bi + dr
                }
                start += span
            }
            size = span
        }
    }
}
