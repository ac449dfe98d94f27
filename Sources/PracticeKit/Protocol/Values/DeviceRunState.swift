import AudioKernel

/// A device's state on the wire (`status`, `snapshot`, `device.state`, `level.watch`): the
/// word alone; why a failed device failed travels in its own `error` member.
public enum DeviceRunState: String, Codable, Sendable, CaseIterable, WireEnumerable {
    /// Not opened yet, or closed to be opened again (a reload).
    case closed
    /// Closed because nothing needed it for `audio.idle_close_s`; opened again on demand.
    case idle
    case running
    /// Could not be opened or was lost; tried again every 2 s while needed.
    case failed
}

/// Why the recorder ended a turn (`turn.recorded`, `cue.recorded`).
public enum TurnEndReason: String, Codable, Sendable, CaseIterable, WireEnumerable {
    /// Push-to-talk released (`turn.stop`, `cue.stop`).
    case released
    /// Hands-free: the learner stopped talking (the hangover elapsed).
    case endOfSpeech
    /// The longest turn (`speech.max_turn_s`) was reached.
    case maximumLength

    public init(_ reason: RecordedTurn.EndReason) {
        switch reason {
        case .released: self = .released
        case .endOfSpeech: self = .endOfSpeech
        case .maximumLength: self = .maximumLength
        }
    }
}
