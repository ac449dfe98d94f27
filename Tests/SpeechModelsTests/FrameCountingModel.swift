import AudioKernel

/// A stand-in voice-activity model for tests of what ``VoiceActivityStream`` keeps rather than
/// what it hears: it counts the frames it is given and hears no speech.
final class FrameCountingModel: VoiceActivityModel {
    private(set) var frames = 0
    func reset() { frames = 0 }
    func probability(of frame: UnsafeBufferPointer<Float>) -> Float {
        precondition(frame.count == 512)
        frames += 1
        return 0
    }
}
