import FoundationEssentials

/// Where the speech models stand (`status.speech`, `speech.models`).
public enum SpeechModelsState: String, Codable, Sendable, CaseIterable, WireEnumerable {
    /// `speech.endpoint = hangover`: no models are used.
    case off
    /// The files are there and whole (sha256 checked at start); they are loaded when a
    /// session or an answer needs the microphone, and let go when the devices close.
    case checked
    /// Being parsed and laid out, beside the running daemon (0.3 s in a release build). A
    /// hands-free turn that starts meanwhile ends by the hangover rule.
    case loading
    /// Loaded: hands-free turns end by Silero VAD and smart-turn.
    case ready
    /// Missing, damaged or unloadable (see `error`): hands-free turns end by the hangover
    /// rule (`speech.hangover_ms`) until the daemon is restarted with good files.
    case failed
}

/// How the daemon hears the end of a hands-free turn now (`status.speech`).
public struct SpeechHearing: Codable, Sendable, Equatable {
    /// The rule in force: `model` (Silero VAD and smart-turn) or `hangover` (a fixed silence).
    public var endpoint: String
    /// What `speech.endpoint` asks for.
    public var configured: String
    public var models: SpeechModelsState
    /// Why the models failed, and what the daemon does instead (null unless `models` is `failed`).
    public var error: String?
    /// The build of the models' integer kernels this CPU runs (`portable`, `avx2`, `avx-vnni`,
    /// `avx512-vnni`), chosen at start from its features (`PRACTICED_SPEECH_KERNELS` overrides).
    public var kernels: String?

    public init(endpoint: String, configured: String, models: SpeechModelsState, error: String? = nil, kernels: String? = nil) {
        self.endpoint = endpoint
        self.configured = configured
        self.models = models
        self.error = error
        self.kernels = kernels
    }
}
