/// An error of an audio device: what kind of failure, the ALSA or PulseAudio error code
/// with its library text (`snd_strerror`, `pa_strerror`), and what was being done.
public struct AudioError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What kind of failure this is; the daemon maps it to a reply or an event.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The device name is malformed or of an unknown scheme.
        public static let invalidName = Kind(rawValue: "invalid_name")
        /// The device does not exist or could not be opened (`snd_pcm_open`, `pa_simple_new`).
        public static let openFailed = Kind(rawValue: "open_failed")
        /// The device cannot run the stream's format (rate, channels, sample format).
        public static let unsupportedFormat = Kind(rawValue: "unsupported_format")
        /// The device went away while running (ENODEV, or the PulseAudio server vanished).
        public static let deviceLost = Kind(rawValue: "device_lost")
        /// An xrun could not be recovered (`snd_pcm_recover` failed).
        public static let unrecoverable = Kind(rawValue: "unrecoverable")
        /// Reading or writing the stream failed for another reason.
        public static let io = Kind(rawValue: "io")
        /// The operation is not valid in the device's state (e.g. start twice).
        public static let invalidState = Kind(rawValue: "invalid_state")
    }

    /// The kind of failure.
    public var kind: Kind
    /// The library's error code: a negative errno for ALSA and files, a `PA_ERR_*` for
    /// PulseAudio; 0 when no library call failed.
    public var code: Int32
    /// The library's text for `code`, or a description of the problem.
    public var message: String
    /// What was being done, e.g. "opening ALSA PCM 'hw:9,0' for capture".
    public var operation: String

    public init(_ kind: Kind, code: Int32 = 0, message: String, operation: String) {
        self.kind = kind
        self.code = code
        self.message = message
        self.operation = operation
    }

    public var description: String {
        code == 0 ? "\(operation): \(message)" : "\(operation): \(message) (\(code))"
    }
}
