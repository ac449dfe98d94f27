#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The level of a block of PCM16 samples: the exact sum of squares and the peak magnitude,
/// from which RMS and dBFS follow.
///
/// The sum is kept in integers, so RMS is exact however long the block (a Float or Double
/// accumulator drifts on long turns), and levels of consecutive blocks can be merged.
public struct SignalLevel: Equatable, Sendable {
    /// The number of samples measured.
    public var sampleCount: Int
    /// The sum of the squared samples. At most 2³⁰ per sample, so it cannot overflow for
    /// fewer than 2³³ samples (about 4 days of 24 kHz audio).
    public var sumOfSquares: UInt64
    /// The largest magnitude of any sample, 0 through 32768.
    public var peak: Int

    /// The level of silence of no length.
    public static let zero = SignalLevel(sampleCount: 0, sumOfSquares: 0, peak: 0)

    /// The lowest level reported in dBFS: digital silence would be -∞, which JSON cannot hold.
    public static let floorDBFS: Double = -120

    /// The full-scale reference of PCM16: a square wave at `Int16.min` is 0 dBFS.
    public static let fullScale: Double = 32768

    public init(sampleCount: Int, sumOfSquares: UInt64, peak: Int) {
        self.sampleCount = sampleCount
        self.sumOfSquares = sumOfSquares
        self.peak = peak
    }

    /// Measures `samples` in one pass.
    @inlinable
    public init(measuring samples: UnsafeBufferPointer<Int16>) {
        let (sum, peak) = Self.sumOfSquaresAndPeak(samples)
        self.init(sampleCount: samples.count, sumOfSquares: sum, peak: peak)
    }

    /// Measures `samples` in one pass.
    @inlinable
    public init(measuring samples: [Int16]) {
        self = samples.withUnsafeBufferPointer { SignalLevel(measuring: $0) }
    }

    /// The root mean square of the samples, in PCM16 units (0 for no samples).
    @inlinable
    public var rms: Double {
        sampleCount == 0 ? 0 : (Double(sumOfSquares) / Double(sampleCount)).squareRoot()
    }

    /// The RMS in dBFS, clamped at ``floorDBFS``.
    @inlinable
    public var rmsDBFS: Double { Self.dBFS(rms) }

    /// The peak in dBFS, clamped at ``floorDBFS``.
    @inlinable
    public var peakDBFS: Double { Self.dBFS(Double(peak)) }

    /// Converts a PCM16 magnitude to dBFS, clamped at ``floorDBFS``.
    @inlinable
    public static func dBFS(_ magnitude: Double) -> Double {
        guard magnitude > 0 else { return floorDBFS }
        return max(floorDBFS, 20 * log10(magnitude / fullScale))
    }

    /// Adds the level of the samples that followed this block.
    @inlinable
    public mutating func merge(_ other: SignalLevel) {
        sampleCount += other.sampleCount
        sumOfSquares += other.sumOfSquares
        peak = max(peak, other.peak)
    }
}

// MARK: - Kernels

// Plain loops with wrapping arithmetic: LLVM vectorizes them to `pmaddwd` (two squares added
// per 32-bit lane), zero-extension into 64-bit accumulators, and `pmaxsw`/`pminsw`, as clang
// does for the C reference. See SampleConverter for why not explicit SIMD types.
extension SignalLevel {
    /// The exact sum of the squares of `samples`.
    ///
    /// Each square is at most 2³⁰ and fits an Int32 product without overflow; sums are kept
    /// in UInt64.
    @inlinable
    public static func sumOfSquares(_ samples: UnsafeBufferPointer<Int16>) -> UInt64 {
        let count = samples.count
        guard count > 0, let base = samples.baseAddress else { return 0 }
        var total: UInt64 = 0
        var i = 0
        while i < count {
            let s = Int32(base[i])
            total &+= UInt64(UInt32(bitPattern: s &* s))
            i &+= 1
        }
        return total
    }

    /// The largest magnitude in `samples` (0 through 32768).
    @inlinable
    public static func peakMagnitude(_ samples: UnsafeBufferPointer<Int16>) -> Int {
        let count = samples.count
        guard count > 0, let base = samples.baseAddress else { return 0 }
        // The maximum and the minimum separately: |Int16.min| does not fit an Int16.
        var hi: Int16 = 0
        var lo: Int16 = 0
        var i = 0
        while i < count {
            let v = base[i]
            hi = Swift.max(hi, v)
            lo = Swift.min(lo, v)
            i &+= 1
        }
        return Swift.max(Int(hi), -Int(lo))
    }

    /// The sum of squares and the peak magnitude in one pass over memory.
    @inlinable
    public static func sumOfSquaresAndPeak(
        _ samples: UnsafeBufferPointer<Int16>
    ) -> (sumOfSquares: UInt64, peak: Int) {
        let count = samples.count
        guard count > 0, let base = samples.baseAddress else { return (0, 0) }
        var total: UInt64 = 0
        var hi: Int16 = 0
        var lo: Int16 = 0
        var i = 0
        while i < count {
            let v = base[i]
            let s = Int32(v)
            total &+= UInt64(UInt32(bitPattern: s &* s))
            hi = Swift.max(hi, v)
            lo = Swift.min(lo, v)
            i &+= 1
        }
        return (total, Swift.max(Int(hi), -Int(lo)))
    }
}

extension SignalLevel {
    /// The root mean square of `samples` in PCM16 units (0 for no samples).
    @inlinable
    public static func rms(_ samples: UnsafeBufferPointer<Int16>) -> Double {
        guard !samples.isEmpty else { return 0 }
        return (Double(sumOfSquares(samples)) / Double(samples.count)).squareRoot()
    }
}
