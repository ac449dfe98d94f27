import FoundationEssentials

/// Routes requests to typed handlers: each command is registered once with its type, its
/// arguments are read by the table (a `bad_arguments` error names the member), and the
/// handler answers through a ``CommandReply`` that takes only the command's result type. No
/// command name is spelt at a call site: it comes from the command's type.
public final class CommandTable: @unchecked Sendable {
    public typealias Reply = @Sendable (Result<JSONValue, ControlError>) -> Void
    /// Each returns the error to answer, if any (a closure with typed throws crashes the
    /// Swift 6.3 compiler here).
    private var handlers: [String: (ControlRequest, @escaping Reply) -> ControlError?] = [:]

    public init() {}

    /// Registers `command`'s handler, which throws ``ControlError`` (any other error is an
    /// `internal` one); registering a command twice is a programming error.
    public func register<C: ControlCommand>(_ command: C.Type, _ handler: @escaping (C.Arguments, CommandReply<C>) throws -> Void) {
        precondition(handlers[C.name] == nil, "\(C.name) is registered twice")
        handlers[C.name] = { request, reply in
            do {
                try handler(try request.arguments(C.self), CommandReply<C>(reply))
                return nil
            } catch let error as ControlError {
                return error
            } catch {
                return ControlError(.internalError, "\(error)")
            }
        }
    }

    /// The names registered.
    public var names: Set<String> { Set(handlers.keys) }

    /// Runs the request's handler; false when no handler is registered for it.
    public func run(_ request: ControlRequest, _ reply: @escaping Reply) throws(ControlError) -> Bool {
        guard let handler = handlers[request.command] else { return false }
        if let error = handler(request, reply) { throw error }
        return true
    }
}
