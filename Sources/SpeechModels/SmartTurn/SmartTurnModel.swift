#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// smart-turn v3.2 (BSD-2, pipecat-ai/smart-turn) in Swift: given Whisper log-mel features of
/// the last 8 s, the probability that the speaker has finished their turn.
///
/// The network: Whisper-tiny's encoder (two convolutions with GELU, 400 positions of 384, four
/// pre-norm transformer layers of six heads with a 1536-wide feed-forward, a final norm),
/// attention pooling over time (384 → 256 → tanh → 1, softmax) and a classifier (384 → 256,
/// norm, GELU → 64, GELU → 1, sigmoid). It runs as the int8 QDQ export defines it: every
/// product takes 8-bit operands (``IntegerGEMM``: exact integer sums) and every quantization
/// point of the graph rounds its activation onto the same grid onnxruntime uses.
///
/// Buffers are allocated once: ``probability(features:)`` allocates nothing.
public final class SmartTurnModel {
    private let weights: SmartTurnWeights
    private static let width = SmartTurnWeights.width, positions = SmartTurnWeights.positionsCount
    private static let heads = SmartTurnWeights.heads, headWidth = SmartTurnWeights.headWidth
    private static let expanded = SmartTurnWeights.expanded
    private static let frames = WhisperFeatures.frames, bins = WhisperFeatures.bins

    private let residual: UnsafeMutablePointer<Float>  // [400][384]
    private let row: UnsafeMutablePointer<Float>  // one row of up to 1536
    private let activations: UnsafeMutablePointer<Int16>  // centred operands, up to [400][1536]
    private let columns: UnsafeMutablePointer<Int16>  // the convolutions' input windows, then each feed-forward input
    private let sums: UnsafeMutablePointer<Int32>  // products, up to [400][400]: wider ones go in blocks of rows
    private let queries: UnsafeMutablePointer<Int16>, keys: UnsafeMutablePointer<Int16>  // [head][400][64]
    private let values: UnsafeMutablePointer<Int16>  // [head][64][400]
    private let attention: UnsafeMutablePointer<Int16>  // one head's [400][400]
    private let timeWeights: UnsafeMutablePointer<Float>
    private let panel: UnsafeMutablePointer<Int16>  // widened weights (IntegerGEMM.panelCapacity)
    /// The GELUs after the first convolution and each feed-forward expansion, as tables
    /// (``QuantizedGELU``).
    private let convolutionGELU: [UInt8]
    private let expandedGELU: [[UInt8]]

    /// Called with each quantized activation as it is computed (its graph's QuantizeLinear
    /// output name and the uint8 values, in the graph's layout where it is [t][c]-ordered):
    /// for comparing a run with onnxruntime's, stage by stage. Nil in the daemon.
    public var inspect: ((String, [UInt8]) -> Void)?

    private func report(_ name: String, _ values: UnsafePointer<Int16>, count: Int, zeroPoint: Int32) {
        guard let inspect else { return }
        inspect(name, (0..<count).map { UInt8(Int32(values[$0]) + zeroPoint) })
    }

    /// Loads the model from its ONNX file's bytes. With `threads: 2` the large products are
    /// shared with a second thread (a kiosk board's second core): about half the latency.
    public convenience init(onnx bytes: [UInt8], threads: Int = 1) throws(ModelError) {
        try self.init(weights: SmartTurnWeights(graph: ONNXModel(bytes: bytes).graph), threads: threads)
    }

    private let helper: ProductHelper?

    init(weights: SmartTurnWeights, threads: Int = 1) {
        self.weights = weights
        helper = threads > 1 ? ProductHelper() : nil
        convolutionGELU = QuantizedGELU.table(weights.convolution1, bias: nil, then: weights.gelu1)
        expandedGELU = weights.layers.map { QuantizedGELU.table($0.expand, bias: $0.expand.bias, then: $0.expandedGELU) }
        let area = Self.positions * Self.width
        residual = .allocate(capacity: area)
        row = .allocate(capacity: Self.expanded)
        activations = .allocate(capacity: Self.positions * Self.expanded)
        columns = .allocate(capacity: max(Self.frames * Self.bins * 3, Self.positions * Self.width * 3))
        sums = .allocate(capacity: Self.sumsCapacity)
        queries = .allocate(capacity: area)
        keys = .allocate(capacity: area)
        values = .allocate(capacity: area)
        attention = .allocate(capacity: Self.positions * Self.positions)
        timeWeights = .allocate(capacity: Self.positions)
        panel = .allocate(capacity: IntegerGEMM.panelCapacity)
    }

    deinit {
        helper?.stop()
        residual.deallocate(); row.deallocate(); activations.deallocate(); columns.deallocate(); sums.deallocate()
        queries.deallocate(); keys.deallocate(); values.deallocate(); attention.deallocate(); timeWeights.deallocate(); panel.deallocate()
    }

    /// `sums` holds the largest product the model needs whole, one head's attention scores
    /// ([400][400]); the first convolution ([800][384]) and the feed-forward expansion
    /// ([400][1536]) are computed in blocks of rows that fit (1.8 MB less than holding them).
    private static let sumsCapacity = positions * positions

    /// `body(first, count)` for consecutive blocks of `rows` whose products by `linear` fit `sums`.
    private func inBlocks(rows: Int, of linear: SmartTurnWeights.Linear, _ body: (Int, Int) -> Void) {
        let block = Self.sumsCapacity / linear.matrix.outputs
        var first = 0
        while first < rows {
            body(first, min(block, rows - first))
            first += block
        }
    }

    /// `sums[m][n]` for `rows` rows of centred `input` (stride `depth`) by `linear`'s weight.
    private func product(_ input: UnsafePointer<Int16>, rows: Int, _ linear: SmartTurnWeights.Linear) {
        precondition(rows * linear.matrix.outputs <= Self.sumsCapacity, "a product that fits the sums")
        linear.matrix.values.withUnsafeBufferPointer { w in
            if let helper {
                helper.multiply(input, rows: rows, depth: linear.matrix.inputs, strideA: linear.matrix.inputs,
                                b8: w.baseAddress!, b16: nil, columns: linear.matrix.outputs, strideB: linear.matrix.inputs,
                                into: sums, strideC: linear.matrix.outputs, panel: panel)
            } else {
                IntegerGEMM.multiply(input, rows: rows, depth: linear.matrix.inputs, strideA: linear.matrix.inputs,
                                     w.baseAddress!, columns: linear.matrix.outputs, strideB: linear.matrix.inputs,
                                     into: sums, strideC: linear.matrix.outputs, panel: panel)
            }
        }
    }

    /// A product of two activations (attention), shared with the helper thread if there is one.
    private func attentionProduct(_ a: UnsafePointer<Int16>, rows: Int, depth: Int, _ b: UnsafePointer<Int16>, columns: Int,
                                  into c: UnsafeMutablePointer<Int32>) {
        if let helper {
            helper.multiply(a, rows: rows, depth: depth, strideA: depth, b8: nil, b16: b, columns: columns, strideB: depth, into: c, strideC: columns, panel: panel)
        } else {
            IntegerGEMM.multiply(a, rows: rows, depth: depth, strideA: depth, b, columns: columns, strideB: depth, into: c, strideC: columns)
        }
    }

    /// Row `m` of the last product requantized as `linear`'s fused kernel does it (its Int32
    /// bias included), then dequantized into `row`; a MatMul's float bias is the caller's.
    @inline(__always)
    private func result(_ m: Int, of linear: SmartTurnWeights.Linear) {
        let n = linear.matrix.outputs
        let s = sums + m * n
        let output = linear.output
        let scale = SIMD4<Float>(repeating: output.scale)
        linear.multipliers.withUnsafeBufferPointer { multipliers in
            let multipliers = multipliers.baseAddress!
            var j = 0
            if let integerBias = linear.integerBias {
                integerBias.withUnsafeBufferPointer { bias in
                    while j + 4 <= n {
                        let sum = Self.load4(s + j) &+ Self.load4(bias.baseAddress! + j)
                        FloatKernels.store4(SIMD4<Float>(output.centred(sums: sum, multipliers: FloatKernels.load4(multipliers + j))) * scale, row + j)
                        j += 4
                    }
                    while j < n {
                        row[j] = Float(output.centred(sum: s[j] &+ bias[j], multiplier: multipliers[j])) * output.scale
                        j += 1
                    }
                }
            } else {
                while j + 4 <= n {
                    FloatKernels.store4(SIMD4<Float>(output.centred(sums: Self.load4(s + j), multipliers: FloatKernels.load4(multipliers + j))) * scale, row + j)
                    j += 4
                }
                while j < n {
                    row[j] = Float(output.centred(sum: s[j], multiplier: multipliers[j])) * output.scale
                    j += 1
                }
            }
        }
    }

    @inline(__always)
    private static func load4(_ p: UnsafePointer<Int32>) -> SIMD4<Int32> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Int32>.self)
    }

    /// Row `m` of the last product through a GELU table: requantized (Int32 bias included),
    /// then looked up, into `out`.
    @inline(__always)
    private func geluThroughTable(_ m: Int, of linear: SmartTurnWeights.Linear, table: [UInt8], then gelu: Quantization, perColumn: Bool,
                                  into out: UnsafeMutablePointer<Int16>) {
        let outputZero = Int16(gelu.zeroPoint)
        let n = linear.matrix.outputs
        let s = sums + m * n
        let output = linear.output
        let zero = output.zeroPoint
        let noBias = [Int32](repeating: 0, count: 0)
        linear.multipliers.withUnsafeBufferPointer { multipliers in
            (linear.integerBias ?? noBias).withUnsafeBufferPointer { bias in
            table.withUnsafeBufferPointer { table in
                var j = 0
                while j < n {
                    var sum = Self.load4(s + j)
                    if bias.count == n { sum &+= Self.load4(bias.baseAddress! + j) }
                    let steps = output.centred(sums: sum, multipliers: FloatKernels.load4(multipliers.baseAddress! + j)) &+ zero
                    for lane in 0..<4 {
                        out[j + lane] = Int16(table[(perColumn ? (j + lane) * 256 : 0) + Int(steps[lane])]) &- outputZero
                    }
                    j += 4
                }
            }
            }
        }
    }

    /// The probability that the turn is finished, from features [80][800] (``WhisperFeatures``).
    public func probability(features: UnsafePointer<Float>) -> Float {
        let w = weights
        let width = Self.width, positions = Self.positions, frames = Self.frames, bins = Self.bins

        // Convolution 1 (80 → 384, width 3, stride 1) on the quantized features.
        let input = w.input
        for t in 0..<frames {
            let window = columns + t * bins * 3
            for c in 0..<bins {
                for k in 0..<3 {
                    let s = t + k - 1
                    window[c * 3 + k] = s >= 0 && s < frames ? input.centred(features[c * frames + s]) : 0
                }
            }
        }
        inBlocks(rows: frames, of: w.convolution1) { first, count in
            product(columns + first * bins * 3, rows: count, w.convolution1)
            for t in 0..<count {
                geluThroughTable(t, of: w.convolution1, table: convolutionGELU, then: w.gelu1, perColumn: false, into: activations + (first + t) * width)
            }
        }
        report("gelu_QuantizeLinear_Output", activations, count: frames * width, zeroPoint: w.gelu1.zeroPoint)
        // Convolution 2 (384 → 384, width 3, stride 2), GELU, positions.
        for t in 0..<positions {
            let window = columns + t * width * 3
            for k in 0..<3 {
                let s = 2 * t + k - 1
                for c in 0..<width { window[c * 3 + k] = s >= 0 && s < frames ? activations[s * width + c] : 0 }
            }
        }
        product(columns, rows: positions, w.convolution2)
        w.positions.withUnsafeBufferPointer { positionsTable in
            for t in 0..<positions {
                result(t, of: w.convolution2)
                for c in 0..<width { residual[t * width + c] = FloatKernels.gelu(row[c]) + positionsTable[t * width + c] }
            }
        }

        for (index, layer) in w.layers.enumerated() { run(layer, index: index, last: index == w.layers.count - 1) }

        // The final norm, attention pooling over time, the classifier.
        normalize(w.finalNorm, quantization: w.finalOutput)
        // The final norm has read the residual stream: its buffer takes the dequantized output.
        let pooled = residual  // [400][384]
        for i in 0..<(positions * width) { pooled[i] = Float(activations[i]) * w.finalOutput.scale }
        product(activations, rows: positions, w.poolProjection)
        let tanhScores = columns  // [400][256]
        for t in 0..<positions {
            result(t, of: w.poolProjection)
            w.poolProjection.bias.withUnsafeBufferPointer { bias in
                for j in 0..<256 { tanhScores[t * 256 + j] = w.poolTanh.centred(tanhf(row[j] + bias[j])) }
            }
        }
        product(tanhScores, rows: positions, w.poolScore)
        let weightsOverTime = timeWeights
        for t in 0..<positions {
            result(t, of: w.poolScore)
            weightsOverTime[t] = row[0] + w.poolScore.bias[0]
        }
        FloatKernels.softmax(weightsOverTime, count: positions)
        let pooledVector = activations
        for c in 0..<width {
            var sum: Float = 0
            for t in 0..<positions { sum += pooled[t * width + c] * weightsOverTime[t] }
            pooledVector[c] = w.pooled.centred(sum)
        }
        product(pooledVector, rows: 1, w.classifier1)
        result(0, of: w.classifier1)
        let normalized = residual  // free now: the pooling has read it
        w.classifierNorm.weight.withUnsafeBufferPointer { g in
            w.classifierNorm.bias.withUnsafeBufferPointer { b in
                FloatKernels.layerNorm(row, count: 256, weight: g.baseAddress!, bias: b.baseAddress!, into: normalized)
            }
        }
        for j in 0..<256 { activations[j] = w.classifierGELU1.centred(FloatKernels.gelu(normalized[j])) }
        product(activations, rows: 1, w.classifier2)
        result(0, of: w.classifier2)
        for j in 0..<64 { activations[j] = w.classifierGELU2.centred(FloatKernels.gelu(row[j])) }
        product(activations, rows: 1, w.classifier3)
        result(0, of: w.classifier3)
        return FloatKernels.sigmoid(row[0])
    }

    /// Layer norm of every row of the residual stream, quantized into `activations`.
    private func normalize(_ norm: SmartTurnWeights.Norm, quantization: Quantization) {
        let width = Self.width
        norm.weight.withUnsafeBufferPointer { g in
            norm.bias.withUnsafeBufferPointer { b in
                for t in 0..<Self.positions {
                    FloatKernels.layerNorm(residual + t * width, count: width, weight: g.baseAddress!, bias: b.baseAddress!, into: row)
                    var c = 0
                    while c < width {
                        FloatKernels.store4(quantization.centred(FloatKernels.load4(row + c)), activations + t * width + c)
                        c += 4
                    }
                }
            }
        }
    }

    /// One pre-norm transformer layer on the residual stream. The last layer's feed-forward
    /// output is added as onnxruntime's SkipLayerNormalization adds it before the final norm:
    /// (residual + product) + bias, not residual + (product + bias).
    private func run(_ layer: SmartTurnWeights.Layer, index: Int, last: Bool) {
        let width = Self.width, positions = Self.positions, heads = Self.heads, dh = Self.headWidth
        normalize(layer.attentionNorm, quantization: layer.attentionInput)
        report("attention_input", activations, count: positions * width, zeroPoint: layer.attentionInput.zeroPoint)

        // q, k and v, each split into heads: q and k [head][t][d], v transposed [head][d][t].
        product(activations, rows: positions, layer.query)
        layer.query.bias.withUnsafeBufferPointer { bias in
            for t in 0..<positions {
                result(t, of: layer.query)
                var c = 0
                while c < width {
                    let v = (FloatKernels.load4(row + c) + FloatKernels.load4(bias.baseAddress! + c)) * layer.headScale
                    FloatKernels.store4(layer.scaledQuery.centred(v), queries + (c / dh) * positions * dh + t * dh + c % dh)
                    c += 4
                }
            }
        }
        product(activations, rows: positions, layer.key)
        for t in 0..<positions {
            result(t, of: layer.key)
            var c = 0
            while c < width {
                FloatKernels.store4(layer.scaledKey.centred(FloatKernels.load4(row + c) * layer.headScale), keys + (c / dh) * positions * dh + t * dh + c % dh)
                c += 4
            }
        }
        product(activations, rows: positions, layer.value)
        layer.value.bias.withUnsafeBufferPointer { bias in
            for t in 0..<positions {
                result(t, of: layer.value)
                var c = 0
                while c < width {
                    let q = layer.valueHeads.centred(FloatKernels.load4(row + c) + FloatKernels.load4(bias.baseAddress! + c))
                    let base = values + (c / dh) * positions * dh + (c % dh) * positions + t
                    base[0] = Int16(truncatingIfNeeded: q[0]); base[positions] = Int16(truncatingIfNeeded: q[1])
                    base[2 * positions] = Int16(truncatingIfNeeded: q[2]); base[3 * positions] = Int16(truncatingIfNeeded: q[3])
                    c += 4
                }
            }
        }

        // Per head, as onnxruntime's QLinearMatMul, QLinearSoftmax and QLinearMatMul: scores,
        // their softmax, the weighted values, joined into [t][384] in `activations`.
        let scoreMultiplier = layer.scaledQuery.scale * layer.scaledKey.scale / layer.scores.scale
        let contextMultiplier = layer.probabilities.scale * layer.valueHeads.scale / layer.context.scale
        let scoreZero = layer.scores.zeroPoint, probabilityZero = layer.probabilities.zeroPoint
        layer.softmax.table.withUnsafeBufferPointer { table in
            for h in 0..<heads {
                attentionProduct(queries + h * positions * dh, rows: positions, depth: dh,
                                 keys + h * positions * dh, columns: positions, into: sums)
                for t in 0..<positions {
                    let s = sums + t * positions
                    // The scores as uint8 steps, then the kernel's table lookups.
                    var top = SIMD4<Int32>(repeating: 0)
                    var j = 0
                    while j < positions {
                        let q = layer.scores.centred(sums: Self.load4(s + j), multipliers: SIMD4(repeating: scoreMultiplier)) &+ scoreZero
                        UnsafeMutableRawPointer(s + j).storeBytes(of: q, as: SIMD4<Int32>.self)
                        top = top.replacing(with: q, where: q .> top)
                        j += 4
                    }
                    let maximum = max(max(top[0], top[1]), max(top[2], top[3]))
                    let shifted = 255 - Int(maximum)
                    var total: Float = 0
                    for j in 0..<positions { total += table[shifted + Int(s[j])] }
                    if h == 0 && t == 0, inspect != nil {
                        inspect?("scores_head0_row0", (0..<positions).map { UInt8(s[$0]) })
                    }
                    // Four lanes at a time: the same IEEE operations as one by one (divps
                    // divides each lane as divss does), a quarter of the divisions' time.
                    let probabilities = attention + t * positions
                    let totals = SIMD4<Float>(repeating: total), steps = SIMD4<Float>(repeating: layer.softmax.outputSteps)
                    let magic = SIMD4<Float>(repeating: Quantization.roundingMagic)
                    let zero = SIMD4<Float>(repeating: Float(probabilityZero)), ceiling = SIMD4<Float>(repeating: 255)
                    j = 0
                    while j < positions {
                        let e = SIMD4<Float>(table[shifted + Int(s[j])], table[shifted + Int(s[j + 1])],
                                             table[shifted + Int(s[j + 2])], table[shifted + Int(s[j + 3])])
                        let q = ((e * steps) / totals + magic) - magic
                        let stepsUp = (q + zero).replacing(with: ceiling, where: q + zero .> ceiling)
                        // An integer already: its bits after adding 1.5 · 2²³ are the value.
                        let centred = unsafeBitCast(stepsUp + magic, to: SIMD4<Int32>.self) &- (0x4B40_0000 + Int32(probabilityZero))
                        FloatKernels.store4(centred, probabilities + j)
                        j += 4
                    }
                }
                attentionProduct(attention, rows: positions, depth: positions,
                                 values + h * positions * dh, columns: dh, into: sums)
                for t in 0..<positions {
                    var d = 0
                    while d < dh {
                        let q = layer.context.centred(sums: Self.load4(sums + t * dh + d), multipliers: SIMD4(repeating: contextMultiplier))
                        FloatKernels.store4(q, activations + t * width + h * dh + d)
                        d += 4
                    }
                }
            }
        }
        report("context", activations, count: positions * width, zeroPoint: layer.context.zeroPoint)
        product(activations, rows: positions, layer.outputProjection)
        layer.outputProjection.bias.withUnsafeBufferPointer { bias in
            for t in 0..<positions {
                result(t, of: layer.outputProjection)
                for c in 0..<width { residual[t * width + c] += row[c] + bias[c] }
            }
        }

        // The feed-forward block.
        normalize(layer.feedForwardNorm, quantization: layer.feedForwardInput)
        report("feed_forward_input", activations, count: positions * width, zeroPoint: layer.feedForwardInput.zeroPoint)
        // The input moves to `columns`, so that `activations` is free to take [t][1536] while
        // the expansion goes in blocks of rows.
        let feedForwardInput = columns
        feedForwardInput.update(from: activations, count: positions * width)
        inBlocks(rows: positions, of: layer.expand) { first, count in
            product(feedForwardInput + first * width, rows: count, layer.expand)
            for t in 0..<count {
                geluThroughTable(t, of: layer.expand, table: expandedGELU[index], then: layer.expandedGELU, perColumn: true,
                                 into: activations + (first + t) * Self.expanded)
            }
        }
        report("expanded_gelu", activations, count: positions * Self.expanded, zeroPoint: layer.expandedGELU.zeroPoint)
        product(activations, rows: positions, layer.contract)
        if inspect != nil {
            var q = [UInt8](repeating: 0, count: positions * width)
            for i in 0..<(positions * width) {
                q[i] = UInt8(Int32(layer.contract.output.centred(sum: sums[i], multiplier: layer.contract.multipliers[i % width])) + layer.contract.output.zeroPoint)
            }
            inspect?("contract", q)
        }
        layer.contract.bias.withUnsafeBufferPointer { bias in
            for t in 0..<positions {
                result(t, of: layer.contract)
                let r = residual + t * width
                if last {
                    for c in 0..<width { r[c] = (r[c] + row[c]) + bias[c] }
                } else {
                    for c in 0..<width { r[c] += row[c] + bias[c] }
                }
            }
        }
    }
}
