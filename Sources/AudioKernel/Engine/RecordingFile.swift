import Glibc

/// How a recorded turn is saved: as the WAV the recorder made, or encoded as AAC-LC in an
/// MPEG-4 file (what Chatterbox's backend takes and its apps play).
public enum RecordingFileFormat: Hashable, Sendable {
    case wav
    case aac(bitRate: Int)

    /// The recorder's 24 kHz mono speech at 48 kbit/s.
    public static let defaultAAC = RecordingFileFormat.aac(bitRate: 48_000)

    public var fileExtension: String {
        switch self {
        case .wav: return "wav"
        case .aac: return "m4a"
        }
    }

    /// The media type an upload names.
    public var contentType: String {
        switch self {
        case .wav: return "audio/wav"
        case .aac: return "audio/mp4"
        }
    }
}

/// Why a turn could not be saved.
public enum RecordingFileError: Error, Equatable, Sendable, CustomStringConvertible {
    case io(Errno, operation: String)
    case encoding(String)

    public var description: String {
        switch self {
        case .io(let errno, let operation): return "\(operation): \(errno)"
        case .encoding(let reason): return reason
        }
    }
}

extension RecordedTurn {
    /// The turn's samples, PCM16, without the WAV header.
    public var samples: [Int16] {
        wav.withUnsafeBytes { raw in
            let count = (raw.count - WAVEncoder.headerSize) / 2
            return (0..<count).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: WAVEncoder.headerSize + 2 * $0, as: Int16.self)) }
        }
    }

    /// Writes the turn to `path` in `format`. Nothing half-written ever sits at `path`: the
    /// WAV goes to `PATH.partial` and is renamed; the MPEG-4 file is assembled beside it by
    /// ``AACFileWriter``. With `sync` the file is on stable storage when this returns.
    public func save(to path: String, as format: RecordingFileFormat, sync: Bool = true) throws(RecordingFileError) {
        switch format {
        case .wav:
            if let (errno, operation) = wav.withUnsafeBytes({ SystemCall.writeFileAtomically($0, to: path, sync: sync) }) {
                throw .io(errno, operation: operation)
            }
        case .aac(let bitRate):
            let samples = self.samples
            do throws(MPEG4Error) {
                let writer = try AACFileWriter(path: path, sampleRate: self.format.sampleRate, channels: self.format.channels, bitRate: bitRate)
                do throws(MPEG4Error) {
                    try samples.withUnsafeBufferPointer { (buffer) throws(MPEG4Error) in
                        if let base = buffer.baseAddress { try writer.write(base, frames: buffer.count / self.format.channels) }
                    }
                    try writer.finish(sync: sync)
                } catch {
                    writer.cancel()
                    throw error
                }
            } catch {
                if case .io(let errno, let operation) = error { throw .io(errno, operation: operation) }
                throw .encoding("\(path): \(error)")
            }
        }
    }
}
