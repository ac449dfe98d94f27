/// One activation's 8-bit quantization in the model's QDQ graph (QuantizeLinear then
/// DequantizeLinear): `q = clamp(round(x / scale) + zeroPoint, 0, 255)`, rounding half to
/// even as ONNX specifies. Values are kept *centred*, `q − zeroPoint`, as Int16, so that the
/// integer matrix products need no zero-point correction, and read back as `centred · scale`.
struct Quantization: Equatable {
    let scale: Float
    let zeroPoint: Int32

    init(scale: Float, zeroPoint: Int32) {
        self.scale = scale
        self.zeroPoint = zeroPoint
    }

    /// Adding and subtracting 1.5 · 2²³ rounds a float of magnitude below 2²² to an integer,
    /// half to even, in the default rounding mode: `rounded(.toNearestOrEven)` without the
    /// libm call baseline x86-64 needs for it (no SSE4.1 `roundss`).
    static let roundingMagic: Float = 12_582_912

    /// The same for a double below 2⁵¹: 1.5 · 2⁵² (QLinearSoftmax divides in double).
    static let doubleRoundingMagic: Double = 6_755_399_441_055_744

    /// QuantizeLinear as onnxruntime's kernel computes it: divide, clamp to the range the
    /// zero point leaves, round half to even.
    @inline(__always)
    func centred(_ x: Float) -> Int16 {
        rounded(x / scale)
    }

    /// A fused kernel's requantization of Int32 `sum` (MLAS's): `sum · multiplier`, clamped,
    /// rounded half to even.
    @inline(__always)
    func centred(sum: Int32, multiplier: Float) -> Int16 {
        rounded(Float(sum) * multiplier)
    }

    @inline(__always)
    private func rounded(_ x: Float) -> Int16 {
        // Compared so that NaN takes the lower bound, as SSE's maxps gives it.
        let low = Float(-zeroPoint), high = Float(255 - zeroPoint)
        let raised = x > low ? x : low
        let bounded = raised < high ? raised : high
        return Int16((bounded + Self.roundingMagic) - Self.roundingMagic)
    }

    /// ``centred(_:)`` on four lanes (the same results lane by lane).
    @inline(__always)
    func centred(_ x: SIMD4<Float>) -> SIMD4<Int32> {
        rounded(x / SIMD4(repeating: scale))
    }

    /// ``centred(sum:multiplier:)`` on four lanes.
    @inline(__always)
    func centred(sums: SIMD4<Int32>, multipliers: SIMD4<Float>) -> SIMD4<Int32> {
        rounded(SIMD4<Float>(sums) * multipliers)
    }

    /// Clamped as the scalar version (NaN to the lower bound), then rounded by the same
    /// 1.5 · 2²³ addition, whose low mantissa bits are then the integer: no conversion
    /// instruction needed.
    @inline(__always)
    private func rounded(_ x: SIMD4<Float>) -> SIMD4<Int32> {
        let low = SIMD4<Float>(repeating: Float(-zeroPoint)), high = SIMD4<Float>(repeating: Float(255 - zeroPoint))
        let raised = x.replacing(with: low, where: .!(x .> low))
        let bounded = raised.replacing(with: high, where: raised .> high)
        return unsafeBitCast(bounded + Self.roundingMagic, to: SIMD4<Int32>.self) &- 0x4B40_0000
    }

    /// The value after a quantize–dequantize round trip.
    @inline(__always)
    func roundTrip(_ x: Float) -> Float { Float(centred(x)) * scale }
}

/// A weight matrix of the QDQ graph: int8 values with a scale per output (per-channel, zero
/// points all 0 in this model), laid out as the kernel that reads it wants.
struct QuantizedMatrix {
    /// `.rows`: one row per output, [N][K] (``IntegerGEMM``); `.pairedInputs`: [K / 2][N][2]
    /// (``SparseRowGEMM``).
    enum Layout { case rows, pairedInputs }

    let values: [Int8]
    let scales: [Float]
    let outputs: Int
    let inputs: Int
    var layout = Layout.rows

    /// The same matrix laid out for ``SparseRowGEMM``, in place of this one (no second copy).
    func pairedByInputs() -> QuantizedMatrix {
        precondition(layout == .rows, "a matrix laid out in rows")
        return QuantizedMatrix(values: SparseRowGEMM.paired(values, outputs: outputs, inputs: inputs), scales: scales,
                               outputs: outputs, inputs: inputs, layout: .pairedInputs)
    }
}
