/// One lane's scratch (``SmartTurnModel``, ``LaneTeam``): what a row-wise stage writes
/// besides its rows of the shared buffers, so that two lanes never touch the same memory.
struct SmartTurnLane {
    /// Products: one head's scores for ``SmartTurnModel/attentionBlock`` query rows
    /// ([100][400]), a feed-forward block's third of the expansion ([100][512]), or blocks of
    /// rows of the other products that fit.
    let sums: UnsafeMutablePointer<Int32>
    static let sumsCapacity = SmartTurnModel.feedForwardBlock * SmartTurnModel.expanded / 3
    /// One row of a product's result, dequantized (up to 1536).
    let row: UnsafeMutablePointer<Float>
    /// Widened weights (``IntegerGEMM/panelCapacity``), or a sparse product's list of pairs.
    let panel: UnsafeMutablePointer<Int16>
    /// One head's attention probabilities for ``SmartTurnModel/attentionBlock`` query rows.
    let probabilities: UnsafeMutablePointer<Int16>
    /// A block of the feed-forward expansion ([100][1536]): the model's room, not the lane's.
    let expansion: UnsafeMutablePointer<Int16>

    init(expansion: UnsafeMutablePointer<Int16>) {
        precondition(Self.sumsCapacity >= SmartTurnModel.attentionBlock * SmartTurnModel.positions, "a block of scores fits")
        sums = .allocate(capacity: Self.sumsCapacity)
        row = .allocate(capacity: SmartTurnModel.expanded)
        panel = .allocate(capacity: IntegerGEMM.panelCapacity)
        probabilities = .allocate(capacity: SmartTurnModel.attentionBlock * SmartTurnModel.positions)
        self.expansion = expansion
    }

    func deallocate() {
        sums.deallocate(); row.deallocate(); panel.deallocate(); probabilities.deallocate()
    }
}

/// The steps every stage is made of, on one lane's rows with its scratch.
extension SmartTurnModel {
    /// `body(first, count)` for consecutive blocks of `rows` whose products by `linear` fit
    /// a lane's sums.
    func inBlocks(rows: Range<Int>, of linear: SmartTurnWeights.Linear, _ body: (Int, Int) -> Void) {
        let block = SmartTurnLane.sumsCapacity / linear.matrix.outputs
        var first = rows.lowerBound
        while first < rows.upperBound {
            body(first, min(block, rows.upperBound - first))
            first += block
        }
    }

    /// `rows` of `input` by `linear`, in blocks that fit the lane's sums: `body(t)` for each
    /// row, its result dequantized in the lane's `row` (``result(_:of:_:)``), a MatMul's float
    /// bias the body's.
    func eachResult(of input: UnsafePointer<Int16>, rows: Range<Int>, _ linear: SmartTurnWeights.Linear, _ lane: SmartTurnLane,
                    _ body: (Int) -> Void) {
        inBlocks(rows: rows, of: linear) { first, count in
            product(input + first * linear.matrix.inputs, rows: count, linear, lane)
            for t in first..<(first + count) {
                result(t - first, of: linear, lane)
                body(t)
            }
        }
    }

    /// The lane's `sums[m][n]` for `rows` rows of centred `input` by `linear`'s weight, for its
    /// output `columns` (all by default; `sums` then holds that many a row). A row starts
    /// `strideA` after the one before (by default its depth; a convolution's windows overlap).
    func product(_ input: UnsafePointer<Int16>, rows: Int, strideA: Int? = nil, _ linear: SmartTurnWeights.Linear,
                 columns: Range<Int>? = nil, _ lane: SmartTurnLane) {
        let columns = columns ?? 0..<linear.matrix.outputs
        precondition(rows * columns.count <= SmartTurnLane.sumsCapacity, "a product that fits the sums")
        linear.matrix.values.withUnsafeBufferPointer { w in
            if linear.matrix.layout == .pairedInputs {
                precondition(strideA == nil && columns.count == linear.matrix.outputs && linear.matrix.inputs / 2 <= IntegerGEMM.panelCapacity,
                             "a sparse product of whole rows, its list of pairs in the panel")
                SparseRowGEMM.multiply(input, rows: rows, depth: linear.matrix.inputs, pairedWeights: w.baseAddress!,
                                       columns: columns.count, into: lane.sums, strideC: columns.count, active: lane.panel)
                return
            }
            IntegerGEMM.multiply(input, rows: rows, depth: linear.matrix.inputs, strideA: strideA ?? linear.matrix.inputs,
                                 w.baseAddress! + columns.lowerBound * linear.matrix.inputs, columns: columns.count,
                                 strideB: linear.matrix.inputs, into: lane.sums, strideC: columns.count, panel: lane.panel)
        }
    }

    /// Row `m` of the lane's last product requantized as `linear`'s fused kernel does it (its
    /// Int32 bias included), then dequantized into the lane's `row`; a MatMul's float bias is
    /// the caller's.
    @inline(__always)
    func result(_ m: Int, of linear: SmartTurnWeights.Linear, _ lane: SmartTurnLane) {
        let output = linear.output, row = lane.row
        let scale = SIMD4<Float>(repeating: output.scale)
        let done = steps(m, of: linear, lane) { j, centred in FloatKernels.store4(SIMD4<Float>(centred) * scale, row + j) }
        // The last few (a width that is not a multiple of four: the pooling's score, the head).
        let s = lane.sums + m * linear.matrix.outputs
        for j in done..<linear.matrix.outputs {
            let sum = s[j] &+ (linear.integerBias?[j] ?? 0)
            row[j] = Float(output.centred(sum: sum, multiplier: linear.multipliers[j])) * output.scale
        }
    }

    /// Row `m` of the lane's last product (of `columns`, all by default) requantized (its Int32
    /// bias included) to centred steps, four columns at a time, given to `body` with their
    /// first column; the columns done (a multiple of four).
    @inline(__always)
    func steps(_ m: Int, of linear: SmartTurnWeights.Linear, columns: Range<Int>? = nil, _ lane: SmartTurnLane,
               _ body: (Int, SIMD4<Int32>) -> Void) -> Int {
        let columns = columns ?? 0..<linear.matrix.outputs
        let first = columns.lowerBound, n = columns.count
        let s = lane.sums + m * n  // column j at s + (j − first)
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

    /// Rows `0..<count` of the lane's last product (of `columns`, all by default) through a
    /// GELU table: requantized (Int32 bias included), then looked up, into those columns of
    /// `out` (stride: the product's width). `perColumn`: one table of 256 for each column,
    /// else one for all.
    func geluThroughTable(rows count: Int, of linear: SmartTurnWeights.Linear, columns: Range<Int>? = nil, table: [UInt8],
                          then gelu: Quantization, perColumn: Bool, into out: UnsafeMutablePointer<Int16>, _ lane: SmartTurnLane) {
        let outputZero = Int16(gelu.zeroPoint), zero = linear.output.zeroPoint
        let n = linear.matrix.outputs, columnStride = perColumn ? 256 : 0
        let columns = columns ?? 0..<n
        table.withUnsafeBufferPointer { table in
            let table = table.baseAddress!
            for m in 0..<count {
                let o = out + m * n
                let done = steps(m, of: linear, columns: columns, lane) { j, centred in
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

    /// Layer norm of `rows` of the residual stream, quantized into `activations`.
    func normalize(_ norm: SmartTurnWeights.Norm, quantization: Quantization, rows: Range<Int>, _ lane: SmartTurnLane) {
        let width = Self.width, row = lane.row
        norm.weight.withUnsafeBufferPointer { g in
            norm.bias.withUnsafeBufferPointer { b in
                for t in rows {
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
}
