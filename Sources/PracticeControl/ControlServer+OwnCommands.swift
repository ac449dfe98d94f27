import AudioKernel
import PracticeProtocol

/// The control server's own commands (``CommandRoute/server``): they act on the connection
/// that sent them, so the server answers them itself, through a ``CommandTable`` of its own
/// like the daemon's. Run on the server's queue; `client.id` names the connection.
extension ControlServer {
    func makeOwnCommands() -> CommandTable {
        let table = CommandTable()
        table.register(Command.Hello.self) { [unowned self] arguments, reply in
            guard let connection = reply.client.flatMap({ connections[$0.id] }) else { return }
            // Negotiation comes first or not at all: after other requests it is refused.
            guard connection.requests == 1 else {
                throw ControlError(.invalidState, "hello must be the first request of a connection")
            }
            guard ControlProtocol.accepts(arguments.protocol) else {
                reply.fail(ControlError(.unsupportedProtocol, "this daemon speaks \(ControlProtocol.identifier), not \(arguments.protocol)"))
                connection.closeAfterFlush()
                return
            }
            reply.succeed(.init(protocol: ControlProtocol.identifier, version: "\(ControlProtocol.majorVersion).\(ControlProtocol.minorVersion)"))
        }
        table.register(Command.Subscribe.self) { [unowned self] arguments, reply in
            guard let connection = reply.client.flatMap({ connections[$0.id] }) else { return }
            connection.topics.formUnion(try known(arguments.topics))
            refreshFollowedTopics()
            reply.succeed(.init(topics: connection.topics.sorted { $0.rawValue < $1.rawValue }, seq: Int(seq)))
            // The current state first, so that the client never starts from nothing.
            if let snapshot = handler?.snapshot() {
                connection.send(ControlMessage.event(seq: seq, topic: DaemonSnapshot.topic.rawValue, name: DaemonSnapshot.name,
                                                     published: Monotonic.now(), data: ProtocolEncoder.encode(snapshot)))
            }
        }
        table.register(Command.Unsubscribe.self) { [unowned self] arguments, reply in
            guard let connection = reply.client.flatMap({ connections[$0.id] }) else { return }
            connection.topics.subtract(try known(arguments.topics))
            refreshFollowedTopics()
            reply.succeed(.init(topics: connection.topics.sorted { $0.rawValue < $1.rawValue }))
        }
        return table
    }

    /// The topics named (all of the server's when none are), or the error naming one it
    /// does not have.
    private func known(_ names: [EventTopic]?) throws(ControlError) -> [EventTopic] {
        let names = names ?? Array(topics)
        if let unknown = names.first(where: { !topics.contains($0) }) {
            throw ControlError(.badArguments, "'\(unknown.rawValue)' cannot be subscribed to; topics are \(topics.map(\.rawValue).sorted().joined(separator: ", "))")
        }
        return names
    }
}
