/// Which device a stream runs on, named by a URI-like string:
///
/// | name | device |
/// |---|---|
/// | `auto` | PulseAudio when a server answers, otherwise ALSA `default` |
/// | `alsa:<pcm>` | an ALSA PCM: `alsa:default`, `alsa:hw:1,0`, `alsa:plughw:1,0` |
/// | `pulse:` / `pulse:<name>` | the PulseAudio server's default, or a sink or source by name |
/// | `file:<path>` | capture reads a WAV file, playback writes one; `file:<path>?realtime` paces I/O in real time |
/// | `null:` | silence in, nothing out, paced in real time |
public enum AudioDeviceName: Hashable, Sendable, CustomStringConvertible {
    case automatic
    case alsa(pcm: String)
    case pulse(device: String?)
    case file(path: String, realTime: Bool)
    case null

    /// The accepted forms, for error messages and `--help`.
    public static let acceptedForms = "auto, alsa:<pcm> (e.g. alsa:default, alsa:plughw:1,0), pulse: or pulse:<sink-or-source>, file:<path.wav>[?realtime], null:"

    /// Parses a device name.
    public init(parsing text: String) throws(AudioError) {
        func invalid(_ why: String) -> AudioError {
            AudioError(.invalidName, message: "\(why); accepted forms: \(Self.acceptedForms)", operation: "parsing device name '\(text)'")
        }
        if text == "auto" { self = .automatic; return }
        guard let colon = text.firstIndex(of: ":") else { throw invalid("no scheme") }
        let scheme = text[..<colon]
        let rest = String(text[text.index(after: colon)...])
        switch scheme {
        case "alsa":
            guard !rest.isEmpty else { throw invalid("an ALSA PCM name is required after 'alsa:'") }
            guard !rest.contains(where: { $0.isWhitespace || $0 == "\0" || $0 == "?" }) else {
                throw invalid("an ALSA PCM name cannot contain spaces or '?' (a format query is read by AudioDeviceURI)")
            }
            self = .alsa(pcm: rest)
        case "pulse":
            guard !rest.contains(where: { $0.isWhitespace || $0 == "\0" || $0 == "?" }) else {
                throw invalid("a PulseAudio device name cannot contain spaces or '?' (a format query is read by AudioDeviceURI)")
            }
            self = .pulse(device: rest.isEmpty ? nil : rest)
        case "file":
            var path = rest
            var realTime = false
            if path.hasSuffix("?realtime") {
                realTime = true
                path.removeLast("?realtime".count)
            }
            guard path.hasPrefix("/") else { throw invalid("a file device needs an absolute path") }
            self = .file(path: path, realTime: realTime)
        case "null":
            guard rest.isEmpty else { throw invalid("'null:' takes no argument") }
            self = .null
        default:
            throw invalid("unknown scheme '\(scheme)'")
        }
    }

    public var description: String {
        switch self {
        case .automatic: return "auto"
        case .alsa(let pcm): return "alsa:\(pcm)"
        case .pulse(let device): return "pulse:\(device ?? "")"
        case .file(let path, let realTime): return "file:\(path)\(realTime ? "?realtime" : "")"
        case .null: return "null:"
        }
    }
}
