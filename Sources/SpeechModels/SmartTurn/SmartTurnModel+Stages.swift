#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The row-wise stages of ``SmartTurnModel``, each on one lane's rows (``SmartTurnModel/Stage``).
extension SmartTurnModel {
    /// Convolution 1 (80 → 384, width 3, stride 1) on the quantized features in `columns`,
    /// [t][80] with a frame of zeros (the padding) at each end. The weights are [out][k][in]
    /// (``GraphWalker``), so frame t's window is the 240 values from padded frame t on, read in
    /// place. Then its GELU, looked up, into the heads' area.
    func convolution1(frames: Range<Int>, _ lane: SmartTurnLane) {
        let w = weights
        inBlocks(rows: frames, of: w.convolution1) { first, count in
            product(columns + first * Self.bins, rows: count, strideA: Self.bins, w.convolution1, lane)
            geluThroughTable(rows: count, of: w.convolution1, table: convolutionGELU, then: w.gelu1, perColumn: false,
                             into: convolved + first * Self.width, lane)
        }
    }

    /// Convolution 2 (384 → 384, width 3, stride 2), GELU, positions: position t's window is
    /// frames 2t − 1 to 2t + 1, in place (frame −1 is the row of zeros before them). Its output
    /// has 256 steps, so its GELU is looked up (the same floats as computing it).
    func convolution2(positions: Range<Int>, _ lane: SmartTurnLane) {
        let w = weights, width = Self.width
        let zero = w.convolution2.output.zeroPoint
        w.positions.withUnsafeBufferPointer { positionsTable in
            convolution2GELU.withUnsafeBufferPointer { gelu in
                inBlocks(rows: positions, of: w.convolution2) { first, count in
                    product(convolved - width + first * 2 * width, rows: count, strideA: 2 * width, w.convolution2, lane)
                    for t in first..<(first + count) {
                        let r = residual + t * width, p = positionsTable.baseAddress! + t * width
                        _ = steps(t - first, of: w.convolution2, lane) { c, centred in
                            let index = centred &+ zero
                            r[c] = gelu[Int(index[0])] + p[c]; r[c + 1] = gelu[Int(index[1])] + p[c + 1]
                            r[c + 2] = gelu[Int(index[2])] + p[c + 2]; r[c + 3] = gelu[Int(index[3])] + p[c + 3]
                        }
                    }
                }
            }
        }
    }

    /// A pre-norm layer's first norm, then its queries, keys and values, each split into
    /// heads: q and k [head][t][d], v [head][t / 2][d][t % 2] (lanes split on an even row).
    func projections(_ layer: SmartTurnWeights.Layer, rows: Range<Int>, _ lane: SmartTurnLane) {
        let width = Self.width, positions = Self.positions, dh = Self.headWidth, row = lane.row
        normalize(layer.attentionNorm, quantization: layer.attentionInput, rows: rows, lane)
        layer.query.bias.withUnsafeBufferPointer { bias in
            eachResult(of: activations, rows: rows, layer.query, lane) { t in
                var c = 0
                while c < width {
                    let v = (FloatKernels.load4(row + c) + FloatKernels.load4(bias.baseAddress! + c)) * layer.headScale
                    FloatKernels.store4(layer.scaledQuery.centred(v), queries + (c / dh) * positions * dh + t * dh + c % dh)
                    c += 4
                }
            }
        }
        eachResult(of: activations, rows: rows, layer.key, lane) { t in
            var c = 0
            while c < width {
                FloatKernels.store4(layer.scaledKey.centred(FloatKernels.load4(row + c) * layer.headScale), keys + (c / dh) * positions * dh + t * dh + c % dh)
                c += 4
            }
        }
        layer.value.bias.withUnsafeBufferPointer { bias in
            eachResult(of: activations, rows: rows, layer.value, lane) { t in
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
    }

    /// A layer's output projection into the residual stream, its second norm and its feed-
    /// forward block, in blocks of rows: each block's expansion (its columns in thirds, whose
    /// sums fit) goes through its GELU into the lane's expansion block, is contracted, and
    /// lands in the residual stream: the [400][1536] expansion is never held whole (1.2 MB
    /// less). The last layer's output is added as onnxruntime's SkipLayerNormalization adds it
    /// before the final norm: (residual + product) + bias, not residual + (product + bias).
    func feedForward(_ layer: SmartTurnWeights.Layer, index: Int, last: Bool, rows: Range<Int>, _ lane: SmartTurnLane) {
        let width = Self.width, row = lane.row
        layer.outputProjection.bias.withUnsafeBufferPointer { bias in
            eachResult(of: activations, rows: rows, layer.outputProjection, lane) { t in
                for c in 0..<width { residual[t * width + c] += row[c] + bias[c] }
            }
        }
        normalize(layer.feedForwardNorm, quantization: layer.feedForwardInput, rows: rows, lane)
        let third = Self.expanded / 3
        for first in stride(from: rows.lowerBound, to: rows.upperBound, by: Self.feedForwardBlock) {
            let count = min(Self.feedForwardBlock, rows.upperBound - first)
            for start in stride(from: 0, to: Self.expanded, by: third) {  // not an array of ranges: that allocates
                let part = start..<(start + third)
                product(activations + first * width, rows: count, layer.expand, columns: part, lane)
                geluThroughTable(rows: count, of: layer.expand, columns: part, table: expandedGELU[index], then: layer.expandedGELU,
                                 perColumn: true, into: lane.expansion, lane)
            }
            product(lane.expansion, rows: count, layer.contract, lane)
            if inspect != nil { gather(layer, rows: count, lane) }
            layer.contract.bias.withUnsafeBufferPointer { bias in
                for t in first..<(first + count) {
                    result(t - first, of: layer.contract, lane)
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

    /// A feed-forward block's expansion and contraction as uint8, for `inspect` (the lanes
    /// then run in order, so the rows are gathered in order).
    private func gather(_ layer: SmartTurnWeights.Layer, rows count: Int, _ lane: SmartTurnLane) {
        inspectedExpansion += (0..<(count * Self.expanded)).map { UInt8(Int32(lane.expansion[$0]) + layer.expandedGELU.zeroPoint) }
        inspectedContraction += (0..<(count * Self.width)).map {
            UInt8(Int32(layer.contract.output.centred(sum: lane.sums[$0], multiplier: layer.contract.multipliers[$0 % Self.width]))
                  + layer.contract.output.zeroPoint)
        }
    }

    /// The final norm, the encoder's output dequantized into the residual's room, and the
    /// attention pooling's scores (384 → 256, tanh) into `columns`.
    func poolingScores(rows: Range<Int>, _ lane: SmartTurnLane) {
        let w = weights, width = Self.width, row = lane.row
        normalize(w.finalNorm, quantization: w.finalOutput, rows: rows, lane)
        // The final norm has read these rows of the residual stream: they take the output.
        let pooled = residual  // [400][384]
        for i in (rows.lowerBound * width)..<(rows.upperBound * width) { pooled[i] = Float(activations[i]) * w.finalOutput.scale }
        let tanhScores = columns  // [400][256]
        w.poolProjection.bias.withUnsafeBufferPointer { bias in
            eachResult(of: activations, rows: rows, w.poolProjection, lane) { t in
                for j in 0..<Self.poolWidth { tanhScores[t * Self.poolWidth + j] = w.poolTanh.centred(tanhf(row[j] + bias[j])) }
            }
        }
    }
}
