/// What the two sparse products (``SparsePairGEMM``, ``SparseRowGEMM``) share: the list of a
/// row's pairs of centred Int16 values (elements 2i and 2i + 1) that are not both zero, which
/// they then visit, a pair's values as one operand, and the store of the eight accumulators (32 Int32 sums) they add into.
enum NonZeroPairs {
    /// The indices i < `pairs` whose pair holds a value, in order, into `active`; returns how
    /// many. Without a branch: `x | -x` has its top bit set exactly when x is not zero (a
    /// ternary here was compiled to a branch, mispredicted on every other pair).
    @inline(__always)
    static func list(_ row: UnsafeRawPointer, pairs: Int, into active: UnsafeMutablePointer<Int16>) -> Int {
        precondition(pairs <= Int(Int16.max) + 1, "pair indices fit Int16")
        var count = 0, i = 0
        while i < pairs {
            active[count] = Int16(truncatingIfNeeded: i)
            let x = row.load(fromByteOffset: 4 &* i, as: UInt32.self)
            count &+= Int((x | (0 &- x)) >> 31)
            i &+= 1
        }
        return count
    }

    /// Pair i's two values repeated across eight lanes, widened: the operand whose products
    /// with eight Int16 lanes (four columns' pairs) sum lane pair by lane pair (`pmaddwd`).
    @inline(__always)
    static func broadcast(_ row: UnsafeRawPointer, pair i: Int) -> SIMD8<Int32> {
        let pair = row.load(fromByteOffset: 4 &* i, as: SIMD2<Int16>.self)
        return SIMD8<Int32>(widening: SIMD8<Int16>(pair[0], pair[1], pair[0], pair[1], pair[0], pair[1], pair[0], pair[1]))
    }

    /// Eight accumulators of four sums each, as 32 consecutive Int32 at `out`.
    @inline(__always)
    static func store(_ s0: SIMD4<Int32>, _ s1: SIMD4<Int32>, _ s2: SIMD4<Int32>, _ s3: SIMD4<Int32>,
                      _ s4: SIMD4<Int32>, _ s5: SIMD4<Int32>, _ s6: SIMD4<Int32>, _ s7: SIMD4<Int32>,
                      to out: UnsafeMutableRawPointer) {
        out.storeBytes(of: s0, toByteOffset: 0, as: SIMD4<Int32>.self)
        out.storeBytes(of: s1, toByteOffset: 16, as: SIMD4<Int32>.self)
        out.storeBytes(of: s2, toByteOffset: 32, as: SIMD4<Int32>.self)
        out.storeBytes(of: s3, toByteOffset: 48, as: SIMD4<Int32>.self)
        out.storeBytes(of: s4, toByteOffset: 64, as: SIMD4<Int32>.self)
        out.storeBytes(of: s5, toByteOffset: 80, as: SIMD4<Int32>.self)
        out.storeBytes(of: s6, toByteOffset: 96, as: SIMD4<Int32>.self)
        out.storeBytes(of: s7, toByteOffset: 112, as: SIMD4<Int32>.self)
    }
}
