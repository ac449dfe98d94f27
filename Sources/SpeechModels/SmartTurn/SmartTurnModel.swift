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
    static let width = SmartTurnWeights.width, positions = SmartTurnWeights.positionsCount
    static let heads = SmartTurnWeights.heads, headWidth = SmartTurnWeights.headWidth
    private static let expanded = SmartTurnWeights.expanded
    private static let frames = WhisperFeatures.frames, bins = WhisperFeatures.bins

    private let residual: UnsafeMutablePointer<Float>  // [400][384]
    private let row: UnsafeMutablePointer<Float>  // one row of up to 1536
    let activations: UnsafeMutablePointer<Int16>  // centred operands, [400][384]
    private let columns: UnsafeMutablePointer<Int16>  // the padded quantized features, then a block of the feed-forward expansion and the pooling's scores
    let sums: UnsafeMutablePointer<Int32>  // products, ``sumsCapacity``: larger ones go in blocks of rows
    /// A row of zeros, then the queries, keys and values. Before the layers it holds the first
    /// convolution's output ([800][384]), which the second reads in place, its first window
    /// starting on the row of zeros (its padding): no buffer for it alone (0.3 MB less).
    private let headsArea: UnsafeMutablePointer<Int16>
    private var convolved: UnsafeMutablePointer<Int16> { headsArea + Self.width }
    let queries: UnsafeMutablePointer<Int16>, keys: UnsafeMutablePointer<Int16>  // [head][400][64]
    let values: UnsafeMutablePointer<Int16>  // [head][400 / 2][64][2] (``SparsePairGEMM``)
    let attention: UnsafeMutablePointer<Int16>  // one head's probabilities for a block of ``attentionBlock`` query rows
    private let timeWeights: UnsafeMutablePointer<Float>
    private let panel: UnsafeMutablePointer<Int16>  // widened weights (IntegerGEMM.panelCapacity)
    /// The GELUs after the first convolution and each feed-forward expansion, as tables
    /// (``QuantizedGELU``).
    private let convolutionGELU: [UInt8]
    /// The GELU of each of the second convolution's 256 output steps, in float.
    private let convolution2GELU: [Float]
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
        let output = weights.convolution2.output
        convolution2GELU = (0..<256).map { FloatKernels.gelu(Float(Int32($0) - output.zeroPoint) * output.scale) }
        expandedGELU = weights.layers.map { QuantizedGELU.table($0.expand, bias: $0.expand.bias, then: $0.expandedGELU) }
        let area = Self.positions * Self.width
        residual = .allocate(capacity: area)
        row = .allocate(capacity: Self.expanded)
        activations = .allocate(capacity: area)
        columns = .allocate(capacity: max((Self.frames + 2) * Self.bins, Self.positions * Self.poolWidth, Self.feedForwardBlock * Self.expanded))
        sums = .allocate(capacity: Self.sumsCapacity)
        precondition(3 * area >= Self.frames * Self.width, "the first convolution's output fits the heads' area")
        headsArea = .allocate(capacity: Self.width + 3 * area)
        headsArea.initialize(repeating: 0, count: Self.width)
        queries = headsArea + Self.width
        keys = queries + area
        values = keys + area
        attention = .allocate(capacity: Self.attentionBlock * Self.positions)
        timeWeights = .allocate(capacity: Self.positions)
        panel = .allocate(capacity: IntegerGEMM.panelCapacity)
    }

    deinit {
        helper?.stop()
        residual.deallocate(); row.deallocate(); activations.deallocate(); columns.deallocate(); sums.deallocate()
        headsArea.deallocate(); attention.deallocate(); timeWeights.deallocate(); panel.deallocate()
    }

    /// `sums` holds one head's attention scores for ``attentionBlock`` query rows ([200][400]);
    /// other products go in blocks of rows (the convolutions, the projections) or of columns
    /// (the feed-forward expansion) that fit: 2.1 MB less than holding them whole.
    static let attentionBlock = 200
    private static let sumsCapacity = attentionBlock * positions

    /// Rows of the feed-forward block done at a time: their expansion ([100][1536]) fits `columns`,
    /// its product `sums` in two halves of columns (blocks of 52 rows took 17 % longer).
    private static let feedForwardBlock = 100
    /// The attention pooling's hidden width.
    private static let poolWidth = 256

    /// `body(first, count)` for consecutive blocks of `rows` whose products by `linear` fit `sums`.
    private func inBlocks(rows: Int, of linear: SmartTurnWeights.Linear, _ body: (Int, Int) -> Void) {
        let block = Self.sumsCapacity / linear.matrix.outputs
        var first = 0
        while first < rows {
            body(first, min(block, rows - first))
            first += block
        }
    }

    /// `rows` rows of `input` by `linear`, in blocks that fit `sums`: `body(t)` for each row,
    /// its result dequantized in `row` (``result(_:of:)``), a MatMul's float bias the body's.
    private func eachResult(of input: UnsafePointer<Int16>, rows: Int, _ linear: SmartTurnWeights.Linear, _ body: (Int) -> Void) {
        inBlocks(rows: rows, of: linear) { first, count in
            product(input + first * linear.matrix.inputs, rows: count, linear)
            for t in first..<(first + count) {
                result(t - first, of: linear)
                body(t)
            }
        }
    }

    /// `sums[m][n]` for `rows` rows of centred `input` by `linear`'s weight, for its output
    /// `columns` (all by default; `sums` then holds that many a row). A row starts `strideA`
    /// after the one before (by default its depth; a convolution's windows overlap).
    private func product(_ input: UnsafePointer<Int16>, rows: Int, strideA: Int? = nil, _ linear: SmartTurnWeights.Linear,
                         columns: Range<Int>? = nil) {
        let columns = columns ?? 0..<linear.matrix.outputs
        precondition(rows * columns.count <= Self.sumsCapacity, "a product that fits the sums")
        let strideA = strideA ?? linear.matrix.inputs
        linear.matrix.values.withUnsafeBufferPointer { w in
            let weights = w.baseAddress! + columns.lowerBound * linear.matrix.inputs
            if let helper {
                helper.multiply(input, rows: rows, depth: linear.matrix.inputs, strideA: strideA,
                                b8: weights, b16: nil, columns: columns.count, strideB: linear.matrix.inputs,
                                into: sums, strideC: columns.count, panel: panel)
            } else {
                IntegerGEMM.multiply(input, rows: rows, depth: linear.matrix.inputs, strideA: strideA,
                                     weights, columns: columns.count, strideB: linear.matrix.inputs,
                                     into: sums, strideC: columns.count, panel: panel)
            }
        }
    }

    /// Attention's probabilities by one head's pair-interleaved values (``SparsePairGEMM``),
    /// shared with the helper thread if there is one.
    func weightedValues(_ probabilities: UnsafePointer<Int16>, rows: Int, keys: Int, _ pairedValues: UnsafePointer<Int16>,
                        into c: UnsafeMutablePointer<Int32>) {
        if let helper {
            helper.multiply(probabilities, rows: rows, depth: keys, strideA: keys, b8: nil, b16: pairedValues, columns: SparsePairGEMM.width,
                            strideB: 0, into: c, strideC: SparsePairGEMM.width, panel: panel, sparse: true)
        } else {
            SparsePairGEMM.multiply(probabilities, rows: rows, keys: keys, pairedValues: pairedValues, into: c)
        }
    }

    /// A product of two activations (attention), shared with the helper thread if there is one.
    func attentionProduct(_ a: UnsafePointer<Int16>, rows: Int, depth: Int, _ b: UnsafePointer<Int16>, columns: Int,
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
        let output = linear.output
        let scale = SIMD4<Float>(repeating: output.scale)
        let done = steps(m, of: linear) { j, centred in FloatKernels.store4(SIMD4<Float>(centred) * scale, row + j) }
        // The last few (a width that is not a multiple of four: the pooling's score, the head).
        let s = sums + m * linear.matrix.outputs
        for j in done..<linear.matrix.outputs {
            let sum = s[j] &+ (linear.integerBias?[j] ?? 0)
            row[j] = Float(output.centred(sum: sum, multiplier: linear.multipliers[j])) * output.scale
        }
    }

    /// Row `m` of the last product (of `columns`, all by default) requantized (its Int32 bias
    /// included) to centred steps, four columns at a time, given to `body` with their first
    /// column; the columns done (a multiple of four).
    @inline(__always)
    private func steps(_ m: Int, of linear: SmartTurnWeights.Linear, columns: Range<Int>? = nil, _ body: (Int, SIMD4<Int32>) -> Void) -> Int {
        let columns = columns ?? 0..<linear.matrix.outputs
        let first = columns.lowerBound, n = columns.count
        let s = sums + m * n  // column j at s + (j − first)
        let output = linear.output
        return linear.multipliers.withUnsafeBufferPointer { multipliers in
            let multipliers = multipliers.baseAddress!
            var j = first
            if let integerBias = linear.integerBias {
                integerBias.withUnsafeBufferPointer { bias in
                    while j + 4 <= columns.upperBound {
                        let sum = Self.load4(s + (j - first)) &+ Self.load4(bias.baseAddress! + j)
                        body(j, output.centred(sums: sum, multipliers: FloatKernels.load4(multipliers + j)))
                        j += 4
                    }
                }
            } else {
                while j + 4 <= columns.upperBound {
                    body(j, output.centred(sums: Self.load4(s + (j - first)), multipliers: FloatKernels.load4(multipliers + j)))
                    j += 4
                }
            }
            return j - first
        }
    }

    @inline(__always)
    static func load4(_ p: UnsafePointer<Int32>) -> SIMD4<Int32> {
        UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Int32>.self)
    }

    /// Rows `first..<first + count` of the last product (its rows from 0; of `columns`, all by
    /// default) through a GELU table: requantized (Int32 bias included), then looked up, into
    /// those columns of `out` (stride: the product's width). `perColumn`: one table of 256 for
    /// each column, else one for all.
    private func geluThroughTable(rows count: Int, of linear: SmartTurnWeights.Linear, columns: Range<Int>? = nil, table: [UInt8],
                                  then gelu: Quantization, perColumn: Bool, into out: UnsafeMutablePointer<Int16>) {
        let outputZero = Int16(gelu.zeroPoint), zero = linear.output.zeroPoint
        let n = linear.matrix.outputs, columnStride = perColumn ? 256 : 0
        let columns = columns ?? 0..<n
        table.withUnsafeBufferPointer { table in
            let table = table.baseAddress!
            for m in 0..<count {
                let o = out + m * n
                let done = steps(m, of: linear, columns: columns) { j, centred in
                    let index = centred &+ zero
                    o[j] = Int16(table[j * columnStride + Int(index[0])]) &- outputZero
                    o[j + 1] = Int16(table[(j + 1) * columnStride + Int(index[1])]) &- outputZero
                    o[j + 2] = Int16(table[(j + 2) * columnStride + Int(index[2])]) &- outputZero
                    o[j + 3] = Int16(table[(j + 3) * columnStride + Int(index[3])]) &- outputZero
                }
                precondition(done == columns.count, "a width that is a multiple of four")
            }
        }
    }

    /// Room for the features [80][800] given to ``probability(features:until:)``: it reads them
    /// first, then uses the room as its residual stream (a caller's buffer less: 0.25 MB).
    public var featureScratch: UnsafeMutablePointer<Float> { residual }

    /// The probability that the turn is finished, from features [80][800] (``WhisperFeatures``).
    public func probability(features: UnsafePointer<Float>) -> Float {
        probability(features: features, until: { false })!
    }

    /// The same, given up (nil) when `stop` says so: it is asked after each convolution and each
    /// layer, about a sixth of the work apart. A question asked ahead of a pause that the learner
    /// then breaks is not worth finishing (``TurnCompletionWorker/withdraw(token:)``).
    public func probability(features: UnsafePointer<Float>, until stop: () -> Bool) -> Float? {
        let w = weights
        let width = Self.width, positions = Self.positions, frames = Self.frames, bins = Self.bins

        // Convolution 1 (80 → 384, width 3, stride 1) on the quantized features, [t][80] with a
        // frame of zeros (the padding) at each end. The weights are [out][k][in] (``GraphWalker``),
        // so frame t's window is the 240 values from padded frame t on, read in place.
        let input = w.input
        let padded = columns
        padded.update(repeating: 0, count: bins)
        (padded + (frames + 1) * bins).update(repeating: 0, count: bins)
        for c in 0..<bins {
            for t in 0..<frames { padded[(t + 1) * bins + c] = input.centred(features[c * frames + t]) }
        }
        inBlocks(rows: frames, of: w.convolution1) { first, count in
            product(padded + first * bins, rows: count, strideA: bins, w.convolution1)
            geluThroughTable(rows: count, of: w.convolution1, table: convolutionGELU, then: w.gelu1, perColumn: false, into: convolved + first * width)
        }
        report("gelu_QuantizeLinear_Output", convolved, count: frames * width, zeroPoint: w.gelu1.zeroPoint)
        if stop() { return nil }
        // Convolution 2 (384 → 384, width 3, stride 2), GELU, positions: position t's window
        // is frames 2t − 1 to 2t + 1, in place (frame −1 is the row of zeros before them).
        // Its output has 256 steps, so its GELU is looked up (the same floats as computing it).
        let zero = w.convolution2.output.zeroPoint
        w.positions.withUnsafeBufferPointer { positionsTable in
            convolution2GELU.withUnsafeBufferPointer { gelu in
                inBlocks(rows: positions, of: w.convolution2) { first, count in
                    product(convolved - width + first * 2 * width, rows: count, strideA: 2 * width, w.convolution2)
                    for t in first..<(first + count) {
                        let r = residual + t * width, p = positionsTable.baseAddress! + t * width
                        _ = steps(t - first, of: w.convolution2) { c, centred in
                            let index = centred &+ zero
                            r[c] = gelu[Int(index[0])] + p[c]; r[c + 1] = gelu[Int(index[1])] + p[c + 1]
                            r[c + 2] = gelu[Int(index[2])] + p[c + 2]; r[c + 3] = gelu[Int(index[3])] + p[c + 3]
                        }
                    }
                }
            }
        }

        for (index, layer) in w.layers.enumerated() {
            if stop() { return nil }
            run(layer, index: index, last: index == w.layers.count - 1)
        }

        // The final norm, attention pooling over time, the classifier.
        normalize(w.finalNorm, quantization: w.finalOutput)
        // The final norm has read the residual stream: its buffer takes the dequantized output.
        let pooled = residual  // [400][384]
        for i in 0..<(positions * width) { pooled[i] = Float(activations[i]) * w.finalOutput.scale }
        let tanhScores = columns  // [400][256]
        w.poolProjection.bias.withUnsafeBufferPointer { bias in
            eachResult(of: activations, rows: positions, w.poolProjection) { t in
                for j in 0..<Self.poolWidth { tanhScores[t * Self.poolWidth + j] = w.poolTanh.centred(tanhf(row[j] + bias[j])) }
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
        let width = Self.width, positions = Self.positions, dh = Self.headWidth
        normalize(layer.attentionNorm, quantization: layer.attentionInput)
        report("attention_input", activations, count: positions * width, zeroPoint: layer.attentionInput.zeroPoint)

        // q, k and v, each split into heads: q and k [head][t][d], v [head][t / 2][d][t % 2].
        layer.query.bias.withUnsafeBufferPointer { bias in
            eachResult(of: activations, rows: positions, layer.query) { t in
                var c = 0
                while c < width {
                    let v = (FloatKernels.load4(row + c) + FloatKernels.load4(bias.baseAddress! + c)) * layer.headScale
                    FloatKernels.store4(layer.scaledQuery.centred(v), queries + (c / dh) * positions * dh + t * dh + c % dh)
                    c += 4
                }
            }
        }
        eachResult(of: activations, rows: positions, layer.key) { t in
            var c = 0
            while c < width {
                FloatKernels.store4(layer.scaledKey.centred(FloatKernels.load4(row + c) * layer.headScale), keys + (c / dh) * positions * dh + t * dh + c % dh)
                c += 4
            }
        }
        layer.value.bias.withUnsafeBufferPointer { bias in
            eachResult(of: activations, rows: positions, layer.value) { t in
                var c = 0
                while c < width {
                    let q = layer.valueHeads.centred(FloatKernels.load4(row + c) + FloatKernels.load4(bias.baseAddress! + c))
                    let base = values + (c / dh) * positions * dh + SparsePairGEMM.index(key: t, dimension: c % dh)
                    base[0] = Int16(truncatingIfNeeded: q[0]); base[2] = Int16(truncatingIfNeeded: q[1])
                    base[4] = Int16(truncatingIfNeeded: q[2]); base[6] = Int16(truncatingIfNeeded: q[3])
                    c += 4
                }
            }
        }

        attend(layer)
        report("context", activations, count: positions * width, zeroPoint: layer.context.zeroPoint)
        layer.outputProjection.bias.withUnsafeBufferPointer { bias in
            eachResult(of: activations, rows: positions, layer.outputProjection) { t in
                for c in 0..<width { residual[t * width + c] += row[c] + bias[c] }
            }
        }

        normalize(layer.feedForwardNorm, quantization: layer.feedForwardInput)
        report("feed_forward_input", activations, count: positions * width, zeroPoint: layer.feedForwardInput.zeroPoint)
        // The feed-forward block, in blocks of rows: each block's expansion (its columns in
        // halves, whose sums fit) goes through its GELU into `columns`, is contracted, and lands
        // in the residual stream: the [400][1536] expansion is never held whole (1.2 MB less).
        var expandedWhole: [UInt8] = [], contractWhole: [UInt8] = []  // for `inspect` only
        let half = Self.expanded / 2
        for first in stride(from: 0, to: positions, by: Self.feedForwardBlock) {
            let count = min(Self.feedForwardBlock, positions - first)
            let expandedBlock = columns
            for start in stride(from: 0, to: Self.expanded, by: half) {  // not an array of ranges: that allocates
                let part = start..<(start + half)
                product(activations + first * width, rows: count, layer.expand, columns: part)
                geluThroughTable(rows: count, of: layer.expand, columns: part, table: expandedGELU[index], then: layer.expandedGELU,
                                 perColumn: true, into: expandedBlock)
            }
            product(expandedBlock, rows: count, layer.contract)
            if inspect != nil {
                expandedWhole += (0..<(count * Self.expanded)).map { UInt8(Int32(expandedBlock[$0]) + layer.expandedGELU.zeroPoint) }
                contractWhole += (0..<(count * width)).map {
                    UInt8(Int32(layer.contract.output.centred(sum: sums[$0], multiplier: layer.contract.multipliers[$0 % width])) + layer.contract.output.zeroPoint)
                }
            }
            layer.contract.bias.withUnsafeBufferPointer { bias in
                for t in first..<(first + count) {
                    result(t - first, of: layer.contract)
                    let r = residual + t * width
                    if last {
                        for c in 0..<width { r[c] = (r[c] + row[c]) + bias[c] }
                    } else {
                        for c in 0..<width { r[c] += row[c] + bias[c] }
                    }
                }
            }
        }
        if inspect != nil {
            inspect?("expanded_gelu", expandedWhole)
            inspect?("contract", contractWhole)
        }
    }
}
