import FoundationEssentials
import PracticeProtocol

/// The learner's data: the conversation topics and the profile (read, evaluated, a new
/// learning goal), each answer kept per user in the offline cache; when the backend cannot
/// be reached, the last answer kept is given, marked stale with its age.
final class LearnerData: @unchecked Sendable {
    private unowned let context: any SessionContext
    private let backend: @Sendable () -> any LearnerBackend
    private let cache: OfflineCache

    init(context: any SessionContext, backend: @escaping @Sendable () -> any LearnerBackend, stateDirectory: String) {
        self.context = context
        self.backend = backend
        cache = OfflineCache(stateDirectory: stateDirectory)
    }

    /// The kiosk's own answers (topics are no one's): kept across visits.
    static let kioskUser = "kiosk"

    func topics(_ reply: CommandReply<Command.Topics>) {
        cached("topics", user: Self.kioskUser, fetch: { backend async throws(BackendError) in try await backend.topics() }) { result in
            reply(result.map { .init(topics: $0.value, stale: $0.stale, ageS: $0.age, error: $0.error) })
        }
    }

    func profile(_ args: Command.Profile.Arguments, _ reply: CommandReply<Command.Profile>) {
        let user = context.settings.userID
        let done: @Sendable (Result<OfflineCache.Answer<UserProfile>, ControlError>) -> Void = { result in
            reply(result.map { .init(profile: $0.value, stale: $0.stale, ageS: $0.age, error: $0.error) })
        }
        switch args.action ?? .get {
        case .get:
            cached("profile", fetch: { backend async throws(BackendError) in try await backend.profile(userID: user) }, done)
        case .evaluate:
            cached("profile", offline: false, fetch: { backend async throws(BackendError) in try await backend.evaluate(userID: user) }, done)
        case .learningGoal:
            let goal = args.learningGoal
            cached("profile", offline: false, fetch: { backend async throws(BackendError) in try await backend.setLearningGoal(userID: user, goal: goal) }, done)
        }
    }

    /// Asks the backend; keeps the answer per user; offline, answers the last one kept.
    /// `offline: false` for calls that change something.
    /// A shared kiosk's visit ended: the profile kept for its learner is removed.
    func forgetLearner() { cache.forget(user: context.settings.userID) }

    private func cached<T: Codable & Sendable>(_ name: String, user: String? = nil, offline: Bool = true,
                                               fetch: @escaping @Sendable (any LearnerBackend) async throws(BackendError) -> T,
                                               _ done: @escaping @Sendable (Result<OfflineCache.Answer<T>, ControlError>) -> Void) {
        let user = user ?? context.settings.userID
        let cache = cache
        context.call(backend(), fetch) { result in
            done(cache.answer(result.mapError(ControlError.init), name: name, user: user, offline: offline))
        }
    }
}
