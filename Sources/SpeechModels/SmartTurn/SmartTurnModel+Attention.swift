/// The attention of one transformer layer, per head as onnxruntime's QLinearMatMul,
/// QLinearSoftmax and QLinearMatMul run it: the scores, their softmax, the weighted values,
/// joined into [t][384] in `activations`. The queries, keys and values are the layer's, split
/// into heads by ``projections(_:rows:_:)``. Each head's queries go in blocks of
/// ``attentionBlock`` rows of a lane's, so that the scores and probabilities are never held
/// for all 400 (a softmax is a row's own: blocks give the same bits).
extension SmartTurnModel {
    /// The attention of the query rows `rows`, every head (all keys and values are read).
    func attend(_ layer: SmartTurnWeights.Layer, rows: Range<Int>, _ lane: SmartTurnLane) {
        layer.softmax.table.withUnsafeBufferPointer { table in
            for h in 0..<Self.heads {
                for first in stride(from: rows.lowerBound, to: rows.upperBound, by: Self.attentionBlock) {
                    attend(layer, head: h, rows: first, count: min(Self.attentionBlock, rows.upperBound - first), table: table, lane)
                }
            }
        }
    }

    /// Head `h`'s attention for query rows `first..<first + count`.
    private func attend(_ layer: SmartTurnWeights.Layer, head h: Int, rows first: Int, count: Int, table: UnsafeBufferPointer<Float>,
                        _ lane: SmartTurnLane) {
        let sums = lane.sums, attention = lane.probabilities
        let positions = Self.positions, dh = Self.headWidth, width = Self.width
        let scoreMultiplier = layer.scaledQuery.scale * layer.scaledKey.scale / layer.scores.scale
        let contextMultiplier = layer.probabilities.scale * layer.valueHeads.scale / layer.context.scale
        let scoreZero = layer.scores.zeroPoint, probabilityZero = layer.probabilities.zeroPoint
        precondition(count % 4 == 0, "blocks of whole fours of rows")
        IntegerGEMM.multiply(queries + h * positions * dh + first * dh, rows: count, depth: dh, strideA: dh,
                             keys + h * positions * dh, columns: positions, strideB: dh, into: sums, strideC: positions)
        // Four rows at a time: each row's total is a sum in order, as onnxruntime's
        // kernel adds (so the same bits), but four rows' sums run side by side in the
        // lanes of one vector instead of one chain of dependent additions at a time.
        var t = 0
        while t < count {
            var shifts = SIMD4<Int>(repeating: 0)
            for r in 0..<4 {
                let s = sums + (t + r) * positions
                // The scores as uint8 steps, then the kernel's table lookups.
                var top = SIMD4<Int32>(repeating: 0)
                var j = 0
                while j < positions {
                    let q = layer.scores.centred(sums: Self.load4(s + j), multipliers: SIMD4(repeating: scoreMultiplier)) &+ scoreZero
                    UnsafeMutableRawPointer(s + j).storeBytes(of: q, as: SIMD4<Int32>.self)
                    top = top.replacing(with: q, where: q .> top)
                    j += 4
                }
                shifts[r] = 255 - Int(max(max(top[0], top[1]), max(top[2], top[3])))
            }
            let s0 = sums + t * positions, s1 = s0 + positions, s2 = s1 + positions, s3 = s2 + positions
            // The sums in a `let` afterwards: read with a row's index below, the loop's own
            // variable lived on the stack, and each addition waited for the last one's store.
            var running = SIMD4<Float>(repeating: 0)
            let t0 = table.baseAddress! + shifts[0], t1 = table.baseAddress! + shifts[1]
            let t2 = table.baseAddress! + shifts[2], t3 = table.baseAddress! + shifts[3]
            for j in 0..<positions {
                running += SIMD4(t0[Int(s0[j])], t1[Int(s1[j])], t2[Int(s2[j])], t3[Int(s3[j])])
            }
            let totals = running
            if h == 0 && first == 0 && t == 0, inspect != nil {
                inspect?("scores_head0_row0", (0..<positions).map { UInt8(s0[$0]) })
            }
            for r in 0..<4 {
                let s = sums + (t + r) * positions, shifted = shifts[r]
                // Four lanes at a time: the same IEEE operations as one by one (divpd
                // divides each lane as divsd does). The quotient in double, as onnxruntime
                // divides (a float's product by the integer steps is exact there), rounded to
                // even by the double's magic number: baseline x86-64 has no roundpd.
                let probabilities = attention + (t + r) * positions
                let total = SIMD4<Double>(repeating: Double(totals[r])), steps = SIMD4<Double>(repeating: Double(layer.softmax.outputSteps))
                let magic = SIMD4<Double>(repeating: Quantization.doubleRoundingMagic)
                let zero = SIMD4<Float>(repeating: Float(probabilityZero)), ceiling = SIMD4<Float>(repeating: 255)
                let floatMagic = SIMD4<Float>(repeating: Quantization.roundingMagic)
                var j = 0
                while j < positions {
                    let e = SIMD4<Double>(Double(table[shifted + Int(s[j])]), Double(table[shifted + Int(s[j + 1])]),
                                          Double(table[shifted + Int(s[j + 2])]), Double(table[shifted + Int(s[j + 3])]))
                    let q = SIMD4<Float>(((e * steps) / total + magic) - magic)
                    let stepsUp = (q + zero).replacing(with: ceiling, where: q + zero .> ceiling)
                    // An integer already: its bits after adding 1.5 · 2²³ are the value.
                    let centred = unsafeBitCast(stepsUp + floatMagic, to: SIMD4<Int32>.self) &- (0x4B40_0000 + Int32(probabilityZero))
                    FloatKernels.store4(centred, probabilities + j)
                    j += 4
                }
            }
            t += 4
        }
        SparsePairGEMM.multiply(attention, rows: count, keys: positions, pairedValues: values + h * positions * dh, into: sums)
        for t in 0..<count {
            var d = 0
            while d < dh {
                let q = layer.context.centred(sums: Self.load4(sums + t * dh + d), multipliers: SIMD4(repeating: contextMultiplier))
                FloatKernels.store4(q, activations + (first + t) * width + h * dh + d)
                d += 4
            }
        }
    }
}

