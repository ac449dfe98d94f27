import FoundationEssentials
import Glibc
import PracticeControl
import PracticeProtocol

// The learner's visit (``VisitKeeper``): its commands, what counts as the learner being
// there, the identity each visit takes, and what a visit left behind at start.
extension PracticeDaemon {
    func makeVisits(_ configuration: DaemonConfiguration) -> VisitKeeper {
        VisitKeeper(settings: Self.visitSettings(configuration), stateDirectory: configuration.stateDirectory, clock: clock, metrics: metrics,
                    logger: logger.named("visit"),
                    hooks: .init(busy: { [unowned self] in flow.visitBusy || player?.isActive == true },
                                 begin: { [unowned self] identity in beginVisit(identity) },
                                 end: { [unowned self] _, identity, done in
                                     flow.endVisit(forgetting: identity) { [self] in
                                         // The next learner hears the tutor at its own speed.
                                         setPlaybackRate(1, because: "the visit ended")
                                         // Nobody's id until the next visit draws its own.
                                         if identity == .shared { beginVisit(.shared) }
                                         done()
                                     }
                                 },
                                 publish: { [weak self] event in self?.server?.publish(any: event) }))
    }

    static func visitSettings(_ configuration: DaemonConfiguration) -> VisitKeeper.Settings {
        .init(identity: configuration.visitIdentity, warningSeconds: configuration.idleWarningSeconds, resetSeconds: configuration.idleResetSeconds)
    }

    func registerVisitCommands(into table: CommandTable) {
        table.register(Command.VisitTouch.self, on: visits.queue) { [unowned self] _, reply in reply.succeed(try visits.touch()) }
        table.register(Command.VisitEnd.self, on: visits.queue) { [unowned self] _, reply in reply.succeed(visits.end(.done)) }
    }

    /// A command the daemon routed: the learner is there. One that practises begins a visit
    /// from the attract screen; one that only reads (the UI's topics, a profile, a card list)
    /// keeps a visit alive but begins none. A sign-out ends the visit.
    func visitNoticed(_ command: any ControlCommand.Type) {
        guard command.route == .session || command.route == .cue else { return }
        if command.name == Command.SignOut.name { return visits.queue.async { [self] in visits.end(.signout) } }
        visits.noticed(begins: command.beginsVisit)
    }

    /// The learner the TalkCo flow speaks for during a visit: on a shared kiosk a new id each
    /// visit (the backend makes an empty profile for it on the fly) and no configured name,
    /// drawn again as a visit ends.
    func beginVisit(_ identity: VisitIdentity) {
        guard identity == .shared else { return }
        let id = ConfigurationLoader.newUserID()  // names nobody before or after its visit
        let current = lock.withLock {
            userID = id
            return configuration
        }
        flow.configure(Self.flowConfiguration(current), userID: id)
    }

    /// What the flow is configured with: a shared kiosk sends no learner's name.
    static func flowConfiguration(_ configuration: DaemonConfiguration) -> DaemonConfiguration {
        var configuration = configuration
        if configuration.visitIdentity == .shared { configuration.userName = nil }
        return configuration
    }

    /// At start, before clients: a visit the last run left under way ends, and on a shared
    /// kiosk nothing of any learner is kept: the Chatterbox tokens and every learner's
    /// offline answers go (the topics, which are no one's, stay).
    func forgetLeftovers(_ configuration: DaemonConfiguration) {
        let leftVisit = visits.endLeftover()
        guard configuration.visitIdentity == .shared else { return }
        if let chatterbox = lock.withLock({ chatterbox }), chatterbox.isSignedIn {
            logger.notice("a Chatterbox learner was still signed in\(leftVisit ? " with the visit the last run left" : ""): signed out")
            chatterbox.signOut()
        }
        unlink(CuePractice.playbackFile(configuration.stateDirectory))
        let removed = OfflineCache(stateDirectory: configuration.stateDirectory).forgetEveryone(but: LearnerData.kioskUser)
        if !removed.isEmpty { logger.notice("removed the offline answers an earlier visit kept (\(removed.count) learner(s))") }
    }
}
