import FoundationEssentials
import PracticeProtocol

// The backend as each piece of the session uses it: ``BackendClient`` over HTTP in the
// daemon, an in-memory stand-in in the pieces' own tests.

/// A reply's stream, as ``ReplyPlayback`` follows it.
public protocol ReplyStreaming: AnyObject, Sendable {
    func cancel()
    /// Called once, with the stream's end.
    func whenFinished(_ body: @escaping @Sendable (Result<ReplySummary, BackendError>) -> Void)
}

extension ReplyStream: ReplyStreaming {}

public protocol ReplyBackend: Sendable {
    func streamGreeting(sessionID: String, onEvent: @escaping ReplyStream.EventHandler) -> any ReplyStreaming
    func streamTurn(sessionID: String, wav: [UInt8], idempotencyKey: String, onEvent: @escaping ReplyStream.EventHandler) -> any ReplyStreaming
    func streamText(sessionID: String, text: String, onEvent: @escaping ReplyStream.EventHandler) -> any ReplyStreaming
}

public protocol ReviewBackend: Sendable {
    func endTalk(sessionID: String) async throws(BackendError) -> EndedTalk
    func review(sessionID: String) async throws(BackendError) -> Review
    func requestCorrection(sessionID: String, _ request: CorrectionRequest) async throws(BackendError) -> Correction
    func endSession(sessionID: String) async throws(BackendError) -> EndedSession
}

public protocol LearnerBackend: Sendable {
    func topics() async throws(BackendError) -> [Topic]
    func profile(userID: String) async throws(BackendError) -> UserProfile
    func evaluate(userID: String) async throws(BackendError) -> UserProfile
    func setLearningGoal(userID: String, goal: String?) async throws(BackendError) -> UserProfile
}

/// Everything the session asks of the backend.
public protocol SessionBackend: ReplyBackend, ReviewBackend, LearnerBackend {
    func createSession(_ request: CreateSessionRequest) async throws(BackendError) -> CreatedSession
}

extension BackendClient: SessionBackend {
    public func streamGreeting(sessionID: String, onEvent: @escaping ReplyStream.EventHandler) -> any ReplyStreaming {
        startGreeting(sessionID: sessionID, onEvent: onEvent)
    }

    public func streamTurn(sessionID: String, wav: [UInt8], idempotencyKey: String, onEvent: @escaping ReplyStream.EventHandler) -> any ReplyStreaming {
        sendTurn(sessionID: sessionID, wav: wav, idempotencyKey: idempotencyKey, onEvent: onEvent)
    }

    public func streamText(sessionID: String, text: String, onEvent: @escaping ReplyStream.EventHandler) -> any ReplyStreaming {
        sendText(sessionID: sessionID, text: text, onEvent: onEvent)
    }
}
