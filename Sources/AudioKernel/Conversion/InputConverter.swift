/// Audio in some format into the engine: a capture device's periods (to the recorder's
/// PCM16) or a clip's file (to the player's Float32). The samples are decoded to Float32,
/// mixed down to the engine's channels and resampled to its rate; ``convertToPCM16(_:frames:)``
/// then rounds them (no dither: the turn goes to a speech recogniser, and PCM16 in gives
/// PCM16 out bit for bit).
///
/// Streaming: calls may pass any number of frames up to ``maximumFrames`` and the filter
/// carries across them. A period at 48 kHz gives half as many frames at 24 kHz; at 44.1 kHz
/// the count varies by one from period to period. Everything is allocated at init.
public final class InputConverter {
    public let source: StreamFormat
    public let maximumFrames: Int
    public let targetRate: Int
    public let targetChannels: Int

    private let resampler: Resampler?
    private let map: ChannelMap
    private let decoded: UnsafeMutablePointer<Float>
    private let mapped: UnsafeMutablePointer<Float>
    private let resampled: UnsafeMutableBufferPointer<Float>
    private let output: UnsafeMutableBufferPointer<Int16>

    public init(source: StreamFormat, maximumFrames: Int, targetRate: Int, targetChannels: Int, quality: Resampler.Quality = .medium) throws(AudioError) {
        self.source = source
        self.maximumFrames = maximumFrames
        self.targetRate = targetRate
        self.targetChannels = targetChannels
        if source.sampleRate == targetRate {
            resampler = nil
        } else {
            do {
                resampler = try Resampler(inputRate: source.sampleRate, outputRate: targetRate, channels: targetChannels,
                                          quality: quality, maximumInputFrames: maximumFrames)
            } catch {
                throw AudioError(.unsupportedFormat, message: error.description, operation: "converting \(source) to \(targetRate) Hz")
            }
        }
        map = ChannelMap(from: source.channels, to: targetChannels)
        decoded = .allocate(capacity: maximumFrames * source.channels)
        mapped = .allocate(capacity: maximumFrames * targetChannels)
        let outputFrames = resampler?.maximumOutputFrames(forInputFrames: maximumFrames) ?? maximumFrames
        resampled = .allocate(capacity: outputFrames * targetChannels)
        output = .allocate(capacity: outputFrames * targetChannels)
        decoded.initialize(repeating: 0, count: maximumFrames * source.channels)
        mapped.initialize(repeating: 0, count: maximumFrames * targetChannels)
        resampled.initialize(repeating: 0)
        output.initialize(repeating: 0)
    }

    deinit {
        decoded.deallocate()
        mapped.deallocate()
        resampled.deallocate()
        output.deallocate()
    }

    /// Bytes of the most frames one call takes.
    public var maximumBytes: Int { maximumFrames * source.bytesPerFrame }

    /// The filter's delay in the engine's frames.
    public var delayFrames: Double { resampler?.delay ?? 0 }

    /// Converts `frames` frames (at most ``maximumFrames``) at `bytes` to Float32 in the
    /// engine's rate and channels; valid until the next call.
    public func convert(_ bytes: UnsafeRawPointer, frames: Int) -> UnsafeBufferPointer<Float> {
        precondition(frames <= maximumFrames, "more frames than the converter was made for")
        SampleCodec.decode(bytes, format: source.sampleFormat, count: frames * source.channels, into: decoded)
        let channelled: UnsafeMutablePointer<Float>
        if map.isIdentity {
            channelled = decoded
        } else {
            map.apply(decoded, frames: frames, into: mapped)
            channelled = mapped
        }
        guard let resampler else { return UnsafeBufferPointer(start: channelled, count: frames * targetChannels) }
        let produced = resampler.process(UnsafeBufferPointer(start: channelled, count: frames * targetChannels), into: resampled)
        return UnsafeBufferPointer(start: resampled.baseAddress, count: produced * targetChannels)
    }

    /// Converts as ``convert(_:frames:)``, then to PCM16; valid until the next call.
    public func convertToPCM16(_ bytes: UnsafeRawPointer, frames: Int) -> UnsafeBufferPointer<Int16> {
        let samples = convert(bytes, frames: frames)
        let out = UnsafeMutableBufferPointer(rebasing: output[0..<samples.count])
        SampleConverter.float32ToInt16(samples, into: out)
        return UnsafeBufferPointer(out)
    }

}
