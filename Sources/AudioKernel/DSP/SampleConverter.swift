/// Conversions between PCM16 samples and Float32 samples.
///
/// Every function works on caller-owned buffers and allocates nothing, so it can run once per
/// audio period on a device thread.
///
/// The loops are plain loops over unsafe pointers with wrapping arithmetic: nothing in them
/// can trap, so LLVM's loop vectorizer turns them into packed SSE2 code on baseline x86-64
/// (`psrad`/`cvtdq2ps`/`mulps` here), as clang does for the same C loop. Swift's generic SIMD
/// conversions (`SIMD16<Float>(SIMD16<Int16>)`) are not inlined in Swift 6.3 and cost a call
/// per vector; the benchmark showed it (0.78× of C, now at par).
public enum SampleConverter {
    /// The scale of Int16 → Float32: full scale `Int16.min` maps to exactly -1.0.
    public static let int16ToFloatScale: Float = 1.0 / 32768.0

    /// The scale of Float32 → Int16, the inverse of ``int16ToFloatScale``: a PCM16 sample
    /// that goes to Float32 and back is unchanged (a reply at unit gain reaches an S16
    /// device bit for bit). +1.0 clips to 32767, as PulseAudio's and PipeWire's converters do.
    public static let floatToInt16Scale: Float = 32768.0

    /// Converts PCM16 samples to Float32 in [-1, 1) by multiplying with 1/32768.
    ///
    /// - Parameters:
    ///   - source: the samples to convert.
    ///   - destination: receives `source.count` floats; must be at least that long.
    @inlinable
    public static func int16ToFloat32(
        _ source: UnsafeBufferPointer<Int16>,
        into destination: UnsafeMutableBufferPointer<Float>
    ) {
        precondition(destination.count >= source.count, "destination is shorter than source")
        let count = source.count
        guard count > 0, let src = source.baseAddress, let dst = destination.baseAddress else { return }
        var i = 0
        while i < count {
            dst[i] = Float(src[i]) * int16ToFloatScale
            i &+= 1
        }
    }

    /// Converts Float32 samples to PCM16: scales by 32768, rounds to the nearest integer
    /// (ties to even, as the FPU does by default) and clips to [-32768, 32767].
    ///
    /// NaN becomes 0 and ±infinity clips to 32767 / -32768: a bad sample from a decoder or a filter
    /// must never trap on the audio thread.
    ///
    /// - Parameters:
    ///   - source: the samples to convert.
    ///   - destination: receives `source.count` samples; must be at least that long.
    @inlinable
    public static func float32ToInt16(
        _ source: UnsafeBufferPointer<Float>,
        into destination: UnsafeMutableBufferPointer<Int16>
    ) {
        precondition(destination.count >= source.count, "destination is shorter than source")
        let count = source.count
        guard count > 0, let src = source.baseAddress, let dst = destination.baseAddress else { return }
        var i = 0
        while i < count {
            dst[i] = roundToInt16(src[i] * floatToInt16Scale, lowerBound: -32768, upperBound: 32767)
            i &+= 1
        }
    }

    /// Adding 1.5·2²³ to a float of magnitude below 2²² leaves the integer nearest to it
    /// (ties to even) in the low mantissa bits. `Int16(x.rounded())` would trap on NaN and,
    /// on baseline x86-64 (no SSE4.1 `roundps`), would call `rintf` per sample.
    @usableFromInline static let roundingMagic: Float = 12_582_912.0
    @usableFromInline static let roundingMagicBits: Int32 = 0x4B40_0000

    /// Rounds `x` to the nearest integer (ties to even) after clipping it to the bounds,
    /// which must lie within the Int16 range; NaN gives 0.
    @inlinable @inline(__always)
    static func roundToInt16(_ x: Float, lowerBound: Float, upperBound: Float) -> Int16 {
        let finite = x == x ? x : 0
        let clipped = Swift.min(Swift.max(finite, lowerBound), upperBound)
        let shifted = clipped + roundingMagic
        return Int16(truncatingIfNeeded: Int32(bitPattern: shifted.bitPattern) &- roundingMagicBits)
    }
}

extension SampleConverter {
    /// Converts PCM16 to Float32 between arrays of equal length (a convenience over the
    /// pointer form for code that is not on an audio path).
    @inlinable
    public static func int16ToFloat32(_ source: [Int16], into destination: inout [Float]) {
        precondition(destination.count >= source.count, "destination is shorter than source")
        source.withUnsafeBufferPointer { s in
            destination.withUnsafeMutableBufferPointer { d in int16ToFloat32(s, into: d) }
        }
    }

    /// Converts Float32 to PCM16 between arrays (see the pointer form for the rules).
    @inlinable
    public static func float32ToInt16(_ source: [Float], into destination: inout [Int16]) {
        precondition(destination.count >= source.count, "destination is shorter than source")
        source.withUnsafeBufferPointer { s in
            destination.withUnsafeMutableBufferPointer { d in float32ToInt16(s, into: d) }
        }
    }
}
