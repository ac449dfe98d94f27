import Glibc

/// Writes PCM into an AAC-LC `.m4a` as it arrives: ``AACEncoder`` codes each block and
/// ``MPEG4AudioWriter`` streams the frames to its scratch file, so memory holds the sample
/// table and one frame. ``finish(sync:)`` writes the file with an edit list giving exactly
/// the samples written. One owner at a time.
public final class AACFileWriter {
    public let path: String
    public let encoder: AACEncoder
    private let writer: MPEG4AudioWriter
    private var failure: MPEG4Error?

    public init(path: String, sampleRate: Int, channels: Int, bitRate: Int, mode: mode_t = 0o644) throws(MPEG4Error) {
        self.path = path
        do {
            encoder = try AACEncoder(sampleRate: sampleRate, channels: channels, bitRate: bitRate)
        } catch {
            throw .unsupportedConfiguration(error.description)
        }
        writer = try MPEG4AudioWriter(path: path, config: encoder.config, mode: mode)
    }

    /// Frames (samples per channel) written so far.
    public var frameCount: Int { encoder.inputFrames }

    /// Appends `frames` interleaved frames of PCM16.
    public func write(_ samples: UnsafePointer<Int16>, frames: Int) throws(MPEG4Error) {
        encoder.encode(samples, frames: frames) { append($0) }
        if let failure { throw failure }
    }

    /// Appends `frames` interleaved frames of Float samples (full scale ±1).
    public func write(_ samples: UnsafePointer<Float>, frames: Int) throws(MPEG4Error) {
        encoder.encode(samples, frames: frames) { append($0) }
        if let failure { throw failure }
    }

    private func append(_ frame: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        do throws(MPEG4Error) { try writer.append(frame) } catch { failure = error }
    }

    /// Codes the rest and writes the file (flushed to stable storage with `sync`).
    public func finish(sync: Bool = false) throws(MPEG4Error) {
        encoder.finish { append($0) }
        if let failure { throw failure }
        try writer.finish(priming: encoder.inputFrames == 0 ? 0 : AACEncoder.priming, length: encoder.inputFrames, sync: sync)
    }

    /// Abandons the file: nothing is left at `path` or beside it.
    public func cancel() { writer.cancel() }
}
