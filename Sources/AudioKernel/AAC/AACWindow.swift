import Glibc

/// AAC's window shapes (ISO/IEC 14496-3, 4.6.11.3.2): the sine window and the
/// Kaiser-Bessel-derived one (α = 4 long, 6 short), each as its rising half; the falling half
/// is the rising half read backwards.
enum AACWindow {
    /// Rising halves indexed by window_shape (0 sine, 1 KBD): 1024 samples long, 128 short.
    static let long: [[Float]] = [sine(half: 1024), kaiserBesselDerived(half: 1024, alpha: 4)]
    static let short: [[Float]] = [sine(half: 128), kaiserBesselDerived(half: 128, alpha: 6)]

    static func sine(half: Int) -> [Float] {
        let n = Double(2 * half)
        return (0..<half).map { (i: Int) -> Float in Float(sin(Double.pi / n * (Double(i) + 0.5))) }
    }

    /// W(n) = sqrt(Σ_{p≤n} W'(p) / Σ_{p≤N/2} W'(p)), W' the Kaiser window of N/2 + 1 points.
    static func kaiserBesselDerived(half: Int, alpha: Double) -> [Float] {
        let quarter = Double(half) / 2
        let kaiser = (0...half).map { p -> Double in
            let r = (Double(p) - quarter) / quarter
            return besselI0(Double.pi * alpha * (max(0, 1 - r * r)).squareRoot())
        }
        let total = kaiser.reduce(0, +)
        var running = 0.0
        return (0..<half).map { n in
            running += kaiser[n]
            return Float((running / total).squareRoot())
        }
    }

    /// The modified Bessel function of the first kind, order 0, by its power series.
    static func besselI0(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0
        let q = x * x / 4
        for k in 1..<60 {
            term *= q / Double(k * k)
            sum += term
            if term < sum * 1e-17 { break }
        }
        return sum
    }
}
