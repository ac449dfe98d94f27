import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeNet
import PracticeProtocol
import PracticeSupport
import Synchronization

/// Answers the commands the server does not answer itself (everything but `hello`,
/// `subscribe` and `unsubscribe`).
public protocol ControlCommandHandler: AnyObject, Sendable {
    /// Handles one request. Call `reply` exactly once, from any thread, whenever ready.
    func handle(_ request: ControlRequest, client: ControlClientInfo, reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void)
    /// The current state, sent as the first event to a client that subscribes.
    func snapshot() -> DaemonSnapshot
}


public struct ControlServerLimits: Equatable, Sendable {
    public var maximumClients = 64
    /// Unsent bytes a client may have queued before it is disconnected (never waited for).
    public var queueBytes = 1 << 20
    /// A client that neither subscribes nor sends for this long is closed.
    public var idleSeconds = 60.0
    /// A client's requests being answered at once; its further lines stay unread (in its
    /// socket) until a reply goes out: backpressure, as HTTP/2 bounds concurrent streams.
    public var requestsInFlight = 4
    /// A client's requests per second, with a burst of as many: faster ones wait unread.
    public var requestsPerSecond = 200.0

    public init() {}
}

/// Counters of the control server, for `status` and `metrics`.
public struct ControlServerStatistics: Equatable, Sendable {
    public var clients = 0
    public var connectionsAccepted = 0
    public var connectionsRefused = 0
    public var slowClientsDropped = 0
    /// Times a client was held back by its request rate.
    public var clientsThrottled = 0
    public var idleClientsClosed = 0
    public var requests = 0
    public var errors: [String: Int] = [:]
    public var eventsPublished: UInt64 = 0

    public init() {}
}

/// The control socket's server: accepts local clients, checks who they are, reads request
/// lines, writes replies and events. One serial queue owns every connection; reads and
/// writes are non-blocking, driven by ``DescriptorWatch`` (the daemon's own epoll thread), so a client that stops reading
/// never stalls the daemon: its queue grows to the limit and it is disconnected.
public final class ControlServer: @unchecked Sendable {
    public let queue = DispatchQueue(label: "practiced.control")
    /// Whose request line is served next (on `queue`).
    private(set) lazy var scheduler = ServiceScheduler(queue: queue)
    private let listener: UnixListener
    private let serverVersion: String
    private let capabilities: [String]
    let topics: Set<EventTopic>
    /// What threads that must not wait for the queue read, under the server's one lock: the
    /// topics some client follows (the capture thread asks before it wakes anyone for a
    /// level), kept from the queue, and the counters (a command handler asks for them too).
    private let shared = Locked<(followed: Set<EventTopic>, statistics: ControlServerStatistics)>(([], ControlServerStatistics()))
    private let socketGroup: UInt32?
    private let logger: Logger
    private(set) weak var handler: ControlCommandHandler?
    /// Its time: the idle check, the rate limit, the lingering close (Dispatch's in the
    /// daemon; a test's own in ``ControlServerClockTests``).
    let clock: any PracticeClock

    // Touched only on the queue.
    private var limits: ControlServerLimits
    private var acceptWatch: DescriptorWatch?
    private var idleTimer: RepeatingTimer?
    var connections: [Int: ControlConnection] = [:]
    /// hello, subscribe and unsubscribe (``CommandRoute/server``), checked against the
    /// catalog when the server is made (`ControlServer+OwnCommands.swift`).
    private(set) lazy var ownCommands = makeOwnCommands()
    private var nextClientID = 1
    private(set) var seq: UInt64 = 0
    private var stopped = false
    /// accept() is failing (out of descriptors): logged when it starts and when it ends.
    private var acceptFailing = false
    /// The one read buffer: every connection reads on the queue, one at a time.
    var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    public convenience init(listener: UnixListener, serverVersion: String, capabilities: [String], topics: Set<EventTopic>,
                            socketGroup: UInt32?, limits: ControlServerLimits, logger: Logger, handler: ControlCommandHandler) {
        self.init(listener: listener, serverVersion: serverVersion, capabilities: capabilities, topics: topics,
                  socketGroup: socketGroup, limits: limits, logger: logger, handler: handler, clock: DispatchClock())
    }

    package init(listener: UnixListener, serverVersion: String, capabilities: [String], topics: Set<EventTopic>,
         socketGroup: UInt32?, limits: ControlServerLimits, logger: Logger, handler: ControlCommandHandler, clock: any PracticeClock) {
        self.clock = clock
        self.listener = listener
        self.serverVersion = serverVersion
        self.capabilities = capabilities
        self.topics = topics
        self.socketGroup = socketGroup
        self.limits = limits
        self.logger = logger
        self.handler = handler
        ownCommands.verify(routes: [.server])
    }

    public func start() {
        queue.sync {
            let watch = DescriptorWatch(fd: listener.fd, queue: queue, onReadable: { [unowned self] in acceptPending() })
            watch.setReading(true)
            acceptWatch = watch
            idleTimer = RepeatingTimer(clock: clock, every: 1, on: queue) { [unowned self] in closeIdleClients() }
        }
    }

    /// Closes every connection and the listening socket (removing its file if the daemon
    /// made it).
    public func stop() {
        queue.sync {
            guard !stopped else { return }
            stopped = true
            acceptWatch?.cancel()  // before the listener closes: out of epoll first
            idleTimer?.cancel()
            for connection in connections.values { connection.close() }
            connections.removeAll()
            refreshFollowedTopics()
            listener.close()
        }
    }

    public func update(limits: ControlServerLimits) { queue.async { self.limits = limits } }

    public var statisticsSnapshot: ControlServerStatistics { shared.withLock { $0.statistics } }

    /// Sends an event to every client subscribed to its topic. Any thread.
    public func publish<E: ProtocolEvent>(_ event: E) {
        publish(topic: E.topic, name: E.name, data: ProtocolEncoder.encode(event))
    }

    /// An event whose type is known only at run time (the session's publisher).
    public func publish(any event: any ProtocolEvent) { publish(event) }

    private func publish(topic: EventTopic, name: String, data: JSONValue) {
        let published = Monotonic.now()
        queue.async { [self] in
            seq += 1
            shared.withLock { $0.statistics.eventsPublished = seq }
            let subscribers = connections.values.filter { $0.topics.contains(topic) }
            guard !subscribers.isEmpty else { return }
            let line = ControlMessage.event(seq: seq, topic: topic.rawValue, name: name, published: published, data: data)
            for connection in subscribers { connection.send(line) }
        }
    }

    // MARK: - Connections (on the queue)

    private func acceptPending() {
        while true {
            // accept4 needs _GNU_SOURCE; the flags are set by hand.
            let fd = accept(listener.fd, nil, nil)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                // The kernel would otherwise hold ~200 KB for a client that stopped reading
                // before its queue (`socket.client_queue_bytes`) even starts to fill: 32 KB
                // (doubled by the kernel) keeps the time to find a stalled client short.
                var sendBuffer: Int32 = 32 * 1024
                _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
            }
            if fd < 0 {
                let error = errno
                if error == EINTR || error == ECONNABORTED { continue }
                if error == EAGAIN || error == EWOULDBLOCK {
                    // The episode ends once every waiting client is in, not at the first accept
                    // that succeeds: near the limit a descriptor the daemon closes for itself
                    // lets one client in before the next accept fails again, and the warning
                    // came twice (CI, under load).
                    if acceptFailing {
                        acceptFailing = false
                        logger.notice("accepting clients on the control socket again")
                    }
                    return
                }
                if !acceptFailing {
                    // Once per episode: a daemon out of descriptors would log ten lines a second.
                    acceptFailing = true
                    logger.warning("accept on the control socket: \(Errno(rawValue: error).description); clients wait in the backlog")
                }
                if error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM {
                    // The pending client stays readable: accepting again at once would spin
                    // a core until a descriptor is free. Wait a little, as nginx does.
                    acceptWatch?.setReading(false)
                    clock.after(0.1, on: queue) { [weak self] in
                        guard let self, !stopped else { return }
                        acceptWatch?.setReading(true)
                    }
                }
                return
            }
            admit(fd)
        }
    }

    private func admit(_ fd: Int32) {
        guard let credentials = PeerCredentials.of(fd) else {
            Glibc.close(fd)
            return
        }
        let refuse = { (error: ControlError) in
            self.shared.withLock {
                $0.statistics.connectionsRefused += 1
                $0.statistics.errors[error.code.rawValue, default: 0] += 1
            }
            let line = ControlMessage.error(id: .null, error)
            _ = line.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            Glibc.close(fd)
        }
        guard credentials.isAllowed(daemonUID: getuid(), group: socketGroup) else {
            logger.warning("refused a control client: pid \(credentials.pid), uid \(credentials.uid) is not allowed")
            return refuse(ControlError(.permissionDenied, "uid \(credentials.uid) may not use this socket"))
        }
        guard connections.count < limits.maximumClients else {
            logger.warning("refused a control client (pid \(credentials.pid), uid \(credentials.uid)): \(limits.maximumClients) clients already")
            return refuse(ControlError(.tooManyClients, "the daemon serves \(limits.maximumClients) clients already", retryable: true))
        }
        let id = nextClientID
        nextClientID += 1
        let connection = ControlConnection(id: id, fd: fd, credentials: credentials, server: self)
        connections[id] = connection
        shared.withLock { $0.statistics.connectionsAccepted += 1; $0.statistics.clients = connections.count }
        logger.debug("client \(id) connected: pid \(credentials.pid), uid \(credentials.uid)")
        connection.start()
        connection.send(ControlMessage.hello(serverVersion: serverVersion, capabilities: capabilities))
    }

    func closed(_ connection: ControlConnection, reason: String) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        refreshFollowedTopics()
        shared.withLock { $0.statistics.clients = connections.count }
        logger.debug("client \(connection.id) (pid \(connection.credentials.pid)) closed: \(reason)")
    }

    func tooSlow(_ connection: ControlConnection) {
        shared.withLock { $0.statistics.slowClientsDropped += 1 }
        logger.warning("client \(connection.id) (pid \(connection.credentials.pid), uid \(connection.credentials.uid)) does not read: "
                       + "over \(limits.queueBytes) bytes queued, disconnected")
    }

    var queueLimit: Int { limits.queueBytes }
    var inFlightLimit: Int { limits.requestsInFlight }
    var rateLimit: Double { limits.requestsPerSecond }

    func throttled(_ connection: ControlConnection) {
        shared.withLock { $0.statistics.clientsThrottled += 1 }
        logger.info("client \(connection.id) (pid \(connection.credentials.pid)) sends over \(Int(limits.requestsPerSecond)) requests/s: held back")
    }

    private func closeIdleClients() {
        let now = clock.now
        let limit = UInt64(limits.idleSeconds * 1e9)
        // A client waiting for an answer is not idle, however long the backend takes (a
        // `session.start` may wait 15 s for the server, a retried GET minutes); its idle
        // time counts from the last answer it got.
        for connection in connections.values
        where connection.topics.isEmpty && connection.inFlight == 0 && connection.pendingCount == 0 && now - connection.lastActivity > limit {
            shared.withLock { $0.statistics.idleClientsClosed += 1 }
            logger.info("client \(connection.id) (pid \(connection.credentials.pid)) idle for \(Int(limits.idleSeconds)) s, closed")
            connection.close()
            closed(connection, reason: "idle")
        }
    }

    // MARK: - Requests (on the queue)

    func received(_ line: [UInt8], from connection: ControlConnection) {
        shared.withLock { $0.statistics.requests += 1 }
        let request: ControlRequest
        switch ControlRequestDecoder.decode(line) {
        case .failure(let failure):
            reply(connection, id: failure.id, .failure(failure.error))
            if failure.error.code == .lineTooLong { connection.closeAfterFlush() }
            return
        case .success(let decoded):
            request = decoded
        }
        connection.requests += 1
        // The server's own commands (hello, subscribe, unsubscribe) go through a table like
        // the daemon's, keyed by their types; every other command goes to the handler.
        if let entry = ownCommands.entry(for: request.command) {
            let info = ControlClientInfo(id: connection.id, credentials: connection.credentials)
            return ownCommands.run(entry, request, client: info) { [unowned self] in reply(connection, id: request.id, $0) }
        }
        guard let handler else { return reply(connection, id: request.id, .failure(ControlError(.internalError, "shutting down", retryable: true))) }
        let info = ControlClientInfo(id: connection.id, credentials: connection.credentials)
        let id = request.id
        connection.inFlight += 1
        handler.handle(request, client: info) { [weak self, weak connection] result in
            guard let self, let connection else { return }
            self.queue.async { self.answer(connection, id: id, result) }
        }
    }

    /// Whether any client follows `topic`. Not from the server's queue.
    public func hasSubscribers(to topic: EventTopic) -> Bool {
        queue.sync { connections.values.contains { $0.topics.contains(topic) } }
    }

    /// Subscribes a client to topics on behalf of a command (`level.watch`).
    public func subscribe(client id: Int, to topics: [EventTopic]) {
        queue.async {
            self.connections[id]?.topics.formUnion(topics)
            self.refreshFollowedTopics()
        }
    }

    /// Unsubscribes a client from topics on behalf of a command (`level.watch` with
    /// `enabled: false`).
    public func unsubscribe(client id: Int, from topics: [EventTopic]) {
        queue.async {
            self.connections[id]?.topics.subtract(topics)
            self.refreshFollowedTopics()
        }
    }

    /// Whether any client follows `topic`, from any thread, without waiting for the queue
    /// (a subscription made this moment may be seen a moment later).
    public func isFollowed(_ topic: EventTopic) -> Bool { shared.withLock { $0.followed.contains(topic) } }

    /// On the queue, after any change of a client's topics or of the clients.
    func refreshFollowedTopics() {
        let followed = connections.values.reduce(into: Set<EventTopic>()) { $0.formUnion($1.topics) }
        shared.withLock { $0.followed = followed }
    }

    /// A request's answer: sent, and the client's next request may be served.
    private func answer(_ connection: ControlConnection, id: JSONValue, _ result: Result<JSONValue, ControlError>) {
        reply(connection, id: id, result)
        connection.requestDone()
    }

    func reply(_ connection: ControlConnection, id: JSONValue, _ result: Result<JSONValue, ControlError>) {
        switch result {
        case .success(let value):
            connection.send(ControlMessage.ok(id: id, result: value))
        case .failure(let error):
            shared.withLock { $0.statistics.errors[error.code.rawValue, default: 0] += 1 }
            if error.code != .unknownCommand && error.code != .badArguments {
                logger.info("client \(connection.id): \(error)")
            } else {
                logger.debug("client \(connection.id): \(error)")
            }
            connection.send(ControlMessage.error(id: id, error))
        }
    }
}
