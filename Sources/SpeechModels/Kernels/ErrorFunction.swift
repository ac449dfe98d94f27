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
    private static let small: [Float] = [-5.99104969e-4, 4.99339588e-3, -2.67667342e-2, 1.12818025e-1, -3.76124859e-1, 1.28379151e-1]
    private static let big: [Float] = [1.72948930e-5, -3.83208680e-4, 3.88393435e-3, -2.42545605e-2, 1.06777847e-1, 6.34846687e-1, 1.28717512e-1]
    private static let expLowerRange: Float = -88.3762626647949
    private static let log2Reciprocal: Float = 1.44269504088896341
    private static let log2High: Float = -6.93145752e-1
    private static let log2Low: Float = -1.42860677e-6
    private static let exp: [Float] = [1.38319808e-3, 8.37550033e-3, 4.16689515e-2, 1.66664466e-1, 4.99999851e-1, 1.0, 1.0]
    private static let roundingMagic: Float = 12_582_912

    @inline(__always)
    static func fma(_ a: Float, _ b: Float, _ c: Float) -> Float {
        Float(Double(a) * Double(b) + Double(c))
    }

    static func erf(_ x: Float) -> Float {
        let a = abs(x)
        let result: Float
        if a < splitBoundary {
            let s = a * a
            var r = small[0]
            for k in 1..<6 { r = fma(r, s, small[k]) }
            result = fma(r, a, a)
        } else {
            var r = big[0]
            for k in 1..<7 { r = fma(r, a, big[k]) }
            r = fma(r, a, a)
            let t = max(-r, expLowerRange)
            let n = fma(log2Reciprocal, t, roundingMagic) - roundingMagic
            var f = fma(n, log2High, t)
            f = fma(n, log2Low, f)
            var y = exp[0]
            for k in 1..<7 { y = fma(y, f, exp[k]) }
            let power = Float(bitPattern: UInt32(bitPattern: (Int32(n) + 127) << 23))
            result = 1 - y * power
        }
        return x.sign == .minus ? -result : result
    }
}
