/// `C[m][n] = Σ_k A[m][k] · W[n][k]` for an `A` that is mostly zeros, by Int8 weights: the
/// feed-forward contraction of a layer whose GELU is quantized with zero point 0. Such a
/// quantization rounds every GELU output below half a step to 0, the whole negative side
/// included; in smart-turn v3.2 the last two layers' steps are 0.44 and 1.33, so 94 % and
/// 96 % of their 1536 hidden values are 0 (30 windows of speech and silence) and the dense
/// product spent nineteen of every twenty multiply-adds on zeros. The sums are exact
/// integers, so leaving the zeros out gives the same result to the bit.
///
/// The weights are stored pair-interleaved by input, `[K / 2][N][2]` (``paired(_:outputs:inputs:)``):
/// one pair of inputs (k = 2i, 2i + 1) by four outputs is eight consecutive bytes, widened
/// and multiplied by the pair's two activations into four Int32 sums: `pmaddwd` (SSE2) or
/// NEON's widening multiply-adds. A row's pairs with a value that is not zero are listed
/// first (``NonZeroPairs``), then visited for each 32 outputs at a time (eight
/// accumulators, the pair and a product fit x86-64's sixteen vector registers). A pair is
/// skipped only when both its values are zero: at 95 % zeros about one pair in nine is
/// visited. A row with no zeros costs about 1.5 times the dense product's multiply-adds.
enum SparseRowGEMM {
    /// Outputs summed at a time; `columns` must be a multiple of it.
    static let chunk = 32

    /// `values` stored one row per output ([N][K]) re-laid as `[K / 2][N][2]`.
    static func paired(_ values: [Int8], outputs: Int, inputs: Int) -> [Int8] {
        precondition(inputs % 2 == 0 && values.count == outputs * inputs, "inputs in pairs")
        var out = [Int8](repeating: 0, count: values.count)
        for n in 0..<outputs {
            for k in 0..<inputs { out[index(input: k, output: n, outputs: outputs)] = values[n * inputs + k] }
        }
        return out
    }

    /// Where weight (output n, input k) goes in the paired layout.
    @inline(__always)
    static func index(input k: Int, output n: Int, outputs: Int) -> Int { (k >> 1) * 2 * outputs + 2 * n + (k & 1) }

    /// `rows` rows of centred `a` ([rows][depth], depth even) by the paired weights into `c`
    /// (row m at `c + m · strideC`, `columns` Int32 sums). `active` is scratch for `depth / 2`
    /// indices: the caller's, as a temporary allocation of more than 1 KiB would be a malloc.
    @inline(never)
    static func multiply(_ a: UnsafePointer<Int16>, rows: Int, depth: Int, pairedWeights w: UnsafePointer<Int8>,
                         columns: Int, into c: UnsafeMutablePointer<Int32>, strideC: Int, active: UnsafeMutablePointer<Int16>) {
        precondition(depth % 2 == 0 && columns % chunk == 0, "inputs in pairs, outputs in chunks")
        let weights = UnsafeRawPointer(w)
        for m in 0..<rows {
            let row = UnsafeRawPointer(a + m * depth)
            let count = NonZeroPairs.list(row, pairs: depth / 2, into: active)
            var n = 0
            while n < columns {
                var s0 = SIMD4<Int32>(), s1 = SIMD4<Int32>(), s2 = SIMD4<Int32>(), s3 = SIMD4<Int32>()
                var s4 = SIMD4<Int32>(), s5 = SIMD4<Int32>(), s6 = SIMD4<Int32>(), s7 = SIMD4<Int32>()
                var k = 0
                while k < count {
                    let i = Int(active[k])
                    k &+= 1
                    let p = NonZeroPairs.broadcast(row, pair: i)
                    let base = 2 &* (i &* columns &+ n)
                    s0 &+= multiplyAdd(weights, base, p); s1 &+= multiplyAdd(weights, base &+ 8, p)
                    s2 &+= multiplyAdd(weights, base &+ 16, p); s3 &+= multiplyAdd(weights, base &+ 24, p)
                    s4 &+= multiplyAdd(weights, base &+ 32, p); s5 &+= multiplyAdd(weights, base &+ 40, p)
                    s6 &+= multiplyAdd(weights, base &+ 48, p); s7 &+= multiplyAdd(weights, base &+ 56, p)
                }
                NonZeroPairs.store(s0, s1, s2, s3, s4, s5, s6, s7, to: UnsafeMutableRawPointer(c + m * strideC + n))
                n &+= chunk
            }
        }
    }

    /// Eight Int8 weights (four outputs' pairs) widened, by the pair's two values, each lane
    /// pair summed: one `pmaddwd`.
    @inline(__always)
    private static func multiplyAdd(_ weights: UnsafeRawPointer, _ offset: Int, _ p: SIMD8<Int32>) -> SIMD4<Int32> {
        let bytes = weights.loadUnaligned(fromByteOffset: offset, as: SIMD8<Int8>.self)
        let products = SIMD8<Int32>(widening: SIMD8<Int16>(widening: bytes)) &* p
        return products.evenHalf &+ products.oddHalf
    }
}
