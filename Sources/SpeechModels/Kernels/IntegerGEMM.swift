import CSpeechKernels

/// `C[m][n] = Σ_k A[m][k] · B[n][k]` with Int16 `A`, Int8 or Int16 `B` and Int32 `C`: every
/// matrix product of the quantized transformer (weights are Int8; both operands of attention
/// are activations). Values are centred 8-bit quantities (|a| ≤ 255, |b| ≤ 255), so a pair of
/// products fits Int32 many times over and the sums are exact: the result does not depend
/// on the order of the additions.
///
/// The inner step multiplies eight Int16 lanes and adds them into accumulators that are only
/// ever summed whole, which LLVM lowers to `pmaddwd` (SSE2, so baseline x86-64: eight
/// multiply-adds an instruction) or NEON's widening multiply-adds.
enum IntegerGEMM {
    /// Int16 elements of the scratch an Int8 product widens its weights into (48 KiB): a
    /// panel of weight rows that stays in the core's caches while every row of A passes by.
    static let panelCapacity = 24 * 1024

    /// The Int8 weights are widened to Int16 a panel at a time, once per product, rather than
    /// once per row block of A in the inner loop: baseline x86-64 has no widening load
    /// (`pmovsxbw` is SSE4.1), and the unpack and shift that stood in for it took as many
    /// instructions as the multiply-adds they fed (142 → 119 ms a window).
    // Never inlined: each variant is compiled once, as a whole (inlined into a caller with
    // more live values, the widening loads were left as calls).
    @inline(never)
    static func multiply(_ a: UnsafePointer<Int16>, rows: Int, depth: Int, strideA: Int,
                         _ b: UnsafePointer<Int8>, columns: Int, strideB: Int,
                         into c: UnsafeMutablePointer<Int32>, strideC: Int, panel: UnsafeMutablePointer<Int16>, variant: KernelVariant = .current) {
        let panelColumns = max(3, min(columns, panelCapacity / depth / 3 * 3))
        precondition(panelColumns * depth <= panelCapacity, "a panel of three weight rows fits the scratch")
        var n = 0
        while n < columns {
            let count = min(panelColumns, columns - n)
            widen(b + n * strideB, rows: count, depth: depth, stride: strideB, into: panel)
            multiply(a, rows: rows, depth: depth, strideA: strideA, UnsafePointer(panel), columns: count, strideB: depth,
                     into: c + n, strideC: strideC, variant: variant)
            n += count
        }
    }

    private static func widen(_ b: UnsafePointer<Int8>, rows: Int, depth: Int, stride: Int, into panel: UnsafeMutablePointer<Int16>) {
        for r in 0..<rows {
            let source = UnsafeRawPointer(b + r * stride), target = UnsafeMutableRawPointer(panel + r * depth)
            var k = 0
            while k < depth {
                let bytes = source.loadUnaligned(fromByteOffset: k, as: SIMD8<Int8>.self)
                target.storeBytes(of: SIMD8<Int16>(truncatingIfNeeded: bytes), toByteOffset: 2 * k, as: SIMD8<Int16>.self)
                k += 8
            }
        }
    }

    /// On the variant in use (``KernelVariant/current``): a C kernel for the CPU's wider
    /// instructions, or the portable one below.
    @inline(never)
    static func multiply(_ a: UnsafePointer<Int16>, rows: Int, depth: Int, strideA: Int,
                         _ b: UnsafePointer<Int16>, columns: Int, strideB: Int,
                         into c: UnsafeMutablePointer<Int32>, strideC: Int, variant: KernelVariant = .current) {
        if variant != .portable,
           practiced_gemm_s16(variant.code, a, rows, depth, strideA, b, columns, strideB, c, strideC) != 0 { return }
        portable(a, rows: rows, depth: depth, strideA: strideA, b, columns: columns, strideB: strideB, into: c, strideC: strideC)
    }

    /// The portable kernel alone: the reference every variant is held to.
    @inline(never)
    static func portable(_ a: UnsafePointer<Int16>, rows: Int, depth: Int, strideA: Int,
                         _ b: UnsafePointer<Int16>, columns: Int, strideB: Int,
                         into c: UnsafeMutablePointer<Int32>, strideC: Int) {
        kernel(a, rows: rows, depth: depth, strideA: strideA, b, columns: columns, strideB: strideB, into: c, strideC: strideC)
    }

    /// Three rows of A by three of B at a time: nine accumulators, three weight vectors and
    /// one row vector fit x86-64's sixteen vector registers with the copies `pmaddwd`'s two-
    /// operand form needs (four rows by three spilled an accumulator, whose store and reload
    /// then chained the iterations: 20 % slower). The loop is bound by `pmaddwd`'s two ports
    /// (nine of them take 4.5 cycles; it runs in about 5.5). Depth must be a multiple of 8.
    @inline(__always)
    private static func kernel(_ a: UnsafePointer<Int16>, rows: Int, depth: Int, strideA: Int,
                               _ b: UnsafePointer<Int16>, columns: Int, strideB: Int,
                               into c: UnsafeMutablePointer<Int32>, strideC: Int) {
        precondition(depth % 8 == 0, "depth a multiple of 8")
        var m = 0
        while m < rows {
            let mr = min(3, rows - m)
            let a0 = a + m * strideA
            let a1 = a0 + (mr > 1 ? strideA : 0), a2 = a0 + (mr > 2 ? 2 * strideA : 0)
            var n = 0
            while n < columns {
                let nr = min(3, columns - n)
                let b0 = b + n * strideB
                let b1 = b0 + (nr > 1 ? strideB : 0), b2 = b0 + (nr > 2 ? 2 * strideB : 0)
                // Products of Int16 lanes widened to Int32 and only ever summed: LLVM turns
                // each `x &* w` with its accumulation into one pmaddwd.
                var c00 = SIMD8<Int32>(), c01 = SIMD8<Int32>(), c02 = SIMD8<Int32>()
                var c10 = SIMD8<Int32>(), c11 = SIMD8<Int32>(), c12 = SIMD8<Int32>()
                var c20 = SIMD8<Int32>(), c21 = SIMD8<Int32>(), c22 = SIMD8<Int32>()
                var k = 0
                while k < depth {
                    let w0 = load8(b0 + k), w1 = load8(b1 + k), w2 = load8(b2 + k)
                    let x0 = load8(a0 + k)
                    c00 &+= x0 &* w0; c01 &+= x0 &* w1; c02 &+= x0 &* w2
                    let x1 = load8(a1 + k)
                    c10 &+= x1 &* w0; c11 &+= x1 &* w1; c12 &+= x1 &* w2
                    let x2 = load8(a2 + k)
                    c20 &+= x2 &* w0; c21 &+= x2 &* w1; c22 &+= x2 &* w2
                    k &+= 8
                }
                let r0 = c + m * strideC + n
                store(c00, c01, c02, nr, r0)
                if mr > 1 { store(c10, c11, c12, nr, r0 + strideC) }
                if mr > 2 { store(c20, c21, c22, nr, r0 + 2 * strideC) }
                n += 3
            }
            m += 3
        }
    }

    /// Eight Int16 lanes widened to Int32 (the widening and the sum of products become one
    /// `pmaddwd`).
    @inline(__always)
    private static func load8(_ p: UnsafePointer<Int16>) -> SIMD8<Int32> {
        SIMD8<Int32>(widening: UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Int16>.self))
    }

    @inline(__always)
    private static func store(_ s0: SIMD8<Int32>, _ s1: SIMD8<Int32>, _ s2: SIMD8<Int32>, _ count: Int, _ c: UnsafeMutablePointer<Int32>) {
        c[0] = s0.wrappedSum()
        if count > 1 { c[1] = s1.wrappedSum() }
        if count > 2 { c[2] = s2.wrappedSum() }
    }
}
