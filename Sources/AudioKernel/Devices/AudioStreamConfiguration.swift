/// How a capture or playback stream runs: the format (PCM16 24 kHz mono by default), the
/// period (the unit of I/O and of latency), the device buffer, and per-backend settings.
public struct AudioStreamConfiguration: Hashable, Sendable {
    /// Frames per second.
    public var sampleRate: Int = 24_000
    /// Interleaved channels.
    public var channels: Int = 1
    /// Frames per period: 240 is 10 ms at 24 kHz.
    public var periodFrames: Int = 240
    /// Periods in the device buffer.
    public var periods: Int = 4
    /// The PulseAudio server to use (`unix:/path` or a host); `nil` follows `PULSE_SERVER`
    /// and the client configuration.
    public var pulseServer: String?
    /// ALSA configuration text loaded on top of the system configuration, for PCMs defined
    /// only for this stream (tests use it for the `file` plugin); `nil` uses the system's.
    public var alsaConfiguration: String?
    /// The application name shown by PulseAudio.
    public var applicationName: String = "practiced"

    public init() {}

    public init(sampleRate: Int = 24_000, channels: Int = 1, periodFrames: Int = 240, periods: Int = 4) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.periodFrames = periodFrames
        self.periods = periods
    }

    /// The stream's format as a WAV format.
    public var format: WAVFormat { WAVFormat(sampleRate: sampleRate, channels: channels) }

    /// Samples (all channels) per period.
    public var periodSamples: Int { periodFrames * channels }

    /// The period in nanoseconds.
    public var periodNanoseconds: Int64 { Int64(periodFrames) * 1_000_000_000 / Int64(sampleRate) }

    /// The device buffer in frames.
    public var bufferFrames: Int { periodFrames * periods }

    /// The latency the buffer allows, in seconds.
    public var bufferDuration: Double { Double(bufferFrames) / Double(sampleRate) }

    /// Checks the values before a device is opened.
    public func validate() throws(AudioError) {
        func bad(_ what: String) -> AudioError { AudioError(.unsupportedFormat, message: what, operation: "checking the stream configuration") }
        guard (8_000...192_000).contains(sampleRate) else { throw bad("sample rate \(sampleRate) is outside 8000...192000") }
        guard (1...8).contains(channels) else { throw bad("channels \(channels) is outside 1...8") }
        guard periodFrames >= 16, periodFrames <= sampleRate else { throw bad("period of \(periodFrames) frames is outside 16...\(sampleRate)") }
        guard (2...32).contains(periods) else { throw bad("\(periods) periods per buffer is outside 2...32") }
    }
}
