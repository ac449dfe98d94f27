import AudioKernel
import Foundation

/// WAV files of any PCM or float format for tests, written by hand here (the project's own
/// encoder writes PCM16 only): integer PCM with format tag 1 (8-bit unsigned), float with
/// tag 3, G.711 A-law and µ-law with tags 6 and 7, 24-bit in
/// 32-bit containers as WAVE_FORMAT_EXTENSIBLE with 24 valid bits, as sox and ffmpeg write them.
public enum WAVFixture {
    /// A file of `frames` frames whose sample at (frame, channel) is `value(frame, channel)`
    /// in [-1, 1].
    public static func file(_ format: WAVFormat, frames: Int, _ value: (Int, Int) -> Double) -> [UInt8] {
        var data = [UInt8]()
        data.reserveCapacity(frames * format.bytesPerFrame)
        func put<T: FixedWidthInteger>(_ v: T, bytes: Int) {
            for i in 0..<bytes { data.append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
        }
        for frame in 0..<frames {
            for channel in 0..<format.channels {
                let x = max(-1, min(1, value(frame, channel)))
                switch format.sampleFormat {
                case .s16: put(Int16(clamping: Int((x * 32_768).rounded())), bytes: 2)
                case .s24_3: put(Int32(clamping: Int((x * 8_388_608).rounded()).clamped(-8_388_608, 8_388_607)), bytes: 3)
                case .s24: put(Int32(clamping: Int((x * 8_388_608).rounded()).clamped(-8_388_608, 8_388_607)), bytes: 4)
                case .s32: put(Int32(clamping: Int((x * 2_147_483_648).rounded())), bytes: 4)
                case .float: put(Float(x).bitPattern, bytes: 4)
                case .u8: put(UInt8(Int((x * 128).rounded()).clamped(-128, 127) + 128), bytes: 1)
                case .alaw: put(G711.aLaw(Int16(clamping: Int((x * 32_768).rounded()))), bytes: 1)
                case .mulaw: put(G711.muLaw(Int16(clamping: Int((x * 32_768).rounded()))), bytes: 1)
                }
            }
        }
        return header(format, dataBytes: data.count) + data
    }

    /// The header for `dataBytes` of samples in `format`.
    public static func header(_ format: WAVFormat, dataBytes: Int, formatTag: Int? = nil, bitsPerSample: Int? = nil) -> [UInt8] {
        var out = [UInt8]()
        func u16(_ v: Int) { out += [UInt8(v & 0xFF), UInt8((v >> 8) & 0xFF)] }
        func u32(_ v: Int) { u16(v & 0xFFFF); u16((v >> 16) & 0xFFFF) }
        let extensible = format.sampleFormat == .s24 && formatTag == nil
        let fmtSize = extensible ? 40 : 16
        out += Array("RIFF".utf8); u32(4 + 8 + fmtSize + 8 + dataBytes); out += Array("WAVE".utf8)
        out += Array("fmt ".utf8); u32(fmtSize)
        let tags: [SampleFormat: Int] = [.float: 3, .alaw: 6, .mulaw: 7]
        u16(extensible ? 0xFFFE : formatTag ?? tags[format.sampleFormat] ?? 1)
        u16(format.channels)
        u32(format.sampleRate)
        u32(format.bytesPerSecond)
        u16(format.bytesPerFrame)
        u16(bitsPerSample ?? format.bitsPerSample)
        if extensible {
            u16(22)  // cbSize
            u16(24)  // valid bits
            u32(0)   // channel mask: unspecified
            u16(1)   // KSDATAFORMAT_SUBTYPE_PCM
            out += [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
        }
        out += Array("data".utf8); u32(dataBytes)
        return out
    }
}

extension Int {
    fileprivate func clamped(_ lower: Int, _ upper: Int) -> Int { Swift.min(Swift.max(self, lower), upper) }
}
