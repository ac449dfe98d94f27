/// The error function as onnxruntime's x86-64 FMA kernel computes it (MLAS's `Erf`, which
/// its CPU provider runs for the model's GELU): Norbert Juffa's faithfully rounded erff, an
/// odd polynomial in x below |x| = 0.921875 and 1 − exp(−polynomial) above, every step a
/// fused multiply-add. (The kernel's source caps |x| at 3.725; the onnxruntime 1.32 wheel does
/// not: uncapped, this matches its output bit for bit on 153,600 GELU inputs of the model.)
///
/// Why this and not libm's erff: the quantized model rounds every activation onto an 8-bit
/// grid, and a last-bit difference in one GELU moves a value across a rounding boundary now
/// and then; over four layers such flips change the output by up to 0.3 (onnxruntime's own
/// optimization levels disagree by that much). Matching onnxruntime bit for bit keeps the
/// Swift model's decisions its decisions.
///
/// Baseline x86-64 has no FMA instruction, so each fused step is computed in double: the
/// product of two floats is exact there, and the sum is rounded twice (to double, then to
/// float), which differs from one rounding only when the double lands exactly half-way
/// between two floats: about once in 2²⁹ steps.
enum ErrorFunction {
    private static let splitBoundary: Float = 0.921875
    // The polynomials, highest coefficient first (written out: no array in the loop).
    private static let s0: Float = -5.99104969e-4, s1: Float = 4.99339588e-3, s2: Float = -2.67667342e-2
    private static let s3: Float = 1.12818025e-1, s4: Float = -3.76124859e-1, s5: Float = 1.28379151e-1
    private static let b0: Float = 1.72948930e-5, b1: Float = -3.83208680e-4, b2: Float = 3.88393435e-3
    private static let b3: Float = -2.42545605e-2, b4: Float = 1.06777847e-1, b5: Float = 6.34846687e-1
    private static let b6: Float = 1.28717512e-1
    private static let e0: Float = 1.38319808e-3, e1: Float = 8.37550033e-3, e2: Float = 4.16689515e-2
    private static let e3: Float = 1.66664466e-1, e4: Float = 4.99999851e-1, e5: Float = 1, e6: Float = 1
    private static let expLowerRange: Float = -88.3762626647949
    private static let log2Reciprocal: Float = 1.44269504088896341
    private static let log2High: Float = -6.93145752e-1
    private static let log2Low: Float = -1.42860677e-6
    private static let roundingMagic: Float = 12_582_912

    @inline(__always)
    static func fma(_ a: Float, _ b: Float, _ c: Float) -> Float {
        Float(Double(a) * Double(b) + Double(c))
    }

    @inline(__always)
    static func fma(_ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>) -> SIMD4<Float> {
        SIMD4<Float>(SIMD4<Double>(a) * SIMD4<Double>(b) + SIMD4<Double>(c))
    }

    @inline(__always)
    static func fma(_ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: Float) -> SIMD4<Float> {
        fma(a, b, SIMD4(repeating: c))
    }

    static func erf(_ x: Float) -> Float {
        erf(SIMD4(repeating: x))[0]
    }

    /// e^x on four lanes, as MLAS computes it inside its erf: x = n·ln 2 + f with |f| ≤ ln 2 / 2,
    /// a degree-6 polynomial in f, scaled by 2^n through the exponent's bits (within 2 units
    /// in the last place). Below −88.376 it is clamped there, as MLAS does; callers keep x
    /// under 87 (2^n must stay a normal float's scale).
    @inline(__always)
    static func exp(_ x: SIMD4<Float>) -> SIMD4<Float> {
        let low = SIMD4<Float>(repeating: expLowerRange)
        let t = x.replacing(with: low, where: x .< low)
        let n = fma(SIMD4(repeating: log2Reciprocal), t, roundingMagic) - roundingMagic
        var f = fma(n, SIMD4(repeating: log2High), t)
        f = fma(n, SIMD4(repeating: log2Low), f)
        var y = fma(SIMD4(repeating: e0), f, e1)
        y = fma(y, f, e2); y = fma(y, f, e3); y = fma(y, f, e4); y = fma(y, f, e5); y = fma(y, f, e6)
        let exponent = (unsafeBitCast(n + roundingMagic, to: SIMD4<Int32>.self) &- 0x4B40_0000 &+ 127) &<< 23
        return y * unsafeBitCast(exponent, to: SIMD4<Float>.self)
    }

    /// Four lanes: both branches computed and each lane's kept, as the onnxruntime kernel does.
    @inline(__always)
    static func erf(_ x: SIMD4<Float>) -> SIMD4<Float> {
        let bits = unsafeBitCast(x, to: SIMD4<UInt32>.self)
        let a = unsafeBitCast(bits & 0x7FFF_FFFF, to: SIMD4<Float>.self)
        let s = a * a
        var r = fma(SIMD4(repeating: s0), s, s1)
        r = fma(r, s, s2); r = fma(r, s, s3); r = fma(r, s, s4); r = fma(r, s, s5)
        let smallResult = fma(r, a, a)
        var p = fma(SIMD4(repeating: b0), a, b1)
        p = fma(p, a, b2); p = fma(p, a, b3); p = fma(p, a, b4); p = fma(p, a, b5); p = fma(p, a, b6)
        p = fma(p, a, a)
        let bigResult = 1 - exp(-p)
        let magnitude = smallResult.replacing(with: bigResult, where: a .>= SIMD4(repeating: splitBoundary))
        return unsafeBitCast(unsafeBitCast(magnitude, to: SIMD4<UInt32>.self) | (bits & 0x8000_0000), to: SIMD4<Float>.self)
    }
}
