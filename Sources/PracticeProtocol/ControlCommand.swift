import FoundationEssentials
import Glibc
import PracticeNet

/// A command of the `practiced/1` protocol: its wire name, its arguments (read from the
/// request's `args` by ``ProtocolDecoder``) and its result (the reply's `result`, written
/// by ``ProtocolEncoder``). Every command the daemon answers is one of
/// ``ProtocolCatalog/commands``.
public protocol ControlCommand: Sendable {
    associatedtype Arguments: Codable & Sendable
    associatedtype Result: Codable & Sendable
    static var name: String { get }
    /// One sentence for the protocol reference.
    static var summary: String { get }
    /// Who answers it.
    static var route: CommandRoute { get }
    /// The session stages it is accepted in; nil: every stage.
    static var stages: Set<SessionStage>? { get }
    /// Whether it needs the microphone and the speaker: devices closed while idle are
    /// opened (a few tens of milliseconds) before it runs.
    static var needsDevices: Bool { get }
    /// Whether it starts hearing the learner (a session, a turn, an answer): the speech models
    /// are loaded beside it, if they are not yet.
    static var hearsLearner: Bool { get }
    /// Whether it practises: from the attract screen it begins a learner's visit (every
    /// command that hears the learner does; so do a typed turn and a sign-in).
    static var beginsVisit: Bool { get }
}

extension ControlCommand {
    public static var stages: Set<SessionStage>? { nil }
    public static var needsDevices: Bool { false }
    public static var hearsLearner: Bool { false }
    public static var beginsVisit: Bool { hearsLearner }

    /// Whether it may run in `stage`.
    public static func isAccepted(in stage: SessionStage) -> Bool { stages?.contains(stage) ?? true }
}

/// Who answers a command: the control server itself (the connection's own state), the
/// daemon (health, devices, sounds, configuration), the conversation's session (TalkCo), or
/// cue practice (Chatterbox). A daemon answers only the flow of its `backend.kind`.
public enum CommandRoute: String, Sendable, CaseIterable {
    case server, daemon, session, cue
}

/// Arguments of a command that takes none (members a client sends anyway are ignored).
public struct NoArguments: Codable, Sendable {
    public init() {}
}

extension ControlRequest {
    /// The request's arguments as `C` declares them, or the `bad_arguments` error naming
    /// the one that is wrong.
    public func arguments<C: ControlCommand>(_ command: C.Type) throws(ControlError) -> C.Arguments {
        try ProtocolDecoder.decode(C.Arguments.self, from: args)
    }
}

/// The way back to the client for one request of command `C`: only `C.Result` or an error
/// can be sent, exactly once (the control server drops a second answer).
public struct CommandReply<C: ControlCommand>: Sendable {
    public let send: @Sendable (Result<JSONValue, ControlError>) -> Void
    /// The client that asked (its id and credentials), when a socket's client did.
    public let client: ControlClientInfo?

    public init(_ send: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void, client: ControlClientInfo? = nil) {
        self.send = send
        self.client = client
    }

    public func callAsFunction(_ result: Result<C.Result, ControlError>) {
        switch result {
        case .success(let value): send(.success(ProtocolEncoder.encode(value)))
        case .failure(let error): send(.failure(error))
        }
    }

    public func succeed(_ value: C.Result) { self(.success(value)) }
    public func fail(_ error: ControlError) { send(.failure(error)) }
}
