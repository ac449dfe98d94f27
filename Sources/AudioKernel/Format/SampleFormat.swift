/// How one sample is stored on a device: the integer and float encodings sound cards and
/// sound servers use, all little-endian and interleaved.
public enum SampleFormat: String, CaseIterable, Hashable, Sendable, CustomStringConvertible {
    /// 16-bit signed integer (ALSA `S16_LE`, PulseAudio `s16le`).
    case s16
    /// 24-bit signed integer packed in 3 bytes (ALSA `S24_3LE`, PulseAudio `s24le`): USB
    /// audio class devices.
    case s24_3
    /// 24-bit signed integer in the low bits of 4 bytes (ALSA `S24_LE`, PulseAudio
    /// `s24-32le`): many HDA and I²S codecs.
    case s24
    /// 32-bit signed integer (ALSA `S32_LE`, PulseAudio `s32le`).
    case s32
    /// 32-bit IEEE float in [-1, 1] (ALSA `FLOAT_LE`, PulseAudio `float32le`).
    case float
    /// 8-bit unsigned integer, silence at 128 (ALSA `U8`, PulseAudio `u8`): old sound
    /// effects and prompts.
    case u8
    /// ITU-T G.711 A-law, 8 bits a sample (ALSA `A_LAW`, PulseAudio `alaw`): telephone prompts.
    case alaw
    /// ITU-T G.711 µ-law, 8 bits a sample (ALSA `MU_LAW`, PulseAudio `ulaw`): telephone prompts.
    case mulaw

    /// Bytes one sample takes.
    public var bytesPerSample: Int {
        switch self {
        case .u8, .alaw, .mulaw: return 1
        case .s16: return 2
        case .s24_3: return 3
        case .s24, .s32, .float: return 4
        }
    }

    /// Significant bits: what dither and the noise floor are measured against.
    public var significantBits: Int {
        switch self {
        case .s16: return 16
        case .s24_3, .s24: return 24
        case .s32: return 32
        case .float: return 24
        case .u8: return 8
        // G.711's companded 8 bits span 13 (A-law) and 14 (µ-law) bits of linear range.
        case .alaw: return 13
        case .mulaw: return 14
        }
    }

    /// The name used in device URIs and the configuration (`s16`, `s24_3`, `s24`, `s32`,
    /// `float`, `u8`, `alaw`, `mulaw`); `f32`, `float32`, `s24_32` and `ulaw` are accepted
    /// as aliases.
    public init?(name: String) {
        switch name.lowercased() {
        case "s16", "s16le", "s16_le": self = .s16
        case "s24_3", "s24_3le", "s24le_3": self = .s24_3
        case "s24", "s24_le", "s24_32", "s24-32le": self = .s24
        case "s32", "s32le", "s32_le": self = .s32
        case "float", "f32", "float32", "float32le", "float_le": self = .float
        case "u8": self = .u8
        case "alaw", "a_law": self = .alaw
        case "mulaw", "mu_law", "ulaw": self = .mulaw
        default: return nil
        }
    }

    public var description: String { rawValue }
}

/// The format of a stream as a device runs it: rate, channels and sample encoding.
public struct StreamFormat: Hashable, Sendable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int
    public var sampleFormat: SampleFormat

    public init(sampleRate: Int, channels: Int, sampleFormat: SampleFormat) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.sampleFormat = sampleFormat
    }

    /// Bytes per interleaved frame.
    public var bytesPerFrame: Int { channels * sampleFormat.bytesPerSample }

    public var description: String { "\(sampleFormat) \(sampleRate) Hz \(channels == 1 ? "mono" : channels == 2 ? "stereo" : "\(channels) ch")" }
}

/// What a stream asks of its device. A field left `nil` takes the device's own (native)
/// value: the hardware's for an ALSA `hw:` PCM, the server's for a PulseAudio sink or source,
/// the file's for a WAV capture. The engine converts between it and its own format.
public struct DeviceFormatRequest: Hashable, Sendable, CustomStringConvertible {
    public var sampleRate: Int?
    public var channels: Int?
    public var sampleFormat: SampleFormat?

    public init(sampleRate: Int? = nil, channels: Int? = nil, sampleFormat: SampleFormat? = nil) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.sampleFormat = sampleFormat
    }

    /// Every field native.
    public static let native = DeviceFormatRequest()

    public var isNative: Bool { self == .native }

    /// The URI query that asks for this (`rate=48000&channels=2&format=float`), empty when native.
    public var query: String {
        var parts: [String] = []
        if let sampleRate { parts.append("rate=\(sampleRate)") }
        if let channels { parts.append("channels=\(channels)") }
        if let sampleFormat { parts.append("format=\(sampleFormat)") }
        return parts.joined(separator: "&")
    }

    public var description: String { isNative ? "native" : query }
}
