import AudioKernel
import PracticeProtocol

// Chatterbox's cue practice as the daemon's flow (``PracticeFlow``).
extension CuePractice: PracticeFlow {
    public func configure(_ configuration: DaemonConfiguration, userID: String) {
        var settings = CueSettings()
        settings.count = configuration.cueCount
        settings.bitRate = configuration.cueBitRate
        settings.pollInterval = Double(configuration.cuePollMilliseconds) / 1000
        settings.resultAttempts = configuration.cueResultAttempts
        update(settings: settings)
    }

    /// An answer being recorded keeps the devices open.
    public var needsDevices: Bool { isRecording }
    /// Cue practice plays its recordings through the daemon's `play`, as any client does.
    public var speakerIsFree: Bool { true }
    public func stopPlayback() -> Bool { false }
    public func playerEvent(_ event: PlayerEvent) {}
    public var sessionSnapshot: SessionState { .idle }
    public var learnerSnapshot: LearnerState? { snapshot }

    public func spoolListing() -> FlowSpoolListing {
        let (listing, directory) = queue.sync { (delivery.listing(), delivery.spool?.directory ?? "") }
        return FlowSpoolListing(answers: listing.answers, setAside: listing.setAside, directory: directory)
    }

    public func probeBackend(_ configuration: BackendConfiguration) async throws {
        _ = try await ChatterboxClient(configuration: configuration, tokens: client().tokens).appConfig()
    }

    /// Nothing new starts after this; an answer being recorded is ended by the recorder's
    /// stop and spooled on the queue (``finishShutdown()``).
    public func beginShutdown() {}
    public func finishShutdown() { queue.sync {} }
}
