/// `C[m][d] = Σ_j P[m][j] · V[j][d]` for attention's second product, the quantized
/// probabilities by the values, skipping the probabilities that are zero. Softmax's output
/// step is 1/258 with zero point 0, so about three in four probabilities of smart-turn's
/// attention round to 0 (76 % over 30 windows of speech and silence): the dense product
/// spent three quarters of its multiply-adds on them. The sums are exact integers, so leaving
/// zeros out gives the same result to the bit.
///
/// Keys go in pairs (j = 2i, 2i + 1): `V` is stored pair-interleaved, `[i][d][2]`, so that one
/// pair's two values of eight dimensions' are one vector whose products with the pair's two
/// probabilities sum lane by lane into four Int32 sums: `pmaddwd` (SSE2) or NEON's widening
/// multiply-adds. A pair whose two probabilities are both zero is skipped; the pairs to visit
/// are listed first (``NonZeroPairs``).
enum SparsePairGEMM {
    /// Rows `P` (`rows` × `keys` centred probabilities, `keys` even) by `V` (`keys` × 64,
    /// pair-interleaved) into `c` (`rows` × 64 Int32).
    static let width = 64

    @inline(never)
    static func multiply(_ p: UnsafePointer<Int16>, rows: Int, keys: Int, pairedValues v: UnsafePointer<Int16>,
                         into c: UnsafeMutablePointer<Int32>) {
        precondition(keys % 2 == 0, "keys in pairs")
        withUnsafeTemporaryAllocation(of: Int16.self, capacity: keys / 2) { active in
            let active = active.baseAddress!
            for m in 0..<rows {
                let row = UnsafeRawPointer(p + m * keys)
                let count = NonZeroPairs.list(row, pairs: keys / 2, into: active)
                // Two halves of 32 dimensions: eight accumulators, the pair's probabilities and
                // a product fit the sixteen vector registers of x86-64.
                for half in 0..<2 {
                    var s0 = SIMD4<Int32>(), s1 = SIMD4<Int32>(), s2 = SIMD4<Int32>(), s3 = SIMD4<Int32>()
                    var s4 = SIMD4<Int32>(), s5 = SIMD4<Int32>(), s6 = SIMD4<Int32>(), s7 = SIMD4<Int32>()
                    var k = 0
                    while k < count {
                        let i = Int(active[k])
                        k &+= 1
                        let w = NonZeroPairs.broadcast(row, pair: i)
                        let values = v + i * 2 * width + half * width
                        s0 &+= multiplyAdd(values, w); s1 &+= multiplyAdd(values + 8, w)
                        s2 &+= multiplyAdd(values + 16, w); s3 &+= multiplyAdd(values + 24, w)
                        s4 &+= multiplyAdd(values + 32, w); s5 &+= multiplyAdd(values + 40, w)
                        s6 &+= multiplyAdd(values + 48, w); s7 &+= multiplyAdd(values + 56, w)
                    }
                    NonZeroPairs.store(s0, s1, s2, s3, s4, s5, s6, s7, to: UnsafeMutableRawPointer(c + m * width + half * 32))
                }
            }
        }
    }

    /// Eight Int16 lanes (four dimensions' pairs of values) by the pair's probabilities, each
    /// lane pair summed: one `pmaddwd`.
    @inline(__always)
    private static func multiplyAdd(_ values: UnsafePointer<Int16>, _ w: SIMD8<Int32>) -> SIMD4<Int32> {
        let x = SIMD8<Int32>(widening: UnsafeRawPointer(values).loadUnaligned(as: SIMD8<Int16>.self))
        let products = x &* w
        return products.evenHalf &+ products.oddHalf
    }

    /// Where value `d` of key `j` goes in the pair-interleaved layout (of one head).
    @inline(__always)
    static func index(key j: Int, dimension d: Int) -> Int { (j >> 1) * 2 * width + 2 * d + (j & 1) }
}
