import Dispatch
import FoundationEssentials
import PracticeNet

/// Routes requests to typed handlers: each command is registered once with its type, its
/// arguments are read by the table (a `bad_arguments` error names the member), and the
/// handler answers through a ``CommandReply`` that takes only the command's result type. No
/// command name is spelt at a call site: it comes from the command's type, and so do its
/// route, the stages it is accepted in and whether it needs the devices (``ControlCommand``).
///
/// The daemon builds one table at start from every piece's registrations and checks it
/// against ``ProtocolCatalog/commands`` (``verify(routes:)``): a command without a handler
/// stops the daemon at start, never a client at run time.
public final class CommandTable: @unchecked Sendable {
    public typealias Reply = @Sendable (Result<JSONValue, ControlError>) -> Void

    /// One command's route and handler.
    public struct Entry: @unchecked Sendable {
        public let command: any ControlCommand.Type
        /// Whether the entry only refuses its command (``refuse(route:_:)``): nothing is
        /// opened for it, whatever the command needs.
        public var refuses = false
        /// Returns the error to answer, if any (a closure with typed throws crashes the
        /// Swift 6.3 compiler here).
        let run: (ControlRequest, ControlClientInfo?, @escaping Reply) -> ControlError?

        public init(command: any ControlCommand.Type, run: @escaping (ControlRequest, ControlClientInfo?, @escaping Reply) -> ControlError?) {
            self.command = command
            self.run = run
        }
    }

    private var entries: [String: Entry] = [:]

    public init() {}

    /// Registers `command`'s handler, which throws ``ControlError`` (any other error is an
    /// `internal` one); registering a command twice is a programming error.
    public func register<C: ControlCommand>(_ command: C.Type, _ handler: @escaping (C.Arguments, CommandReply<C>) throws -> Void) {
        precondition(entries[C.name] == nil, "\(C.name) is registered twice")
        entries[C.name] = Entry(command: C.self) { request, client, reply in
            do {
                try handler(try request.arguments(C.self), CommandReply<C>(reply, client: client))
                return nil
            } catch let error as ControlError {
                return error
            } catch {
                return ControlError(.internalError, "\(error)")
            }
        }
    }

    /// Answers every command of `route` in the catalog with `error(name)`: the commands of
    /// a flow the daemon does not run, registered by the one it runs.
    public func refuse(route: CommandRoute, _ error: @escaping @Sendable (String) -> ControlError) {
        for command in ProtocolCatalog.commands where command.route == route {
            precondition(entries[command.name] == nil, "\(command.name) is registered twice")
            var entry = Entry(command: command) { request, _, _ in error(request.command) }
            entry.refuses = true
            entries[command.name] = entry
        }
    }

    /// Registers a handler that runs on `queue` (a piece's own serial queue): the arguments
    /// are read at once, on the caller's queue; a thrown error is answered from `queue`.
    public func register<C: ControlCommand>(_ command: C.Type, on queue: DispatchQueue,
                                            _ handler: @escaping (C.Arguments, CommandReply<C>) throws -> Void) {
        nonisolated(unsafe) let handler = handler
        register(C.self) { arguments, reply in
            queue.async {
                do {
                    try handler(arguments, reply)
                } catch let error as ControlError {
                    reply.fail(error)
                } catch {
                    reply.fail(ControlError(.internalError, "\(error)"))
                }
            }
        }
    }

    /// The entry for a request's command, if one is registered.
    public func entry(for name: String) -> Entry? { entries[name] }

    /// The commands of `routes` in the catalog without a handler, and the handlers of no
    /// command of those routes in the catalog.
    public func mismatches(routes: Set<CommandRoute>) -> (missing: [String], extra: [String]) {
        let wanted = Set(ProtocolCatalog.commands.filter { routes.contains($0.route) }.map { $0.name })
        return (wanted.subtracting(entries.keys).sorted(), Set(entries.keys).subtracting(wanted).sorted())
    }

    /// Stops the process when ``mismatches(routes:)`` finds any: a programming error, found
    /// at start.
    public func verify(routes: Set<CommandRoute>) {
        let (missing, extra) = mismatches(routes: routes)
        precondition(missing.isEmpty && extra.isEmpty, "command table: no handler for \(missing); handlers for no command of the catalog \(extra)")
    }

    /// Runs `entry`'s handler for `request` from `client`, answering its error if it throws.
    public func run(_ entry: Entry, _ request: ControlRequest, client: ControlClientInfo? = nil, _ reply: @escaping Reply) {
        if let error = entry.run(request, client, reply) { reply(.failure(error)) }
    }

    /// Runs the request's handler; false when no handler is registered for it.
    public func run(_ request: ControlRequest, client: ControlClientInfo? = nil, _ reply: @escaping Reply) -> Bool {
        guard let entry = entries[request.command] else { return false }
        run(entry, request, client: client, reply)
        return true
    }
}
