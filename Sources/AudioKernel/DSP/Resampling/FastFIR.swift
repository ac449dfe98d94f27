/// A correlation `y[j] = Σᵢ h[i] · u[j + i]` (`i < length`) by the fast FIR algorithm, the
/// half-band stages' arithmetic.
///
/// The 2-parallel FFA (Mou and Duhamel) splits the taps into their even and odd halves
/// `h₀`, `h₁` and the input into `u₀[t] = u[2t]`, `u₁[t] = u[2t + 1]`; with `v[t] = u₁[t] +
/// u₀[t + 1]`, three correlations of half the length over half the outputs give all of them:
///
///     a = h₀ ⋆ u₀,   b = h₁ ⋆ u₁,   c = (h₀ + h₁) ⋆ v
///     y[2m] = a[m] + b[m],   y[2m + 1] = c[m] − a[m + 1] − b[m]
///
/// Applied to each of the three again, nine correlations of a quarter of the taps over a
/// quarter of the outputs: 9/16 of the multiplies and additions of the direct form. (Without
/// fused multiply-add, on the baseline x86-64 SwiftPM builds for, each multiply-add is three
/// instructions and two loads; loads and instructions are the bound.) The two levels are
/// fused: one pass splits the input into its four phases and the sums the nine need, one
/// pass puts the outputs back together; in between, the nine run across 32 outputs at once
/// in `SIMD4` accumulators.
///
/// It is still a finite filter: a NaN spoils only the outputs within `length` of it. The
/// caller's input has ``slack`` readable inputs past what the outputs need: the split
/// rounds its count up and reads that far (the extra sums feed outputs never written). The
/// outputs are written exactly. The input may be every other float of a line (the
/// half-band downsampler's odd frames): the split pass takes them out as it goes.
final class FastFIR {
    /// Inputs a caller leaves readable past its input (`count + length − 1` of them).
    static let slack = 64

    /// The taps, padded with zeros to a multiple of 4.
    let length: Int
    /// Taps per leaf: `length / 4`.
    private let quarter: Int
    /// The nine leaves' taps, each in four lanes: `quarter` each, in the order of `Leaf`.
    private let taps: UnsafeMutablePointer<SIMD4<Float>>
    /// The nine leaves' inputs, then their outputs, `span` floats each.
    private let work: UnsafeMutablePointer<Float>
    private let span: Int

    /// The nine correlations: `e`, `o`, `s` are the first level's (even taps over the even
    /// inputs, odd over odd, their sums over `v`); `a`, `b`, `c` the same split of each.
    private enum Leaf: Int, CaseIterable { case ea, eb, ec, oa, ob, oc, sa, sb, sc }

    /// - Parameters:
    ///   - taps: `h`.
    ///   - maximumCount: the most outputs one ``run(_:count:finish:)`` makes.
    init(taps h: [Float], maximumCount: Int) {
        var h = h.map(Double.init)
        while h.count % 4 != 0 { h.append(0) }
        length = h.count
        quarter = h.count / 4
        let q = quarter
        // Leaf taps from the phases of h: h[4b + r].
        func phase(_ r: Int) -> [Double] { (0..<q).map { h[4 * $0 + r] } }
        let (p0, p1, p2, p3) = (phase(0), phase(1), phase(2), phase(3))
        let add = { (x: [Double], y: [Double]) in zip(x, y).map(+) }
        let sets: [[Double]] = [p0, p2, add(p0, p2), p1, p3, add(p1, p3), add(p0, p1), add(p2, p3), add(add(p0, p1), add(p2, p3))]
        taps = .allocate(capacity: 9 * q)
        for (leaf, set) in sets.enumerated() {
            for (b, tap) in set.enumerated() { taps[leaf * q + b] = SIMD4(repeating: Float(tap)) }
        }
        // A leaf's last block of 32 reads up to 34 + q inputs and writes up to 31 outputs
        // past its count; the slack covers both.
        span = ((maximumCount + 3) / 4 + 2 + q + Self.slack + 3) / 4 * 4
        work = .allocate(capacity: 18 * span)
        work.initialize(repeating: 0, count: 18 * span)
    }

    deinit {
        taps.deallocate()
        work.deallocate()
    }

    private func input(_ leaf: Leaf) -> UnsafeMutablePointer<Float> { work + leaf.rawValue * span }
    private func output(_ leaf: Leaf) -> UnsafeMutablePointer<Float> { work + (9 + leaf.rawValue) * span }

    /// What becomes of `y` on its way out, in the last pass (a pass of its own would read
    /// and write every output once more). These write exactly `count` outputs, or `2 · count`
    /// frames: no slack is needed after them.
    enum Finish {
        /// `out[j] = y[j] + ½ · centre[2j]`: the half-band downsampler's centre tap, on
        /// the even frames of its line.
        case plusHalf(everyOther: UnsafePointer<Float>, into: UnsafeMutablePointer<Float>)
        /// `out[2j] = between[j]`, `out[2j + 1] = y[j]`: the upsampler's even and odd outputs.
        case after(UnsafePointer<Float>, into: UnsafeMutablePointer<Float>)
    }

    /// `y[j]` for `j < count`, from `u[0 ..< count + length − 1]`, finished as `finish` says.
    /// `u[i]` is `line[i]`, or `line[2i]` when `everyOther`.
    func run(_ line: UnsafePointer<Float>, everyOther: Bool = false, count: Int, finish: Finish) {
        let quads = (count + 3) / 4 + 1
        split(line, everyOther: everyOther, count: quads + quarter + 1)
        for leaf in Leaf.allCases {
            Self.correlate(taps + leaf.rawValue * quarter, length: quarter, input(leaf), count: quads, into: output(leaf))
        }
        combine(count: (count + 3) / 4)
        let y0 = UnsafeRawPointer(input(.ea)), y1 = UnsafeRawPointer(input(.eb)), y2 = UnsafeRawPointer(input(.ec)), y3 = UnsafeRawPointer(input(.oa))
        typealias V = SIMD4<Float>
        var tail = (V(), V(), V(), V())
        var q = 0
        while q < (count + 3) / 4 {
            let at = q &* 4
            let (r0, r1, r2, r3) = Self.transpose(y0.loadUnaligned(fromByteOffset: at, as: V.self), y1.loadUnaligned(fromByteOffset: at, as: V.self),
                                                  y2.loadUnaligned(fromByteOffset: at, as: V.self), y3.loadUnaligned(fromByteOffset: at, as: V.self))
            let first = q &* 4
            if first &+ 16 > count {
                tail = (r0, r1, r2, r3)
                break
            }
            switch finish {
            case .plusHalf(let centre, let out):
                let c = UnsafeRawPointer(centre + 2 &* first), o = UnsafeMutableRawPointer(out + first)
                typealias W = SIMD8<Float>
                o.storeBytes(of: r0 + 0.5 * c.loadUnaligned(as: W.self).evenHalf, as: V.self)
                o.storeBytes(of: r1 + 0.5 * c.loadUnaligned(fromByteOffset: 32, as: W.self).evenHalf, toByteOffset: 16, as: V.self)
                o.storeBytes(of: r2 + 0.5 * c.loadUnaligned(fromByteOffset: 64, as: W.self).evenHalf, toByteOffset: 32, as: V.self)
                o.storeBytes(of: r3 + 0.5 * c.loadUnaligned(fromByteOffset: 96, as: W.self).evenHalf, toByteOffset: 48, as: V.self)
            case .after(let between, let out):
                let b = UnsafeRawPointer(between + first), o = UnsafeMutableRawPointer(out + 2 &* first)
                Self.interleave(b.loadUnaligned(as: V.self), r0, into: o)
                Self.interleave(b.loadUnaligned(fromByteOffset: 16, as: V.self), r1, into: o + 32)
                Self.interleave(b.loadUnaligned(fromByteOffset: 32, as: V.self), r2, into: o + 64)
                Self.interleave(b.loadUnaligned(fromByteOffset: 48, as: V.self), r3, into: o + 96)
            }
            q &+= 4
        }
        // The last outputs, fewer than 16, one at a time.
        let first = q &* 4
        withUnsafeBytes(of: &tail) { raw in
            let rest = raw.bindMemory(to: Float.self)
            var j = first
            while j < count {
                let value = rest[j &- first]
                switch finish {
                case .plusHalf(let centre, let out): out[j] = value + 0.5 * centre[2 &* j]
                case .after(let between, let out):
                    out[2 &* j] = between[j]
                    out[2 &* j &+ 1] = value
                }
                j &+= 1
            }
        }
    }

    @inline(__always)
    private static func interleave(_ a: SIMD4<Float>, _ b: SIMD4<Float>, into out: UnsafeMutableRawPointer) {
        out.storeBytes(of: SIMD4(a[0], b[0], a[1], b[1]), as: SIMD4<Float>.self)
        out.storeBytes(of: SIMD4(a[2], b[2], a[3], b[3]), toByteOffset: 16, as: SIMD4<Float>.self)
    }

    /// The nine leaves' inputs for `s < count` (rounded up to 4), from the four phases
    /// `P_r[s] = u[4s + r]` and the next ones `P_r⁺[s] = u[4s + 4 + r]`.
    private func split(_ line: UnsafePointer<Float>, everyOther: Bool, count: Int) {
        let raw = UnsafeRawPointer(line)
        let ea = UnsafeMutableRawPointer(input(.ea)), eb = UnsafeMutableRawPointer(input(.eb)), ec = UnsafeMutableRawPointer(input(.ec))
        let oa = UnsafeMutableRawPointer(input(.oa)), ob = UnsafeMutableRawPointer(input(.ob)), oc = UnsafeMutableRawPointer(input(.oc))
        let sa = UnsafeMutableRawPointer(input(.sa)), sb = UnsafeMutableRawPointer(input(.sb)), sc = UnsafeMutableRawPointer(input(.sc))
        typealias V = SIMD4<Float>
        // The four phases first (the leaves' plain inputs), then their sums from what was
        // stored: the next phases `P_r⁺` are the same arrays one along, which a second
        // transpose in the same loop would have cost twice the shuffles.
        var s = 0
        let end = count &+ 4
        if everyOther {
            // u[4s + r] = line[8s + 2r]: lanes 0 and 2 of eight loads, gathered as the
            // transpose gathers (as many shuffles).
            typealias W = SIMD8<Float>
            while s < end {
                let at = s &* 32
                let a = raw.loadUnaligned(fromByteOffset: at, as: W.self), b = raw.loadUnaligned(fromByteOffset: at &+ 32, as: W.self)
                let c = raw.loadUnaligned(fromByteOffset: at &+ 64, as: W.self), d = raw.loadUnaligned(fromByteOffset: at &+ 96, as: W.self)
                // a = line[8s ..< 8s + 8] for the four s; its lanes 0, 2, 4, 6 are u[4s ..< 4s + 4].
                let ab0 = SIMD4(a[0], a[2], b[0], b[2]), ab1 = SIMD4(a[4], a[6], b[4], b[6])
                let cd0 = SIMD4(c[0], c[2], d[0], d[2]), cd1 = SIMD4(c[4], c[6], d[4], d[6])
                let to = s &* 4
                ea.storeBytes(of: SIMD4(ab0[0], ab0[2], cd0[0], cd0[2]), toByteOffset: to, as: V.self)
                oa.storeBytes(of: SIMD4(ab0[1], ab0[3], cd0[1], cd0[3]), toByteOffset: to, as: V.self)
                eb.storeBytes(of: SIMD4(ab1[0], ab1[2], cd1[0], cd1[2]), toByteOffset: to, as: V.self)
                ob.storeBytes(of: SIMD4(ab1[1], ab1[3], cd1[1], cd1[3]), toByteOffset: to, as: V.self)
                s &+= 4
            }
        } else {
            while s < end {
                let at = s &* 16
                let (p0, p1, p2, p3) = Self.transpose(raw.loadUnaligned(fromByteOffset: at, as: V.self), raw.loadUnaligned(fromByteOffset: at &+ 16, as: V.self),
                                                      raw.loadUnaligned(fromByteOffset: at &+ 32, as: V.self), raw.loadUnaligned(fromByteOffset: at &+ 48, as: V.self))
                let to = s &* 4
                ea.storeBytes(of: p0, toByteOffset: to, as: V.self)
                oa.storeBytes(of: p1, toByteOffset: to, as: V.self)
                eb.storeBytes(of: p2, toByteOffset: to, as: V.self)
                ob.storeBytes(of: p3, toByteOffset: to, as: V.self)
                s &+= 4
            }
        }
        s = 0
        while s < count {
            let to = s &* 4, next = to &+ 4
            let p1 = oa.loadUnaligned(fromByteOffset: to, as: V.self), p2 = eb.loadUnaligned(fromByteOffset: to, as: V.self)
            let p3 = ob.loadUnaligned(fromByteOffset: to, as: V.self)
            let n0 = ea.loadUnaligned(fromByteOffset: next, as: V.self), n1 = oa.loadUnaligned(fromByteOffset: next, as: V.self)
            let n2 = eb.loadUnaligned(fromByteOffset: next, as: V.self)
            let sbValue = p3 + n0
            ec.storeBytes(of: p2 + n0, toByteOffset: to, as: V.self)
            oc.storeBytes(of: p3 + n1, toByteOffset: to, as: V.self)
            sa.storeBytes(of: p1 + p2, toByteOffset: to, as: V.self)
            sb.storeBytes(of: sbValue, toByteOffset: to, as: V.self)
            sc.storeBytes(of: sbValue + (n1 + n2), toByteOffset: to, as: V.self)
            s &+= 4
        }
    }

    /// The four phases `y[4q + r]`, `q < count` (rounded up to 4), from the nine leaves'
    /// outputs into the (spent) inputs of the first four:
    /// each first-level correlation `X` is `X[2q] = Xa[q] + Xb[q]`, `X[2q + 1] = Xc[q] −
    /// Xa[q + 1] − Xb[q]`, and `y[2m] = E[m] + O[m]`, `y[2m + 1] = S[m] − E[m + 1] − O[m]`.
    private func combine(count: Int) {
        typealias V = SIMD4<Float>
        let ea = UnsafeRawPointer(output(.ea)), eb = UnsafeRawPointer(output(.eb)), ec = UnsafeRawPointer(output(.ec))
        let oa = UnsafeRawPointer(output(.oa)), ob = UnsafeRawPointer(output(.ob)), oc = UnsafeRawPointer(output(.oc))
        let sa = UnsafeRawPointer(output(.sa)), sb = UnsafeRawPointer(output(.sb)), sc = UnsafeRawPointer(output(.sc))
        let y0 = UnsafeMutableRawPointer(input(.ea)), y1 = UnsafeMutableRawPointer(input(.eb))
        let y2 = UnsafeMutableRawPointer(input(.ec)), y3 = UnsafeMutableRawPointer(input(.oa))
        var q = 0
        while q < count {
            let at = q &* 4, ahead = at &+ 4
            let eaNow = ea.loadUnaligned(fromByteOffset: at, as: V.self), eaNext = ea.loadUnaligned(fromByteOffset: ahead, as: V.self)
            let ebNow = eb.loadUnaligned(fromByteOffset: at, as: V.self), ebNext = eb.loadUnaligned(fromByteOffset: ahead, as: V.self)
            let oaNow = oa.loadUnaligned(fromByteOffset: at, as: V.self), oaNext = oa.loadUnaligned(fromByteOffset: ahead, as: V.self)
            let obNow = ob.loadUnaligned(fromByteOffset: at, as: V.self)
            let saNow = sa.loadUnaligned(fromByteOffset: at, as: V.self), saNext = sa.loadUnaligned(fromByteOffset: ahead, as: V.self)
            let sbNow = sb.loadUnaligned(fromByteOffset: at, as: V.self)
            let e0 = eaNow + ebNow, e1 = ec.loadUnaligned(fromByteOffset: at, as: V.self) - eaNext - ebNow, e2 = eaNext + ebNext
            let o0 = oaNow + obNow, o1 = oc.loadUnaligned(fromByteOffset: at, as: V.self) - oaNext - obNow
            let s0 = saNow + sbNow, s1 = sc.loadUnaligned(fromByteOffset: at, as: V.self) - saNext - sbNow
            // The four phases of y go to the (spent) inputs first: transposed in the same
            // loop, the shuffles were spread through the arithmetic and ran out of registers.
            y0.storeBytes(of: e0 + o0, toByteOffset: at, as: V.self)
            y1.storeBytes(of: s0 - e1 - o0, toByteOffset: at, as: V.self)
            y2.storeBytes(of: e1 + o1, toByteOffset: at, as: V.self)
            y3.storeBytes(of: s1 - e2 - o1, toByteOffset: at, as: V.self)
            q &+= 4
        }
    }

    /// Rows to columns.
    @inline(__always)
    private static func transpose(_ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>, _ d: SIMD4<Float>)
        -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
        let ab0 = SIMD4(a[0], b[0], a[1], b[1]), ab1 = SIMD4(a[2], b[2], a[3], b[3])
        let cd0 = SIMD4(c[0], d[0], c[1], d[1]), cd1 = SIMD4(c[2], d[2], c[3], d[3])
        return (SIMD4(ab0[0], ab0[1], cd0[0], cd0[1]), SIMD4(ab0[2], ab0[3], cd0[2], cd0[3]),
                SIMD4(ab1[0], ab1[1], cd1[0], cd1[1]), SIMD4(ab1[2], ab1[3], cd1[2], cd1[3]))
    }

    /// One leaf, `count` outputs rounded up to 32 (the work arrays have the room), 32 at a
    /// time: each tap is loaded once for eight vectors of inputs, into eight accumulators.
    /// Loads are the bound here (two vector loads a cycle): sixteen outputs a tap took
    /// 1.25 loads a multiply, these 1.125, and eight chains of additions keep the adder busy.
    private static func correlate(_ splat: UnsafeMutablePointer<SIMD4<Float>>, length: Int, _ u: UnsafePointer<Float>, count: Int,
                                  into y: UnsafeMutablePointer<Float>) {
        typealias V = SIMD4<Float>
        let raw = UnsafeRawPointer(u)
        let out = UnsafeMutableRawPointer(y)
        let four = MemoryLayout<Float>.stride
        var j = 0
        while j < count {
            var s0 = V(), s1 = V(), s2 = V(), s3 = V(), s4 = V(), s5 = V(), s6 = V(), s7 = V()
            var at = j &* four
            var i = 0
            while i < length {
                let h = splat[i]
                s0 += h * raw.loadUnaligned(fromByteOffset: at, as: V.self)
                s1 += h * raw.loadUnaligned(fromByteOffset: at &+ 16, as: V.self)
                s2 += h * raw.loadUnaligned(fromByteOffset: at &+ 32, as: V.self)
                s3 += h * raw.loadUnaligned(fromByteOffset: at &+ 48, as: V.self)
                s4 += h * raw.loadUnaligned(fromByteOffset: at &+ 64, as: V.self)
                s5 += h * raw.loadUnaligned(fromByteOffset: at &+ 80, as: V.self)
                s6 += h * raw.loadUnaligned(fromByteOffset: at &+ 96, as: V.self)
                s7 += h * raw.loadUnaligned(fromByteOffset: at &+ 112, as: V.self)
                at &+= four
                i &+= 1
            }
            let to = j &* four
            out.storeBytes(of: s0, toByteOffset: to, as: V.self)
            out.storeBytes(of: s1, toByteOffset: to &+ 16, as: V.self)
            out.storeBytes(of: s2, toByteOffset: to &+ 32, as: V.self)
            out.storeBytes(of: s3, toByteOffset: to &+ 48, as: V.self)
            out.storeBytes(of: s4, toByteOffset: to &+ 64, as: V.self)
            out.storeBytes(of: s5, toByteOffset: to &+ 80, as: V.self)
            out.storeBytes(of: s6, toByteOffset: to &+ 96, as: V.self)
            out.storeBytes(of: s7, toByteOffset: to &+ 112, as: V.self)
            j &+= 32
        }
    }
}
