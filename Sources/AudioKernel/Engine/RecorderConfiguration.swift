/// Settings of the ``Recorder``.
public struct RecorderConfiguration: Hashable, Sendable {
    public var detector = SpeechDetectorConfiguration()
    /// Audio kept from before the speech onset (or before push-to-talk), so the first
    /// syllable is never clipped.
    public var preRollMilliseconds: Int = 300
    /// The pre-roll of a turn that starts over the kiosk's voice (voice barge-in): what comes
    /// before the learner there is the tutor's residue, not a quiet room, and a turn opening
    /// with it had the backend hear the tutor; the first syllables a canceller held down are
    /// found before the onset anyway (``Recorder/heldDownOnset(_:)``).
    public var bargeInPreRollMilliseconds: Int = 200
    /// How often a level event is sent (about 15 times a second).
    public var levelIntervalMilliseconds: Int = 66
    /// Whether the input is echo-cancelled, so that speech may start while the kiosk is
    /// speaking (voice barge-in, above the detector's barge-in threshold); otherwise the
    /// recorder is half-duplex. nil asks the device (``CaptureDevice/inputIsEchoCancelled``:
    /// PulseAudio's and PipeWire's echo-cancel sources are recognised); true declares it (a
    /// speakerphone that cancels in hardware); false keeps half-duplex whatever the device.
    public var echoCancelledInput: Bool? = nil

    public init() {}
}
