/// The shape of PCM16 audio in a WAV file: sample rate and channel count.
///
/// The kiosk's stream is PCM16, 24 kHz, mono end to end (``WAVFormat/speech``); other rates
/// and channel counts are accepted so that files from other tools can be read and written.
public struct WAVFormat: Hashable, Sendable, CustomStringConvertible {
    /// Frames per second.
    public var sampleRate: Int
    /// Interleaved channels per frame.
    public var channels: Int
    /// Bits per sample. Only 16 is supported.
    public let bitsPerSample: Int = 16

    /// PCM16, 24 kHz, mono: the format the practice backend expects and sends.
    public static let speech = WAVFormat(sampleRate: 24_000, channels: 1)

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// Bytes per frame (the WAV `blockAlign`).
    public var bytesPerFrame: Int { channels * bitsPerSample / 8 }

    /// Bytes per second (the WAV `byteRate`).
    public var bytesPerSecond: Int { sampleRate * bytesPerFrame }

    /// The duration of `sampleCount` interleaved samples, in seconds.
    public func duration(ofSamples sampleCount: Int) -> Double {
        guard sampleRate > 0, channels > 0 else { return 0 }
        return Double(sampleCount / channels) / Double(sampleRate)
    }

    public var description: String { "PCM16 \(sampleRate) Hz \(channels == 1 ? "mono" : "\(channels) ch")" }
}
