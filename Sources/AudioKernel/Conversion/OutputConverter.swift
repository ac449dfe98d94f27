/// The last stage of playback: the engine's Float32 frames (its own rate and channels) in,
/// one device period in the device's format out. Resampling, then channel mapping, then the
/// conversion to the device's sample format with clipping and dither.
///
/// The device asks for a fixed number of frames per period; the engine is asked for fixed
/// chunks of its own frames (about one period's worth), and what the resampler makes beyond
/// the period waits in a small queue for the next one. Everything is allocated at init,
/// when a device opens; nothing per period.
public final class OutputConverter {
    public let sourceRate: Int
    public let sourceChannels: Int
    public let device: StreamFormat
    /// Frames per device period.
    public let periodFrames: Int
    /// Engine frames asked for at a time.
    public let chunkFrames: Int

    private let resampler: Resampler?
    private let map: ChannelMap
    private let chunk: UnsafeMutableBufferPointer<Float>
    /// Resampled frames at the device rate, in the engine's channels; `queued` are waiting.
    private let queue: UnsafeMutablePointer<Float>
    private var queued = 0
    private let mapped: UnsafeMutablePointer<Float>
    private var dither = TPDFDither()

    public init(sourceRate: Int, sourceChannels: Int, device: StreamFormat, periodFrames: Int, quality: Resampler.Quality = .medium) throws(AudioError) {
        self.sourceRate = sourceRate
        self.sourceChannels = sourceChannels
        self.device = device
        self.periodFrames = periodFrames
        if sourceRate == device.sampleRate {
            resampler = nil
            chunkFrames = periodFrames
        } else {
            let frames = (periodFrames * sourceRate + device.sampleRate - 1) / device.sampleRate
            chunkFrames = max(1, frames)
            do {
                resampler = try Resampler(inputRate: sourceRate, outputRate: device.sampleRate, channels: sourceChannels,
                                          quality: quality, maximumInputFrames: chunkFrames)
            } catch {
                throw AudioError(.unsupportedFormat, message: error.description, operation: "converting \(sourceRate) Hz to \(device)")
            }
        }
        map = ChannelMap(from: sourceChannels, to: device.channels)
        chunk = .allocate(capacity: chunkFrames * sourceChannels)
        chunk.initialize(repeating: 0)
        let queueFrames = periodFrames + (resampler?.maximumOutputFrames(forInputFrames: chunkFrames) ?? chunkFrames)
        queue = .allocate(capacity: queueFrames * sourceChannels)
        queue.initialize(repeating: 0, count: queueFrames * sourceChannels)
        mapped = .allocate(capacity: periodFrames * device.channels)
        mapped.initialize(repeating: 0, count: periodFrames * device.channels)
    }

    deinit {
        chunk.deallocate()
        queue.deallocate()
        mapped.deallocate()
    }

    /// Bytes of one device period.
    public var periodBytes: Int { periodFrames * device.bytesPerFrame }

    /// Device frames between an engine sample pulled and its place in the period written:
    /// the resampler's delay and the queue.
    public var bufferedFrames: Int { Int(resampler?.delay ?? 0) + queued }

    /// Engine samples (interleaved) that the next ``render(into:pull:)`` asks `pull` for at
    /// most: whole chunks until a period is queued. A device without a clock waits until its
    /// source has this much (or its sound's end), so that nothing is padded with silence.
    public var engineSamplesForNextPeriod: Int {
        guard queued < periodFrames else { return 0 }
        // A chunk gives at least the resampler's promise: the ratio's share of output
        // frames, less what its stages' integer positions and pairing may hold back.
        let perChunk = resampler.map { max(1, $0.minimumOutputFrames(forInputFrames: chunkFrames)) } ?? chunkFrames
        let pulls = (periodFrames - queued + perChunk - 1) / perChunk
        return pulls * chunkFrames * sourceChannels
    }

    /// Fills one device period at `destination` (``periodBytes`` bytes), asking `pull` for
    /// engine frames (interleaved, all of the buffer) as often as it needs.
    public func render(into destination: UnsafeMutableRawPointer, pull: (UnsafeMutableBufferPointer<Float>) -> Void) {
        let channels = sourceChannels
        while queued < periodFrames {
            pull(chunk)
            if let resampler {
                let room = UnsafeMutableBufferPointer(start: queue + queued * channels,
                                                      count: resampler.maximumOutputFrames(forInputFrames: chunkFrames) * channels)
                queued += resampler.process(UnsafeBufferPointer(chunk), into: room)
            } else {
                (queue + queued * channels).update(from: chunk.baseAddress!, count: chunkFrames * channels)
                queued += chunkFrames
            }
        }
        let samples = periodFrames * device.channels
        if map.isIdentity {
            SampleCodec.encode(queue, count: samples, as: device.sampleFormat, into: destination, dither: &dither)
        } else {
            map.apply(queue, frames: periodFrames, into: mapped)
            SampleCodec.encode(mapped, count: samples, as: device.sampleFormat, into: destination, dither: &dither)
        }
        queued -= periodFrames
        if queued > 0 { queue.update(from: queue + periodFrames * channels, count: queued * channels) }
    }

}
