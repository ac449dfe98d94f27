/// What is wrong with an AAC frame or configuration. The decoder never traps and never reads
/// past a frame: anything it cannot take is one of these, and the next frame decodes afresh.
public enum AACError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The frame breaks the syntax of ISO/IEC 14496-3: a value out of its range, a code no
    /// codebook has, data running past the frame's end.
    case malformed(String)
    /// Legal AAC that this AAC-LC decoder does not take (a coupling channel, gain control,
    /// prediction), named.
    case unsupported(String)

    public var description: String {
        switch self {
        case .malformed(let reason): return "malformed AAC frame: \(reason)"
        case .unsupported(let what): return "unsupported in AAC-LC: \(what)"
        }
    }
}
