extension SIMD8 where Scalar == Int32 {
    /// Eight Int16 lanes sign-extended, written lane by lane rather than through the standard
    /// library's generic `init(truncatingIfNeeded:)`: the optimizer once left that generic as
    /// a call in `SparsePairGEMM` after an unrelated change elsewhere in the module (18 calls
    /// in its loop), so the widening products it feeds were no longer fused into `pmaddwd`
    /// and the product took four times as long. A concrete initializer always inlines, and
    /// LLVM folds the eight extensions into one vector sign extension.
    @inline(__always)
    init(widening v: SIMD8<Int16>) {
        self.init(Int32(v[0]), Int32(v[1]), Int32(v[2]), Int32(v[3]), Int32(v[4]), Int32(v[5]), Int32(v[6]), Int32(v[7]))
    }
}

extension SIMD8 where Scalar == Int16 {
    /// Eight Int8 lanes sign-extended, lane by lane, for the reason above.
    @inline(__always)
    init(widening v: SIMD8<Int8>) {
        self.init(Int16(v[0]), Int16(v[1]), Int16(v[2]), Int16(v[3]), Int16(v[4]), Int16(v[5]), Int16(v[6]), Int16(v[7]))
    }
}
