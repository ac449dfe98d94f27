/// Decodes an MPEG-4 audio file's AAC-LC track to PCM16 as a stream: ``MPEG4AudioFile``
/// reads one frame at a time, ``AACDecoder`` decodes it, and the edit list is applied (the
/// encoder's priming dropped, the padding after the last presented sample too), so that the
/// output is exactly the presented duration. Memory: the sample table and one frame.
public final class MPEG4AudioDecoder {
    public let file: MPEG4AudioFile
    public var sampleRate: Int { file.track.config.sampleRate }
    public var channels: Int { file.track.config.channels }
    /// Frames (samples per channel) the file presents.
    public let frameCount: Int
    /// The AAC tools the frames decoded so far used.
    public var toolsSeen: AACDecoder.Tools { decoder.toolsSeen }

    private let decoder: AACDecoder
    private var nextFrame = 0
    private var skip: Int
    private var left: Int
    private var frameBytes: [UInt8] = []
    private var decoded: [Int16]
    private var decodedStart = 0
    private var decodedEnd = 0

    public convenience init(path: String) throws(MPEG4Error) {
        try self.init(file: try MPEG4AudioFile(path: path))
    }

    public init(file: MPEG4AudioFile) throws(MPEG4Error) {
        self.file = file
        let track = file.track
        do {
            decoder = try AACDecoder(config: track.config)
        } catch {
            throw .unsupportedConfiguration(error.description)
        }
        // The edit list is in the media's timescale; the decoder counts samples.
        let scale = Double(track.config.sampleRate) / Double(max(track.timescale, 1))
        skip = Int((Double(track.presentationStart) * scale).rounded())
        frameCount = Int((Double(track.presentationLength) * scale).rounded())
        left = frameCount
        decoded = [Int16](repeating: 0, count: AACDecoder.frameLength * track.config.channels)
    }

    /// Reads up to `frames` frames of interleaved PCM16 into `output`; 0 at the end. A frame
    /// that does not decode is an error naming it; the stream can go on after it.
    public func read(into output: UnsafeMutablePointer<Int16>, frames: Int) throws(MPEG4Error) -> Int {
        var written = 0
        let n = channels
        while written < frames && left > 0 {
            if decodedStart == decodedEnd {
                guard nextFrame < file.track.frames.count else { break }
                try file.readFrame(nextFrame, into: &frameBytes)
                let index = nextFrame
                nextFrame += 1
                let failure: AACError? = frameBytes.withUnsafeBytes { bytes in
                    decoded.withUnsafeMutableBufferPointer { out -> AACError? in
                        do throws(AACError) {
                            try decoder.decode(bytes, into: out.baseAddress!)
                            return nil
                        } catch {
                            return error
                        }
                    }
                }
                if let failure { throw .malformedBox(type: "mdat", reason: "frame \(index): \(failure)") }
                decodedStart = min(skip, AACDecoder.frameLength)
                skip -= decodedStart
                decodedEnd = AACDecoder.frameLength
                continue
            }
            let count = min(frames - written, decodedEnd - decodedStart, left)
            decoded.withUnsafeBufferPointer { source in
                (output + written * n).update(from: source.baseAddress! + decodedStart * n, count: count * n)
            }
            decodedStart += count
            written += count
            left -= count
        }
        return written
    }

    /// The whole presented audio, interleaved.
    public func readAll() throws(MPEG4Error) -> [Int16] {
        var samples = [Int16](repeating: 0, count: frameCount * channels)
        var done = 0
        while done < frameCount {
            let got = try samples.withUnsafeMutableBufferPointer { (buffer) throws(MPEG4Error) -> Int in
                try read(into: buffer.baseAddress! + done * channels, frames: frameCount - done)
            }
            if got == 0 { break }
            done += got
        }
        samples.removeLast((frameCount - done) * channels)
        return samples
    }
}
