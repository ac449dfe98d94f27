import SpeechModels

/// The learned models a recorder ends hands-free turns with (``TurnEndpointer``): its own
/// Silero VAD (it carries the stream's state) and a smart-turn worker.
public struct LearnedEndpointing: @unchecked Sendable {
    public let vad: SileroVAD
    public let worker: TurnCompletionWorker
    public var configuration: TurnEndpointerConfiguration

    public init(vad: SileroVAD, worker: TurnCompletionWorker, configuration: TurnEndpointerConfiguration = TurnEndpointerConfiguration()) {
        self.vad = vad
        self.worker = worker
        self.configuration = configuration
    }
}
