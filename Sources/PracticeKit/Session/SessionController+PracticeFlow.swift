import PracticeProtocol

// TalkCo's conversations as the daemon's flow (``PracticeFlow``).
extension SessionController: PracticeFlow {
    public func start() { recoverSpool() }

    public func configure(_ configuration: DaemonConfiguration, userID: String) {
        var settings = SessionSettings(userID: userID, userName: configuration.userName)
        settings.turnRetrySeconds = Double(configuration.turnRetrySeconds)
        settings.pollInterval = Double(configuration.reviewPollMilliseconds) / 1000
        settings.drainTimeout = Double(configuration.replyDrainMilliseconds) / 1000
        update(settings: settings)
    }

    public var needsDevices: Bool { !isIdle }
    public var sessionSnapshot: SessionState { snapshot }
    public var learnerSnapshot: LearnerState? { nil }

    public func spoolListing() -> FlowSpoolListing {
        let (turns, directory, setAside) = listedSpool()
        return FlowSpoolListing(turns: turns, setAside: setAside, directory: directory)
    }

    public func probeBackend(_ configuration: BackendConfiguration) async throws {
        _ = try await BackendClient(configuration: configuration).topics()
    }
}
