/// Why a WAV file could not be read or written. Each case names what is wrong and where, so
/// that a log line is enough to understand a rejected upload or fixture.
public enum WAVError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer bytes than a RIFF/WAVE header (12 bytes) needs.
    case truncatedHeader(byteCount: Int)
    /// The file does not start with `RIFF` (or `RF64`, which is not supported).
    case notRIFF
    /// The RIFF form type is not `WAVE`.
    case notWAVE
    /// A chunk header at `offset` is cut off by the end of the file.
    case truncatedChunkHeader(offset: Int)
    /// A chunk declares more bytes than the file holds.
    case chunkPastEnd(id: String, offset: Int, declaredSize: Int, available: Int)
    /// The `fmt ` chunk is shorter than the 16 bytes of a PCM format.
    case formatChunkTooShort(size: Int)
    /// No `fmt ` chunk was found.
    case missingFormatChunk
    /// No `data` chunk was found.
    case missingDataChunk
    /// A `data` chunk appears before the `fmt ` chunk it depends on, with its size unknown.
    case dataBeforeFormat
    /// The encoding is neither integer PCM nor IEEE float (e.g. 2 = ADPCM, 6 = A-law, 0x55 =
    /// MP3, or an extensible sub-format other than those two).
    case unsupportedEncoding(formatTag: Int)
    /// PCM of a depth other than 16, 24 or 32 bits, or float of other than 32 (8-bit
    /// unsigned, 64-bit float).
    case unsupportedBitDepth(Int)
    /// The format declares zero channels.
    case zeroChannels
    /// The format declares more channels than ``WAVDecoder/maxChannels``.
    case tooManyChannels(Int)
    /// The format declares a sample rate of zero.
    case zeroSampleRate
    /// `blockAlign` does not equal channels × bytes per sample.
    case inconsistentBlockAlign(declared: Int, expected: Int)
    /// A size does not fit the 32-bit fields of a WAV header (over 4 GiB).
    case tooLarge(byteCount: Int)
    /// A file-system operation failed (errno value and what was being done).
    case io(Errno, operation: String)

    public var description: String {
        switch self {
        case .truncatedHeader(let n): return "truncated WAV header: \(n) bytes, need at least 12"
        case .notRIFF: return "not a RIFF file (no 'RIFF' magic)"
        case .notWAVE: return "RIFF file is not of form 'WAVE'"
        case .truncatedChunkHeader(let o): return "chunk header at byte \(o) is cut off by the end of the file"
        case .chunkPastEnd(let id, let o, let size, let available):
            return "chunk '\(id)' at byte \(o) declares \(size) bytes but only \(available) follow"
        case .formatChunkTooShort(let n): return "'fmt ' chunk is \(n) bytes, need at least 16"
        case .missingFormatChunk: return "no 'fmt ' chunk"
        case .missingDataChunk: return "no 'data' chunk"
        case .dataBeforeFormat: return "'data' chunk of unknown size comes before the 'fmt ' chunk"
        case .unsupportedEncoding(let tag): return "unsupported encoding (format tag \(tag)); integer PCM, IEEE float and G.711 A-law and µ-law are supported, other compressed encodings are not"
        case .unsupportedBitDepth(let bits): return "unsupported bit depth \(bits); 16, 24 and 32-bit integer and 32-bit float PCM are supported"
        case .zeroChannels: return "format declares zero channels"
        case .tooManyChannels(let n): return "format declares \(n) channels, at most \(WAVDecoder.maxChannels) are supported"
        case .zeroSampleRate: return "format declares a sample rate of 0"
        case .inconsistentBlockAlign(let declared, let expected):
            return "block align is \(declared), expected \(expected) for the declared channels and sample size"
        case .tooLarge(let n): return "\(n) bytes do not fit a WAV file's 32-bit sizes"
        case .io(let e, let op): return "\(op) failed: \(e)"
        }
    }
}
