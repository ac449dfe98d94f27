/// What is wrong with an MPEG-4 audio file, or with writing one. The reader never traps and
/// never reads out of bounds: anything it cannot accept is one of these.
public enum MPEG4Error: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file ends inside a box header at `offset`.
    case truncatedBoxHeader(offset: Int)
    /// A box declares a size smaller than its own header, or one that runs past the box that
    /// holds it (or the file).
    case badBoxSize(type: String, offset: Int, size: Int, available: Int)
    /// A box the file needs is missing (`path` as `moov/trak/mdia`).
    case missingBox(String)
    /// A box's content is shorter than its fields, or inconsistent.
    case malformedBox(type: String, reason: String)
    /// Not an MPEG-4 file: no `ftyp` or `moov` where one is expected.
    case notMPEG4
    /// The file holds no audio track.
    case noAudioTrack
    /// The audio track's codec is not AAC (`alac`, `Opus`, `.mp3`, MP3 in `mp4a`, …).
    case unsupportedCodec(String)
    /// AAC of another object type than LC (HE-AAC's SBR and PS among them), named.
    case unsupportedAudioObjectType(Int, name: String)
    /// An AudioSpecificConfig this reader does not take (a sample rate index, a channel
    /// configuration given by a program config element, …).
    case unsupportedConfiguration(String)
    /// The sample table is inconsistent: counts that disagree, a sample outside the file,
    /// more samples than the file could hold.
    case badSampleTable(String)
    /// Too large to write: a frame, or the whole file for the boxes chosen.
    case tooLarge(String)
    /// A system call failed.
    case io(Errno, operation: String)

    public var description: String {
        switch self {
        case .truncatedBoxHeader(let offset): return "the file ends inside a box header at byte \(offset)"
        case .badBoxSize(let type, let offset, let size, let available):
            return "box '\(type)' at byte \(offset) declares \(size) bytes, \(available) available"
        case .missingBox(let path): return "no '\(path)' box"
        case .malformedBox(let type, let reason): return "malformed '\(type)' box: \(reason)"
        case .notMPEG4: return "not an MPEG-4 file"
        case .noAudioTrack: return "no audio track"
        case .unsupportedCodec(let codec): return "unsupported codec \(codec) (only AAC-LC is)"
        case .unsupportedAudioObjectType(let type, let name): return "unsupported AAC object type \(type) (\(name); only AAC-LC is)"
        case .unsupportedConfiguration(let reason): return "unsupported AAC configuration: \(reason)"
        case .badSampleTable(let reason): return "bad sample table: \(reason)"
        case .tooLarge(let what): return "too large: \(what)"
        case .io(let errno, let operation): return "\(operation): \(errno)"
        }
    }
}
