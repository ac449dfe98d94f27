/// How a capture or playback stream runs: the engine's side (PCM16 24 kHz mono by default),
/// what is asked of the device (its native format unless a field is forced), the period
/// (the unit of I/O and of latency), the device buffer, and per-backend settings.
///
/// The engine converts between its side and whatever the device runs: capture delivers the
/// engine's format, playback takes it.
public struct AudioStreamConfiguration: Hashable, Sendable {
    /// The engine's frames per second.
    public var sampleRate: Int = 24_000
    /// The engine's interleaved channels.
    public var channels: Int = 1
    /// What the device is opened at; `nil` fields take the device's own.
    public var device: DeviceFormatRequest = .native
    /// Frames per period at the engine's rate: 240 is 10 ms at 24 kHz. A device at another
    /// rate gets the same duration in its own frames.
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

    /// The period's duration in frames of a device running at `rate`.
    public func periodFrames(atRate rate: Int) -> Int {
        max(16, (periodFrames * rate + sampleRate / 2) / sampleRate)
    }

    /// The sample rate, channels and format a device is asked for, with `native` filled in
    /// for the fields left to the device.
    func deviceFormat(native: StreamFormat) -> StreamFormat {
        StreamFormat(sampleRate: device.sampleRate ?? native.sampleRate, channels: device.channels ?? native.channels,
                     sampleFormat: device.sampleFormat ?? native.sampleFormat)
    }

    /// The engine's side as a device format: what a device with nothing to convert runs.
    public var engineFormat: StreamFormat { StreamFormat(sampleRate: sampleRate, channels: channels, sampleFormat: .s16) }

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
        if let rate = device.sampleRate, !(8_000...192_000).contains(rate) { throw bad("device sample rate \(rate) is outside 8000...192000") }
        if let count = device.channels, !(1...8).contains(count) { throw bad("device channels \(count) is outside 1...8") }
    }
}
