#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Float kernels of the models: matrix–vector products and activations, on `SIMD8<Float>`,
/// which LLVM lowers to whatever vectors the target has (two SSE registers on baseline
/// x86-64, two NEON registers on aarch64). Sums run in a fixed order, so a result does not
/// depend on alignment or on the machine's load: inference is deterministic.
enum FloatKernels {
    /// `y[r] = bias[r] + Σ_k matrix[r·columns + k] · x[k]` for `rows` rows; four rows at a
    /// time share each load of `x`.
    static func multiply(_ matrix: UnsafePointer<Float>, rows: Int, columns: Int,
                         _ x: UnsafePointer<Float>, bias: UnsafePointer<Float>?, into y: UnsafeMutablePointer<Float>) {
        let vectorColumns = columns & ~7
        var r = 0
        while r + 4 <= rows {
            let m0 = matrix + r * columns, m1 = m0 + columns, m2 = m1 + columns, m3 = m2 + columns
            var a0 = SIMD8<Float>(), a1 = SIMD8<Float>(), a2 = SIMD8<Float>(), a3 = SIMD8<Float>()
            var k = 0
            while k < vectorColumns {
                let v = load8(x + k)
                a0 += load8(m0 + k) * v
                a1 += load8(m1 + k) * v
                a2 += load8(m2 + k) * v
                a3 += load8(m3 + k) * v
                k += 8
            }
            var s0 = a0.sum(), s1 = a1.sum(), s2 = a2.sum(), s3 = a3.sum()
            while k < columns {
                s0 += m0[k] * x[k]; s1 += m1[k] * x[k]; s2 += m2[k] * x[k]; s3 += m3[k] * x[k]
                k += 1
            }
            if let bias { s0 += bias[r]; s1 += bias[r + 1]; s2 += bias[r + 2]; s3 += bias[r + 3] }
            y[r] = s0; y[r + 1] = s1; y[r + 2] = s2; y[r + 3] = s3
            r += 4
        }
        while r < rows {
            y[r] = dot(matrix + r * columns, x, count: columns) + (bias?[r] ?? 0)
            r += 1
        }
    }

    /// The same product for `count` vectors at once (one to four), `x` holding them one after
    /// the other (`columns` apart) and `y` receiving them likewise (`rows` apart): each row of
    /// the matrix is loaded once for all of them, where one product a vector read it `count`
    /// times (Silero's first convolution is four outputs of one 198 KB matrix).
    static func multiply(_ matrix: UnsafePointer<Float>, rows: Int, columns: Int, vectors x: UnsafePointer<Float>, count: Int,
                         bias: UnsafePointer<Float>?, into y: UnsafeMutablePointer<Float>) {
        precondition(count >= 1 && count <= 4)
        guard count > 1 else { return multiply(matrix, rows: rows, columns: columns, x, bias: bias, into: y) }
        // Vectors past `count` alias the last one: their sums are computed and not stored.
        let x0 = x, x1 = x + columns, x2 = x + min(2, count - 1) * columns, x3 = x + (count - 1) * columns
        let vectorColumns = columns & ~7
        for r in 0..<rows {
            let m = matrix + r * columns
            var a0 = SIMD8<Float>(), a1 = SIMD8<Float>(), a2 = SIMD8<Float>(), a3 = SIMD8<Float>()
            var k = 0
            while k < vectorColumns {
                let row = load8(m + k)
                a0 += row * load8(x0 + k)
                a1 += row * load8(x1 + k)
                a2 += row * load8(x2 + k)
                a3 += row * load8(x3 + k)
                k += 8
            }
            var s = SIMD4(a0.sum(), a1.sum(), a2.sum(), a3.sum())
            while k < columns {
                s += m[k] * SIMD4(x0[k], x1[k], x2[k], x3[k])
                k += 1
            }
            if let bias { s += bias[r] }
            for v in 0..<count { y[v * rows + r] = s[v] }
        }
    }

    static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, count: Int) -> Float {
        var acc = SIMD8<Float>()
        var k = 0
        while k + 8 <= count {
            acc += load8(a + k) * load8(b + k)
            k += 8
        }
        var sum = acc.sum()
        while k < count {
            sum += a[k] * b[k]
            k += 1
        }
        return sum
    }

    @inline(__always)
    static func load8(_ p: UnsafePointer<Float>) -> SIMD8<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float>.self)
    }

    @inline(__always)
    static func store8(_ v: SIMD8<Float>, _ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD8<Float>.self)
    }

    @inline(__always)
    static func sigmoid(_ x: Float) -> Float { 1 / (1 + expf(-x)) }

    /// The logistic function on four lanes, with MLAS's exp (``ErrorFunction/exp(_:)``): the
    /// LSTM's 384 gates a frame went through libm's expf one at a time, 13 % of Silero's time.
    /// Past ±80 it is 0 or 1 to a float's precision, so x is clamped there (e^x stays finite).
    @inline(__always)
    static func sigmoid(_ x: SIMD4<Float>) -> SIMD4<Float> {
        let bound = SIMD4<Float>(repeating: 80)
        return 1 / (1 + ErrorFunction.exp(-x.clamped(lowerBound: -bound, upperBound: bound)))
    }

    /// tanh on four lanes, as 2·σ(2x) − 1: within about 1e-7 of libm's tanhf (absolute; the
    /// relative error grows near 0, where the LSTM's sums do not care).
    @inline(__always)
    static func tanh(_ x: SIMD4<Float>) -> SIMD4<Float> { 2 * sigmoid(2 * x) - 1 }

    /// Layer normalization of one row as onnxruntime 1.32's LayerNormalization computes it on
    /// x86-64 with AVX2 (measured through its optional mean and inverse-deviation outputs, on
    /// 2,000 rows: every mean, every inverse and every output the same to the bit; its
    /// published source, one pass of float sums, is not what the wheel runs):
    /// - the mean from sums in double, rounded to float;
    /// - the variance in a second pass: each (x − mean) in float, its square added into one
    ///   of eight float lanes as a fused multiply-add would (exactly, then rounded once), the
    ///   lanes then added in halves (8 → 4 → 2 → 1), divided by the count in float;
    /// - 1 / √(variance + ε) in float, each value (x − mean) · that in float, then
    ///   weight · it + bias as one fused multiply-add.
    /// The one-pass double variance this replaces matched 80 % of the inverses and 84 % of the
    /// outputs. A fused multiply-add is emulated in double (a float product is exact there):
    /// baseline x86-64 has no FMA instruction and libm's fmaf is a call per value.
    static func layerNorm(_ x: UnsafePointer<Float>, count: Int, weight: UnsafePointer<Float>, bias: UnsafePointer<Float>,
                          epsilon: Float = 1e-5, into y: UnsafeMutablePointer<Float>) {
        precondition(count % 8 == 0, "a row of whole lanes of eight")
        // Four partial sums, so that four chains of additions overlap (a row of 384 is
        // otherwise 384 dependent additions): a float is exact in double and the order of
        // the additions moves a double's last bit, far below the float the mean ends in.
        var sums = SIMD4<Double>()
        var i = 0
        while i < count {
            sums += SIMD4<Double>(SIMD4<Float>(x[i], x[i + 1], x[i + 2], x[i + 3]))
            i += 4
        }
        let mean = Float(sums.sum() / Double(count))
        var lanes = SIMD8<Float>()
        i = 0
        while i < count {
            let centred = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD8<Float>.self) - mean
            let low = SIMD4<Double>(centred.lowHalf), high = SIMD4<Double>(centred.highHalf)
            lanes = SIMD8(lowHalf: SIMD4<Float>(SIMD4<Double>(lanes.lowHalf) + low * low),
                          highHalf: SIMD4<Float>(SIMD4<Double>(lanes.highHalf) + high * high))
            i += 8
        }
        let four = lanes.lowHalf + lanes.highHalf, two = four.lowHalf + four.highHalf
        let variance = (two[0] + two[1]) / Float(count)
        let inverse = 1 / (variance + epsilon).squareRoot()
        for i in 0..<count {
            let normalized = (x[i] - mean) * inverse
            y[i] = Float(Double(normalized) * Double(weight[i]) + Double(bias[i]))
        }
    }

    /// GELU with the error function, as the export computes it node by node:
    /// x · (0.5 · (erf(x / √2) + 1)), with onnxruntime's erf (``ErrorFunction``).
    @inline(__always)
    static func gelu(_ x: Float) -> Float { gelu(SIMD4(repeating: x))[0] }

    /// ``gelu(_:)`` on four lanes.
    @inline(__always)
    static func gelu(_ x: SIMD4<Float>) -> SIMD4<Float> { x * (0.5 * (ErrorFunction.erf(x / 1.4142135) + 1)) }

    @inline(__always)
    static func load4(_ p: UnsafePointer<Float>) -> SIMD4<Float> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self)
    }

    @inline(__always)
    static func store4(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD4<Float>.self)
    }

    @inline(__always)
    static func store4(_ v: SIMD4<Int32>, _ p: UnsafeMutablePointer<Int16>) {
        UnsafeMutableRawPointer(p).storeBytes(of: SIMD4<Int16>(truncatingIfNeeded: v), as: SIMD4<Int16>.self)
    }

    /// Softmax of one row in place (its maximum subtracted first).
    static func softmax(_ x: UnsafeMutablePointer<Float>, count: Int) {
        var maximum = -Float.infinity
        for i in 0..<count { maximum = max(maximum, x[i]) }
        var sum: Float = 0
        for i in 0..<count {
            x[i] = expf(x[i] - maximum)
            sum += x[i]
        }
        let inverse = 1 / sum
        for i in 0..<count { x[i] *= inverse }
    }
}
