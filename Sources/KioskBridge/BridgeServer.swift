#if canImport(Glibc)
import Glibc
#endif

/// The kiosk UI's bridge: one process, one thread, one poll(2) loop over a loopback listener,
/// its connections and their daemon sockets. It serves the UI's files and relays the page's
/// WebSocket to practiced's control socket (``BridgeConnection``). Nothing is forked per
/// connection, so a browser's idle keep-alive connections cost a few KB each.
public final class BridgeServer: @unchecked Sendable {  // stop() from any thread; the rest on run()'s
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        /// 0 picks a free port (``port`` says which).
        public var port: UInt16 = 8642
        public var webRoot: String
        public var unixTarget: String
        public var token: BridgeToken
        /// More connections than this are closed at once (a browser keeps about six).
        public var maximumConnections = 32
        /// An HTTP connection with no request for this long is closed (not a WebSocket).
        public var idleSeconds = 60

        public init(webRoot: String, unixTarget: String, token: BridgeToken) {
            self.webRoot = webRoot
            self.unixTarget = unixTarget
            self.token = token
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The path the page opens its WebSocket at (websockify's, which the page keeps).
    public static let webSocketPath = "/websockify"

    let files: StaticFiles
    let token: BridgeToken
    let unixTarget: String
    private let configuration: Configuration
    private let listener: Int32
    private let wake: (read: Int32, write: Int32)
    private var connections: [BridgeConnection] = []
    private let logLine: @Sendable (String) -> Void
    /// The port listened on.
    public let port: UInt16

    /// Binds the listener (so that a taken port fails here, before anything runs).
    public init(_ configuration: Configuration, log: @escaping @Sendable (String) -> Void) throws(Failure) {
        self.configuration = configuration
        token = configuration.token
        unixTarget = configuration.unixTarget
        logLine = log
        do { files = try StaticFiles(root: configuration.webRoot) } catch { throw Failure(description: "no UI folder \(configuration.webRoot)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = configuration.port.bigEndian
        guard inet_pton(AF_INET, configuration.host, &address.sin_addr) == 1 else {
            throw Failure(description: "\(configuration.host) is not an IPv4 address")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "cannot listen on \(configuration.host):\(configuration.port): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: actual.sin_port)
        listener = fd
        var pipeFDs: [Int32] = [-1, -1]
        // pipe2 and accept4 need _GNU_SOURCE, which Swift's Glibc does not define: the flags by hand.
        guard pipe(&pipeFDs) == 0 else { throw Failure(description: "pipe: \(String(cString: strerror(errno)))") }
        for fd in pipeFDs { Self.setFlags(fd) }
        wake = (pipeFDs[0], pipeFDs[1])
    }

    deinit {
        connections.removeAll()
        close(listener)
        close(wake.read)
        close(wake.write)
    }

    func log(_ line: String) { logLine(line) }

    /// Ends ``run()`` from any thread or a signal handler's thread.
    public func stop() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    /// Connections open now (tests, and the log at exit).
    public private(set) var openConnections = 0

    /// Serves until ``stop()``; then closes every connection.
    public func run() {
        log("listening on \(configuration.host):\(port), serving \(files.root), relaying \(Self.webSocketPath) to \(unixTarget)")
        var descriptors: [pollfd] = []
        loop: while true {
            descriptors.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0))
            descriptors.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0))
            for connection in connections {
                var events: Int16 = 0
                if connection.wantsClientInput { events |= Int16(POLLIN) }
                if connection.wantsClientOutput { events |= Int16(POLLOUT) }
                descriptors.append(pollfd(fd: connection.fd, events: events, revents: 0))
                var daemonEvents: Int16 = 0
                if connection.wantsDaemonInput { daemonEvents |= Int16(POLLIN) }
                if connection.wantsDaemonOutput { daemonEvents |= Int16(POLLOUT) }
                // A negative fd is ignored by poll: the slot keeps the indices in step.
                descriptors.append(pollfd(fd: connection.daemon >= 0 ? connection.daemon : -1, events: daemonEvents, revents: 0))
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), 1000)
            if ready < 0 {
                if errno == EINTR { continue }
                log("poll: \(String(cString: strerror(errno)))")
                break
            }
            if descriptors[0].revents != 0 { break loop }
            let now = Self.seconds()
            for (index, connection) in connections.enumerated() {
                serve(connection, client: descriptors[2 + 2 * index].revents, daemon: descriptors[3 + 2 * index].revents, now: now)
            }
            if descriptors[1].revents & Int16(POLLIN) != 0 { accept(now: now) }
            // Idle HTTP connections are closed; one still closing after as long (its client
            // reads nothing of the answer) is dropped with what it has not taken.
            for connection in connections where !connection.isWebSocket && now - connection.lastActivity > UInt64(configuration.idleSeconds) {
                if case .closing = connection.state { connection.abandon() } else { connection.finish() }
            }
            connections.removeAll { $0.isFinished }
            openConnections = connections.count
        }
        log("stopping: closing \(connections.count) connections")
        connections.removeAll()
        openConnections = 0
    }

    private func serve(_ connection: BridgeConnection, client: Int16, daemon: Int16, now: UInt64) {
        let readable = Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)
        if client & readable != 0 && connection.wantsClientInput {
            switch read(connection.fd) {
            case .bytes(let bytes):
                connection.lastActivity = now
                connection.input += bytes
                connection.clientBytesArrived(server: self)
            case .closed:
                if connection.isWebSocket || connection.wantsClientOutput { log("\(connection.peer): the client went away") }
                return markGone(connection)
            case .again:
                break
            }
        }
        if daemon & readable != 0 && connection.wantsDaemonInput {
            switch read(connection.daemon) {
            case .bytes(let bytes): connection.daemonBytesArrived(bytes[...])
            case .closed: connection.daemonClosed(server: self)
            case .again: break
            }
        }
        if connection.wantsDaemonOutput && !connection.flushToDaemon() { connection.daemonClosed(server: self) }
        if connection.wantsClientOutput && !connection.flushToClient() { markGone(connection) }
    }

    /// The client is gone: nothing more is written to it; the connection is dropped.
    private func markGone(_ connection: BridgeConnection) {
        connection.abandon()
        connections.removeAll { $0 === connection }
    }

    private enum ReadResult { case bytes([UInt8]), closed, again }

    /// One buffer for every read of the loop's one thread.
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)

    private func read(_ fd: Int32) -> ReadResult {
        while true {
            let n = readBuffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { return .bytes(Array(readBuffer[..<n])) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .again }
            return .closed
        }
    }

    private func accept(now: UInt64) {
        while true {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let fd = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
            }
            if fd >= 0 { Self.setFlags(fd) }
            guard fd >= 0 else {
                if errno == EINTR { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK { log("accept: \(String(cString: strerror(errno)))") }
                return
            }
            let peer = "127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
            guard connections.count < configuration.maximumConnections else {
                log("\(peer): refused, \(configuration.maximumConnections) connections already open")
                var response = HTTPResponse.error(503)
                _ = send(fd, &response, response.count, Int32(MSG_NOSIGNAL))
                close(fd)
                continue
            }
            connections.append(BridgeConnection(fd: fd, peer: peer, now: now))
        }
    }

    /// A new non-blocking connection to the daemon's socket, or nil (errno says why).
    func connectToDaemon() -> Int32? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(unixTarget.utf8)
        guard path.count < MemoryLayout.size(ofValue: address.sun_path) else { errno = ENAMETOOLONG; return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.enumerated() { raw[i] = byte }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let saved = errno
            close(fd)
            errno = saved
            return nil
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// Non-blocking and close-on-exec.
    static func setFlags(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }

    static func seconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec)
    }
}
