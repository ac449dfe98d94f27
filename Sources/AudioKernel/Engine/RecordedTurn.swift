/// A finished turn.
public struct RecordedTurn: Sendable {
    /// Why the turn ended.
    public enum EndReason: String, Sendable {
        /// Push-to-talk released (`endTurn`).
        case released
        /// Hands-free: the learner stopped talking (hangover elapsed).
        case endOfSpeech
        /// The maximum turn length was reached.
        case maximumLength
        /// Learned endpointing: smart-turn heard a finished turn at a pause.
        case finished
        /// Learned endpointing: a pause reached its ceiling (the model said unfinished).
        case pauseCeiling = "pause_ceiling"
        /// Learned endpointing: speech that never paused and no voice rose over, the room's
        /// (babble, the next kiosk): discarded, never sent.
        case backgroundSpeech = "background_speech"
    }

    /// The turn as a WAV file: the 44-byte header and the samples, written into the recorder's
    /// buffer as they were captured and copied out once, at the turn's own size.
    public var wav: [UInt8]
    public var format: WAVFormat
    public var endReason: EndReason
    /// The whole turn's level (exact RMS and peak of its samples, header excluded).
    public var level: SignalLevel
    /// The time the detector heard speech, in seconds.
    public var speechDuration: Double
    /// The iOS client's gate verdict: RMS above 300.
    public var holdsSpeech: Bool
    /// The recording this turn answers: the number ``Recorder/beginTurn()`` or
    /// ``Recorder/listen()`` returned. A turn can finish on the capture thread just as its
    /// recording is cancelled and a new one begun; the number tells the late one apart.
    public var recording: UInt64

    /// smart-turn's last probability that the turn was finished (learned endpointing), nil
    /// when it was not asked.
    public var finishedProbability: Float? = nil

    /// For a hands-free turn that ended by itself at a pause (finished, pause_ceiling,
    /// endOfSpeech): the seconds from the learner's last word to the turn's end, what the
    /// learner waited before the kiosk took the turn. Nil for any other ending.
    public var endWait: Double? = nil

    /// The turn's duration in seconds.
    public var duration: Double { format.duration(ofSamples: (wav.count - WAVEncoder.headerSize) / 2) }
}

extension RecordedTurn {
    /// A turn of `samples` (24 kHz mono speech) as the recorder would hand it over, through
    /// the same gate: for replaying recordings and for the tests of what consumes turns.
    public init(samples: [Int16], recording: UInt64, endReason: EndReason = .released, speechDuration: Double? = nil,
                gate: SpeechGate = SpeechGate()) {
        format = .speech
        wav = (try? samples.withUnsafeBufferPointer { try WAVEncoder.encode($0, format: .speech) }) ?? []
        level = SignalLevel(measuring: samples)
        self.endReason = endReason
        self.speechDuration = speechDuration ?? Double(samples.count) / 24_000
        holdsSpeech = gate.holdsSpeech(level)
        self.recording = recording
    }
}
