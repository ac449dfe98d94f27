import FoundationEssentials
import Glibc

/// Sums two Float32 signals with headroom: where the sum stays within ±`threshold` it is
/// exact; above, a tanh knee bends it smoothly toward ±1 (continuous in value and slope at
/// the threshold), so a clip mixed over a loud reply saturates gently instead of clipping
/// hard, and never wraps around.
public enum SoftLimiter {
    /// Where the knee begins: -3 dBFS.
    public static let threshold: Float = 0.707

    /// `destination[i] += addend[i]`, then limited.
    public static func mix(_ addend: UnsafeBufferPointer<Float>, into destination: UnsafeMutableBufferPointer<Float>) {
        let count = min(addend.count, destination.count)
        var i = 0
        while i < count {
            destination[i] = limit(destination[i] + addend[i])
            i &+= 1
        }
    }

    /// One sample through the knee.
    @inline(__always)
    public static func limit(_ x: Float) -> Float {
        guard x == x else { return 0 }  // NaN: silence, never a poisoned filter downstream
        let magnitude = abs(x)
        guard magnitude > threshold else { return x }
        guard magnitude.isFinite else { return x > 0 ? 1 : -1 }
        let room = 1 - threshold
        let bent = threshold + room * Float(tanh(Double((magnitude - threshold) / room)))
        return x < 0 ? -bent : bent
    }
}
