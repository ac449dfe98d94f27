/// Conversions between Float32 samples and the sample formats devices run (``SampleFormat``).
///
/// One scale each way, as PulseAudio's and PipeWire's converters use: an integer `n` of `b`
/// bits is `n / 2^(b-1)` as a float, and a float `x` is `x · 2^(b-1)` rounded and clipped to
/// the integer range. So an integer that goes to float and back is unchanged: a PCM16 reply
/// played at unit gain on an S16 device reaches it bit for bit.
///
/// Float → integer clips (never wraps) and maps NaN to 0. To 16 bits, a sample that is not
/// already a whole number of LSBs gets triangular (TPDF) dither of ±1 LSB before rounding,
/// which turns the rounding error of a gain, a fade or a resampler into a steady noise
/// floor 98 dB down instead of distortion that follows the signal. Samples that are exact
/// (digital silence, untouched PCM16) are not dithered: silence stays silence, and the
/// random sequence advances only on the samples that use it, so the same input gives the
/// same output wherever it starts.
///
/// Every function works on caller-owned memory and allocates nothing.
public enum SampleCodec {
    // MARK: Device bytes → Float32

    /// Decodes `frames × channels` samples of `format` from `source` into `destination`.
    public static func decode(_ source: UnsafeRawPointer, format: SampleFormat, count: Int, into destination: UnsafeMutablePointer<Float>) {
        var i = 0
        switch format {
        case .s16:
            let scale: Float = 1.0 / 32_768
            while i < count {
                destination[i] = Float(Int16(littleEndian: source.loadUnaligned(fromByteOffset: i &* 2, as: Int16.self))) * scale
                i &+= 1
            }
        case .s24_3:
            let scale: Float = 1.0 / 8_388_608
            let bytes = source.assumingMemoryBound(to: UInt8.self)
            while i < count {
                let b = i &* 3
                // The three bytes in the top of an Int32, then an arithmetic shift extends the sign.
                let word = Int32(bitPattern: UInt32(bytes[b]) << 8 | UInt32(bytes[b &+ 1]) << 16 | UInt32(bytes[b &+ 2]) << 24)
                destination[i] = Float(word >> 8) * scale
                i &+= 1
            }
        case .s24:
            let scale: Float = 1.0 / 8_388_608
            while i < count {
                // The low 24 bits carry the sample; the top byte is padding (sign-extend it away).
                let word = Int32(littleEndian: source.loadUnaligned(fromByteOffset: i &* 4, as: Int32.self))
                destination[i] = Float((word << 8) >> 8) * scale
                i &+= 1
            }
        case .s32:
            let scale: Float = 1.0 / 2_147_483_648
            while i < count {
                destination[i] = Float(Int32(littleEndian: source.loadUnaligned(fromByteOffset: i &* 4, as: Int32.self))) * scale
                i &+= 1
            }
        case .float:
            while i < count {
                let bits = UInt32(littleEndian: source.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self))
                let x = Float(bitPattern: bits)
                destination[i] = x == x ? x : 0
                i &+= 1
            }
        case .u8:
            // Unsigned, silence at 128: sox's and every player's reading, n / 2^7 around it.
            let bytes = source.assumingMemoryBound(to: UInt8.self)
            let scale: Float = 1.0 / 128
            while i < count {
                destination[i] = (Float(bytes[i]) - 128) * scale
                i &+= 1
            }
        case .alaw, .mulaw:
            // G.711 expands to 16-bit linear values exactly (ITU-T G.711's tables, as sox
            // reads them); those then scale as PCM16 does.
            let bytes = source.assumingMemoryBound(to: UInt8.self)
            let scale: Float = 1.0 / 32_768
            let table = format == .alaw ? G711.aLawToLinear : G711.muLawToLinear
            table.withUnsafeBufferPointer { linear in
                while i < count {
                    destination[i] = Float(linear[Int(bytes[i])]) * scale
                    i &+= 1
                }
            }
        }
    }

    // MARK: Float32 → device bytes

    /// Encodes `count` samples from `source` as `format` into `destination`, clipping, and
    /// dithering to 16 bits with `dither`.
    public static func encode(_ source: UnsafePointer<Float>, count: Int, as format: SampleFormat, into destination: UnsafeMutableRawPointer, dither: inout TPDFDither) {
        var i = 0
        switch format {
        case .s16:
            let out = destination.assumingMemoryBound(to: Int16.self)
            while i < count {
                let rounded = ditheredWhole(source[i] * 32_768, &dither)
                out[i] = Int16(littleEndian: Int16(Swift.min(Swift.max(rounded, -32_768), 32_767)))
                i &+= 1
            }
        case .s24_3:
            let out = destination.assumingMemoryBound(to: UInt8.self)
            while i < count {
                let n = scaledInteger(source[i], scale: 8_388_608, lower: -8_388_608, upper: 8_388_607)
                let b = i &* 3
                out[b] = UInt8(truncatingIfNeeded: n)
                out[b &+ 1] = UInt8(truncatingIfNeeded: n >> 8)
                out[b &+ 2] = UInt8(truncatingIfNeeded: n >> 16)
                i &+= 1
            }
        case .s24:
            let out = destination.assumingMemoryBound(to: Int32.self)
            while i < count {
                out[i] = Int32(littleEndian: scaledInteger(source[i], scale: 8_388_608, lower: -8_388_608, upper: 8_388_607))
                i &+= 1
            }
        case .s32:
            let out = destination.assumingMemoryBound(to: Int32.self)
            while i < count {
                // 2^31 - 128 is the largest float below 2^31: the clip cannot overflow Int32.
                out[i] = Int32(littleEndian: scaledInteger(source[i], scale: 2_147_483_648, lower: -2_147_483_648, upper: 2_147_483_520))
                i &+= 1
            }
        case .float:
            let out = destination.assumingMemoryBound(to: UInt32.self)
            while i < count {
                let x = source[i]
                let clipped = x == x ? Swift.min(Swift.max(x, -1), 1) : 0
                out[i] = clipped.bitPattern.littleEndian
                i &+= 1
            }
        case .u8:
            // Dithered as 16 bits are, at 8 bits' LSB (its rounding error is far louder).
            let out = destination.assumingMemoryBound(to: UInt8.self)
            while i < count {
                let rounded = ditheredWhole(source[i] * 128, &dither)
                out[i] = UInt8(Int(Swift.min(Swift.max(rounded, -128), 127)) + 128)
                i &+= 1
            }
        case .alaw, .mulaw:
            // To 16 bits as for s16 (dithered), then companded.
            let out = destination.assumingMemoryBound(to: UInt8.self)
            let aLaw = format == .alaw
            while i < count {
                let rounded = ditheredWhole(source[i] * 32_768, &dither)
                let linear = Int16(Swift.min(Swift.max(rounded, -32_768), 32_767))
                out[i] = aLaw ? G711.aLaw(linear) : G711.muLaw(linear)
                i &+= 1
            }
        }
    }

    /// `v` (in LSBs of the target) rounded to a whole LSB, with TPDF dither when it is not
    /// one already; NaN gives 0. Not yet clipped.
    @inline(__always)
    static func ditheredWhole(_ v: Float, _ dither: inout TPDFDither) -> Float {
        let finite = v == v ? v : 0
        let rounded = roundToWhole(finite)
        return rounded == finite ? rounded : roundToWhole(finite + dither.next())
    }

    /// Adding then subtracting 1.5·2²³ rounds a float of magnitude below 2²² to the nearest
    /// whole number (ties to even) without a call to `rintf` on baseline x86-64.
    @inline(__always)
    static func roundToWhole(_ x: Float) -> Float {
        let clipped = Swift.min(Swift.max(x, -4_194_304), 4_194_304)
        return (clipped + 12_582_912) - 12_582_912
    }

    /// `x · scale`, clipped to the bounds, rounded half away from zero; NaN gives 0.
    @inline(__always)
    static func scaledInteger(_ x: Float, scale: Float, lower: Float, upper: Float) -> Int32 {
        let v = x * scale
        let finite = v == v ? v : 0
        let clipped = Swift.min(Swift.max(finite, lower), upper)
        // Above 2^23 a float has no fraction left, so the half added cannot carry past the bound.
        let biased = clipped < 0 ? clipped - 0.5 : clipped + 0.5
        return Int32(Swift.min(Swift.max(biased, lower), upper))
    }
}

/// Triangular-PDF dither of ±1 LSB: the difference of two uniform values from a xorshift32
/// generator. Deterministic from its seed, so a test can reproduce a device's output.
public struct TPDFDither: Sendable {
    private var state: UInt32

    public init(seed: UInt32 = 0x9E37_79B9) {
        state = seed == 0 ? 1 : seed
    }

    @inline(__always)
    mutating func uniform() -> Float {
        state ^= state << 13
        state ^= state >> 17
        state ^= state << 5
        // The top 24 bits as a fraction of 2^24: [0, 1).
        return Float(state >> 8) * (1.0 / 16_777_216)
    }

    /// The next dither value, in LSBs, in (-1, 1).
    @inline(__always)
    public mutating func next() -> Float { uniform() - uniform() }
}
