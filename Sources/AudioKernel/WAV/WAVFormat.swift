/// The shape of the audio in a WAV file: sample rate, channel count and sample encoding.
///
/// The kiosk's stream is PCM16, 24 kHz, mono end to end (``WAVFormat/speech``); files from
/// other tools may be 8 to 192 kHz, with more channels, 24- or 32-bit integer or 32-bit
/// float samples (``SampleFormat``), which `play` converts as it streams them.
public struct WAVFormat: Hashable, Sendable, CustomStringConvertible {
    /// Frames per second.
    public var sampleRate: Int
    /// Interleaved channels per frame.
    public var channels: Int
    /// How each sample is stored.
    public var sampleFormat: SampleFormat

    /// PCM16, 24 kHz, mono: the format the practice backend expects and sends.
    public static let speech = WAVFormat(sampleRate: 24_000, channels: 1)

    public init(sampleRate: Int, channels: Int, sampleFormat: SampleFormat = .s16) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.sampleFormat = sampleFormat
    }

    /// Bits per sample as the `fmt ` chunk's container size (24-bit samples in 4 bytes: 32).
    public var bitsPerSample: Int { sampleFormat.bytesPerSample * 8 }

    /// Bytes per frame (the WAV `blockAlign`).
    public var bytesPerFrame: Int { channels * sampleFormat.bytesPerSample }

    /// Bytes per second (the WAV `byteRate`).
    public var bytesPerSecond: Int { sampleRate * bytesPerFrame }

    /// The format as a device stream format.
    public var streamFormat: StreamFormat { StreamFormat(sampleRate: sampleRate, channels: channels, sampleFormat: sampleFormat) }

    /// The duration of `sampleCount` interleaved samples, in seconds.
    public func duration(ofSamples sampleCount: Int) -> Double {
        guard sampleRate > 0, channels > 0 else { return 0 }
        return Double(sampleCount / channels) / Double(sampleRate)
    }

    public var description: String {
        let encoding: String
        switch sampleFormat {
        case .s16: encoding = "PCM16"
        case .s24_3: encoding = "PCM24"
        case .s24: encoding = "PCM24 in 32 bits"
        case .s32: encoding = "PCM32"
        case .float: encoding = "float32"
        case .u8: encoding = "PCM8 unsigned"
        case .alaw: encoding = "A-law"
        case .mulaw: encoding = "µ-law"
        }
        return "\(encoding) \(sampleRate) Hz \(channels == 1 ? "mono" : "\(channels) ch")"
    }
}
