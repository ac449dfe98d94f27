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
    /// Hands-free: the learner stopped talking (the hangover elapsed: `speech.endpoint = hangover`).
    case endOfSpeech
    /// The longest turn (`speech.max_turn_s`) was reached.
    case maximumLength
    /// Hands-free, learned endpointing: smart-turn heard a finished turn at a pause.
    case finished
    /// Hands-free, learned endpointing: a pause reached `speech.max_pause_ms`.
    case pauseCeiling = "pause_ceiling"
    /// Hands-free, learned endpointing: 12 s of speech without one frame of silence and with no
    /// voice over it, the room's (babble, the next kiosk): discarded as `no_speech`, never sent.
    case backgroundSpeech = "background_speech"

    public init(_ reason: RecordedTurn.EndReason) {
        switch reason {
        case .released: self = .released
        case .endOfSpeech: self = .endOfSpeech
        case .maximumLength: self = .maximumLength
        case .finished: self = .finished
        case .pauseCeiling: self = .pauseCeiling
        case .backgroundSpeech: self = .backgroundSpeech
        }
    }
}
