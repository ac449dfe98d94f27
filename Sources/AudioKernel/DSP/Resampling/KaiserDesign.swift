import FoundationEssentials
import Glibc

/// Kaiser's window-method formulas, shared by the resampler's filters: a low-pass of `attenuation`
/// dB in the stopband whose transition band is `transition` cycles per sample wide needs
/// about `(attenuation − 7.95) / (2.285 · 2π · transition)` taps, with the window's shape `beta`.
enum KaiserDesign {
    /// The window shape for a stopband `attenuation` dB down (above 50 dB).
    static func beta(attenuation: Double) -> Double { 0.1102 * (attenuation - 8.7) }

    /// The filter order (taps − 1) for `attenuation` dB across a transition band `transition`
    /// cycles per sample wide.
    static func order(attenuation: Double, transition: Double) -> Double {
        (attenuation - 7.95) / (2.285 * 2 * Double.pi * transition)
    }

    /// The window at `t` of a window reaching zero weight beyond `half` on either side.
    static func window(_ t: Double, half: Double, beta: Double) -> Double {
        let ratio = t / half
        return abs(ratio) > 1 ? 0 : bessel0(beta * max(0, 1 - ratio * ratio).squareRoot()) / bessel0(beta)
    }

    /// `sin(πx) / (πx)`.
    static func sinc(_ x: Double) -> Double { x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x) }

    /// The modified Bessel function of the first kind, order 0 (the Kaiser window's).
    static func bessel0(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0
        let quarter = x * x / 4
        var k = 1.0
        while term > sum * 1e-17 {
            term *= quarter / (k * k)
            sum += term
            k += 1
        }
        return sum
    }
}
