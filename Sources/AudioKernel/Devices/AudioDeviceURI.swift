/// A device name with what is asked of its format, as configurations and clients write it:
/// `alsa:hw:1,0?rate=48000&channels=2&format=s32`, `pulse:kiosk?format=float`, `auto`.
///
/// Without a query the device runs its own (native) format and the engine converts; each of
/// `rate` (8000-192000), `channels` (1-8) and `format` (`s16`, `s24_3`, `s24`, `s32`, `float`, `u8`, `alaw`, `mulaw`)
/// forces one field. `file:` devices keep their `?realtime` flag, which may be combined
/// (`file:/tmp/out.wav?realtime&rate=48000`).
public struct AudioDeviceURI: Hashable, Sendable, CustomStringConvertible {
    public var name: AudioDeviceName
    public var format: DeviceFormatRequest

    public init(_ name: AudioDeviceName, format: DeviceFormatRequest = .native) {
        self.name = name
        self.format = format
    }

    public static let automatic = AudioDeviceURI(.automatic)

    /// The accepted forms, for error messages and `--help`.
    public static let acceptedForms = AudioDeviceName.acceptedForms + "; each may end in ?rate=<8000-192000>&channels=<1-8>&format=<s16|s24_3|s24|s32|float>"

    public init(parsing text: String) throws(AudioError) {
        func invalid(_ why: String) -> AudioError {
            AudioError(.invalidName, message: "\(why); accepted forms: \(Self.acceptedForms)", operation: "parsing device name '\(text)'")
        }
        guard let mark = text.firstIndex(of: "?") else {
            self.init(try AudioDeviceName(parsing: text))
            return
        }
        var base = String(text[..<mark])
        var request = DeviceFormatRequest()
        var realTime = false
        for item in text[text.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0])
            let value = parts.count == 2 ? String(parts[1]) : nil
            switch (key, value) {
            case ("realtime", nil):
                guard base.hasPrefix("file:") else { throw invalid("'realtime' applies to file: devices only") }
                realTime = true
            case ("rate", let value?):
                guard request.sampleRate == nil, let rate = Int(value), (8_000...192_000).contains(rate) else {
                    throw invalid("'rate' must be a whole number of Hz from 8000 to 192000, given once")
                }
                request.sampleRate = rate
            case ("channels", let value?):
                guard request.channels == nil, let count = Int(value), (1...8).contains(count) else {
                    throw invalid("'channels' must be 1 to 8, given once")
                }
                request.channels = count
            case ("format", let value?):
                guard request.sampleFormat == nil, let format = SampleFormat(name: value) else {
                    throw invalid("'format' must be one of s16, s24_3, s24, s32, float, u8, alaw, mulaw, given once")
                }
                request.sampleFormat = format
            default:
                throw invalid("unknown parameter '\(item)' (rate=, channels=, format=, and realtime for files)")
            }
        }
        if realTime { base += "?realtime" }
        self.init(try AudioDeviceName(parsing: base), format: request)
    }

    public var description: String {
        let query = format.query
        guard !query.isEmpty else { return name.description }
        if case .file(_, true) = name { return "\(name)&\(query)" }
        return "\(name)?\(query)"
    }
}
