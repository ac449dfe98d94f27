#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real DFT of Whisper's 400-sample frames, in double precision as the reference
/// (numpy's `rfft` on float64) computes it: the 400 real samples as 200 complex ones, a
/// 200-point complex DFT split 8 × 25 (Cooley–Tukey: 25 DFTs of 8, twiddles, 8 DFTs of 25,
/// each by a tabulated matrix), and the split that recovers the real signal's 201 bins.
/// About 6,600 complex multiply-adds a frame instead of the 80,000 of the direct sum.
final class MixedRadixDFT {
    static let length = 400
    private static let half = 200, n1 = 8, n2 = 25

    private let dft8: [Double]  // [k][n] re, im interleaved
    private let dft25: [Double]
    private let twiddle: [Double]  // [n2][k1]: W_200^(n2 k1)
    private let split: [Double]  // W_400^k for k in 0...200
    private var stage: [Double]  // 200 complex
    private var output: [Double]

    init() {
        func table(_ n: Int) -> [Double] {
            var t = [Double](repeating: 0, count: 2 * n * n)
            for k in 0..<n {
                for j in 0..<n {
                    let angle = -2 * Double.pi * Double((k * j) % n) / Double(n)
                    t[2 * (k * n + j)] = cos(angle)
                    t[2 * (k * n + j) + 1] = sin(angle)
                }
            }
            return t
        }
        dft8 = table(Self.n1)
        dft25 = table(Self.n2)
        var twiddle = [Double](repeating: 0, count: 2 * Self.n2 * Self.n1)
        for b in 0..<Self.n2 {
            for k in 0..<Self.n1 {
                let angle = -2 * Double.pi * Double(b * k) / Double(Self.half)
                twiddle[2 * (b * Self.n1 + k)] = cos(angle)
                twiddle[2 * (b * Self.n1 + k) + 1] = sin(angle)
            }
        }
        self.twiddle = twiddle
        var split = [Double](repeating: 0, count: 2 * (Self.half + 1))
        for k in 0...Self.half {
            let angle = -2 * Double.pi * Double(k) / Double(Self.length)
            split[2 * k] = cos(angle)
            split[2 * k + 1] = sin(angle)
        }
        self.split = split
        stage = [Double](repeating: 0, count: 2 * Self.half)
        output = [Double](repeating: 0, count: 2 * Self.half)
    }

    /// `power[k] = |X[k]|²` for k in 0...200 of the 400 samples at `x`.
    func powerSpectrum(_ x: UnsafePointer<Double>, into power: UnsafeMutablePointer<Double>) {
        let n1 = Self.n1, n2 = Self.n2
        // z[n] = x[2n] + i·x[2n+1]; n = n2_count·a + b with a < 8, b < 25.
        stage.withUnsafeMutableBufferPointer { stage in
            dft8.withUnsafeBufferPointer { dft8 in
                twiddle.withUnsafeBufferPointer { twiddle in
                    for b in 0..<n2 {
                        for k in 0..<n1 {
                            var re = 0.0, im = 0.0
                            for a in 0..<n1 {
                                let n = n2 * a + b
                                let zr = x[2 * n], zi = x[2 * n + 1]
                                let wr = dft8[2 * (k * n1 + a)], wi = dft8[2 * (k * n1 + a) + 1]
                                re += zr * wr - zi * wi
                                im += zr * wi + zi * wr
                            }
                            let tr = twiddle[2 * (b * n1 + k)], ti = twiddle[2 * (b * n1 + k) + 1]
                            stage[2 * (b * n1 + k)] = re * tr - im * ti
                            stage[2 * (b * n1 + k) + 1] = re * ti + im * tr
                        }
                    }
                }
            }
        }
        // Z[k1 + 8·k2] = Σ_b stage[b][k1] · W_25^(b k2).
        output.withUnsafeMutableBufferPointer { out in
            stage.withUnsafeBufferPointer { stage in
                dft25.withUnsafeBufferPointer { dft25 in
                    for k1 in 0..<n1 {
                        for k2 in 0..<n2 {
                            var re = 0.0, im = 0.0
                            for b in 0..<n2 {
                                let sr = stage[2 * (b * n1 + k1)], si = stage[2 * (b * n1 + k1) + 1]
                                let wr = dft25[2 * (k2 * n2 + b)], wi = dft25[2 * (k2 * n2 + b) + 1]
                                re += sr * wr - si * wi
                                im += sr * wi + si * wr
                            }
                            out[2 * (k1 + n1 * k2)] = re
                            out[2 * (k1 + n1 * k2) + 1] = im
                        }
                    }
                }
            }
        }
        // X[k] = (Z[k] + conj Z[200-k]) / 2 + W_400^k (Z[k] − conj Z[200-k]) / 2i.
        output.withUnsafeBufferPointer { z in
            split.withUnsafeBufferPointer { w in
                for k in 0...Self.half {
                    let a = k % Self.half, b = (Self.half - k) % Self.half
                    let zr = z[2 * a], zi = z[2 * a + 1], cr = z[2 * b], ci = -z[2 * b + 1]
                    let er = (zr + cr) / 2, ei = (zi + ci) / 2
                    let dr = (zr - cr) / 2, di = (zi - ci) / 2
                    // (d / i) = (di, -dr)
                    let or_ = di, oi = -dr
                    let wr = w[2 * k], wi = w[2 * k + 1]
                    let xr = er + wr * or_ - wi * oi
                    let xi = ei + wr * oi + wi * or_
                    power[k] = xr * xr + xi * xi
                }
            }
        }
    }
}
