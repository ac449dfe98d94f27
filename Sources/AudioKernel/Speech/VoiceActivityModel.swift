import SpeechModels

/// What ``VoiceActivityStream`` asks of a voice-activity model: a speech probability for each
/// 512-sample frame at 16 kHz, in order, and a reset between streams. Silero VAD is the model
/// the recorder runs; the tests of the stream's ring and of smart-turn's worker, which do not
/// depend on what the model hears, give the stream a stand-in (the debug build's Silero takes
/// tens of seconds over the 12 s those tests feed).
public protocol VoiceActivityModel: AnyObject {
    func reset()
    func probability(of frame: UnsafeBufferPointer<Float>) -> Float
}

extension SileroVAD: VoiceActivityModel {}
