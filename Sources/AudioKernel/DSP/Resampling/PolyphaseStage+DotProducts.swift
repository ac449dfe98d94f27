/// The polyphase stage's inner products: four outputs' dot products at once (one or two
/// channels), their horizontal sums, and the single dot product of the interpolated mode.
/// Kept apart from the stage's bookkeeping; whole-module optimization inlines them there.
extension PolyphaseStage {
    /// Four dot products of `n` (a multiple of 4) taps, as `(Σ a0·b0, Σ a1·b1, Σ a2·b2, Σ a3·b3)`.
    @inline(__always)
    static func dot4(_ a0: UnsafePointer<Float>, _ b0: UnsafePointer<Float>, _ a1: UnsafePointer<Float>, _ b1: UnsafePointer<Float>,
                     _ a2: UnsafePointer<Float>, _ b2: UnsafePointer<Float>, _ a3: UnsafePointer<Float>, _ b3: UnsafePointer<Float>,
                     _ n: Int) -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
        var s0 = SIMD4<Float>(), s1 = SIMD4<Float>(), s2 = SIMD4<Float>(), s3 = SIMD4<Float>()
        let (ra0, rb0, ra1, rb1) = (UnsafeRawPointer(a0), UnsafeRawPointer(b0), UnsafeRawPointer(a1), UnsafeRawPointer(b1))
        let (ra2, rb2, ra3, rb3) = (UnsafeRawPointer(a2), UnsafeRawPointer(b2), UnsafeRawPointer(a3), UnsafeRawPointer(b3))
        var offset = 0
        let end = n &* MemoryLayout<Float>.stride
        typealias V = SIMD4<Float>
        while offset < end {
            s0 += ra0.load(fromByteOffset: offset, as: V.self) * rb0.loadUnaligned(fromByteOffset: offset, as: V.self)
            s1 += ra1.load(fromByteOffset: offset, as: V.self) * rb1.loadUnaligned(fromByteOffset: offset, as: V.self)
            s2 += ra2.load(fromByteOffset: offset, as: V.self) * rb2.loadUnaligned(fromByteOffset: offset, as: V.self)
            s3 += ra3.load(fromByteOffset: offset, as: V.self) * rb3.loadUnaligned(fromByteOffset: offset, as: V.self)
            offset &+= 16
        }
        return (s0, s1, s2, s3)
    }

    /// ``dot4`` for two channels at once: each coefficient is loaded once for both.
    @inline(__always)
    static func dot4x2(_ a0: UnsafePointer<Float>, _ a1: UnsafePointer<Float>, _ a2: UnsafePointer<Float>, _ a3: UnsafePointer<Float>,
                       _ left: UnsafePointer<Float>, _ right: UnsafePointer<Float>, _ n0: Int, _ n1: Int, _ n2: Int, _ n3: Int,
                       _ n: Int) -> ((SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>), (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>)) {
        var l0 = SIMD4<Float>(), l1 = SIMD4<Float>(), l2 = SIMD4<Float>(), l3 = SIMD4<Float>()
        var r0 = SIMD4<Float>(), r1 = SIMD4<Float>(), r2 = SIMD4<Float>(), r3 = SIMD4<Float>()
        let (c0, c1, c2, c3) = (UnsafeRawPointer(a0), UnsafeRawPointer(a1), UnsafeRawPointer(a2), UnsafeRawPointer(a3))
        let (x0, x1, x2, x3) = (UnsafeRawPointer(left + n0), UnsafeRawPointer(left + n1), UnsafeRawPointer(left + n2), UnsafeRawPointer(left + n3))
        let (y0, y1, y2, y3) = (UnsafeRawPointer(right + n0), UnsafeRawPointer(right + n1), UnsafeRawPointer(right + n2), UnsafeRawPointer(right + n3))
        typealias V = SIMD4<Float>
        var offset = 0
        let end = n &* MemoryLayout<Float>.stride
        while offset < end {
            let k0 = c0.load(fromByteOffset: offset, as: V.self), k1 = c1.load(fromByteOffset: offset, as: V.self)
            let k2 = c2.load(fromByteOffset: offset, as: V.self), k3 = c3.load(fromByteOffset: offset, as: V.self)
            l0 += k0 * x0.loadUnaligned(fromByteOffset: offset, as: V.self)
            r0 += k0 * y0.loadUnaligned(fromByteOffset: offset, as: V.self)
            l1 += k1 * x1.loadUnaligned(fromByteOffset: offset, as: V.self)
            r1 += k1 * y1.loadUnaligned(fromByteOffset: offset, as: V.self)
            l2 += k2 * x2.loadUnaligned(fromByteOffset: offset, as: V.self)
            r2 += k2 * y2.loadUnaligned(fromByteOffset: offset, as: V.self)
            l3 += k3 * x3.loadUnaligned(fromByteOffset: offset, as: V.self)
            r3 += k3 * y3.loadUnaligned(fromByteOffset: offset, as: V.self)
            offset &+= 16
        }
        return ((l0, l1, l2, l3), (r0, r1, r2, r3))
    }

    /// ``transposeSum`` where the optimizer cannot see it. Beside a tap loop unrolled for a
    /// known tap count, it would otherwise move the shuffles up through every addition of
    /// the four dot products (what the sum is after, 4 shuffles, became 40).
    @inline(never)
    static func transposeSumApart(_ s0: SIMD4<Float>, _ s1: SIMD4<Float>, _ s2: SIMD4<Float>, _ s3: SIMD4<Float>) -> SIMD4<Float> {
        transposeSum(s0, s1, s2, s3)
    }

    /// `(Σ s0, Σ s1, Σ s2, Σ s3)`: the halves of each pair added (one register for two
    /// accumulators), then the neighbouring lanes.
    @inline(__always)
    static func transposeSum(_ s0: SIMD4<Float>, _ s1: SIMD4<Float>, _ s2: SIMD4<Float>, _ s3: SIMD4<Float>) -> SIMD4<Float> {
        let a = SIMD4(s0[0], s0[1], s1[0], s1[1]) + SIMD4(s0[2], s0[3], s1[2], s1[3])
        let b = SIMD4(s2[0], s2[1], s3[0], s3[1]) + SIMD4(s2[2], s2[3], s3[2], s3[3])
        return SIMD4(a[0], a[2], b[0], b[2]) + SIMD4(a[1], a[3], b[1], b[3])
    }

    /// `sum(a[i] * b[i])` for `n` a multiple of 4, in eight lanes and a tree at the end (a
    /// float sum is not reassociated by the vectorizer on its own).
    @inline(__always)
    static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ n: Int) -> Float {
        var low = SIMD8<Float>(), high = SIMD8<Float>()
        var i = 0
        let a = UnsafeRawPointer(a), b = UnsafeRawPointer(b)
        let stride = MemoryLayout<Float>.stride
        while i &+ 16 <= n {
            low += a.loadUnaligned(fromByteOffset: i &* stride, as: SIMD8<Float>.self)
                * b.loadUnaligned(fromByteOffset: i &* stride, as: SIMD8<Float>.self)
            high += a.loadUnaligned(fromByteOffset: (i &+ 8) &* stride, as: SIMD8<Float>.self)
                * b.loadUnaligned(fromByteOffset: (i &+ 8) &* stride, as: SIMD8<Float>.self)
            i &+= 16
        }
        if i &+ 8 <= n {
            low += a.loadUnaligned(fromByteOffset: i &* stride, as: SIMD8<Float>.self)
                * b.loadUnaligned(fromByteOffset: i &* stride, as: SIMD8<Float>.self)
            i &+= 8
        }
        let eight = low + high
        var four = eight.lowHalf + eight.highHalf
        if i < n {
            four += a.loadUnaligned(fromByteOffset: i &* stride, as: SIMD4<Float>.self)
                * b.loadUnaligned(fromByteOffset: i &* stride, as: SIMD4<Float>.self)
        }
        let two = four.lowHalf + four.highHalf
        return two[0] + two[1]
    }
}
