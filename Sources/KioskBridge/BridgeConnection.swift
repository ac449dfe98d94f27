#if canImport(Glibc)
import Glibc
#endif

/// One TCP connection of the bridge: HTTP requests for the UI's files (kept alive), until one
/// asks for the WebSocket; from then on a ``WebSocketSession`` whose messages go to the
/// daemon's control socket and whose replies are the socket's bytes in binary frames. Driven
/// by ``BridgeServer``'s poll loop on one thread: no locks, nothing blocks.
final class BridgeConnection {
    enum State {
        case http
        case webSocket(WebSocketSession)
        /// Writing what is left, then closing.
        case closing
    }

    let fd: Int32
    let peer: String
    private(set) var state: State = .http
    /// The daemon's control socket, once the WebSocket is open.
    private(set) var daemon: Int32 = -1
    var input: [UInt8] = []
    /// How much of `input` was searched for a head's end without finding it: a head that comes
    /// a byte at a time is not searched from its start again each time.
    private var searched = 0
    private(set) var output: [UInt8] = []
    private var outputOffset = 0
    private(set) var toDaemon: [UInt8] = []
    private var toDaemonOffset = 0
    var lastActivity: UInt64
    private(set) var isFinished = false

    /// Past these the other side is not read until the buffer drains: a page or a daemon that
    /// stops reading holds at most this much here (the daemon drops a client that falls far
    /// behind, and the bridge then closes the WebSocket).
    static let outputLimit = 4 * 1024 * 1024
    static let toDaemonLimit = 1024 * 1024

    init(fd: Int32, peer: String, now: UInt64) {
        self.fd = fd
        self.peer = peer
        lastActivity = now
    }

    var isWebSocket: Bool { if case .webSocket = state { true } else { false } }
    var wantsClientInput: Bool {
        switch state {
        case .http: output.count - outputOffset < Self.outputLimit
        case .webSocket: toDaemon.count - toDaemonOffset < Self.toDaemonLimit
        case .closing: false
        }
    }
    var wantsClientOutput: Bool { outputOffset < output.count }
    var wantsDaemonInput: Bool { daemon >= 0 && isWebSocket && output.count - outputOffset < Self.outputLimit }
    var wantsDaemonOutput: Bool { daemon >= 0 && toDaemonOffset < toDaemon.count }

    /// Handles what the client sent (already appended to `input`).
    func clientBytesArrived(server: BridgeServer) {
        while true {
            switch state {
            case .closing:
                input.removeAll()
                return
            case .webSocket(var session):
                let actions = session.receive(&input)
                state = .webSocket(session)
                for action in actions {
                    switch action {
                    case .deliver(let payload): toDaemon += payload
                    case .send(let bytes): output += bytes
                    case .close(let code, let reason):
                        server.log("\(peer): WebSocket closed (\(code): \(reason))")
                        finish()
                    }
                }
                return
            case .http:
                switch HTTPRequestHead.parse(input, searchFrom: searched) {
                case .incomplete:
                    searched = max(0, input.count - 3)
                    return
                case .invalid(let status, let reason):
                    server.log("\(peer): refused, \(status) (\(reason))")
                    output += HTTPResponse.error(status)
                    finish()
                case .head(let head, let length):
                    input.removeFirst(length)
                    searched = 0
                    handle(head, server: server)
                }
            }
        }
    }

    private func handle(_ head: HTTPRequestHead, server: BridgeServer) {
        let path = head.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard WebSocketHandshake.isUpgrade(head) else {
            guard head.target.utf8.count <= 2048 else {
                output += HTTPResponse.error(414)
                return finish()
            }
            let (status, bytes) = server.files.response(method: head.method, target: head.target, keepAlive: head.keepAlive)
            if status >= 400 { server.log("\(peer): \(head.method) answered \(status)") }
            output += bytes
            if !head.keepAlive || status >= 400 { finish() }
            return
        }
        guard path == BridgeServer.webSocketPath else {
            server.log("\(peer): refused, 404 (a WebSocket at another path)")
            output += HTTPResponse.error(404)
            return finish()
        }
        switch WebSocketHandshake.answer(head, token: server.token) {
        case .refuse(let status, let response, let reason):
            server.log("\(peer): refused, \(status) (\(reason))")
            output += response
            finish()
        case .accept(let response):
            guard let socket = server.connectToDaemon() else {
                server.log("\(peer): refused, 502 (the daemon's socket \(server.unixTarget) does not answer: \(String(cString: strerror(errno))))")
                output += HTTPResponse.error(502)
                return finish()
            }
            daemon = socket
            output += response
            state = .webSocket(WebSocketSession())
            server.log("\(peer): WebSocket open, relayed to \(server.unixTarget)")
        }
    }

    /// The daemon's bytes, one binary frame per read.
    func daemonBytesArrived(_ bytes: ArraySlice<UInt8>) {
        output += WebSocketSession.frame(.binary, bytes)
    }

    /// The daemon closed its socket (it stopped or restarted): the page is told "going away"
    /// and reconnects.
    func daemonClosed(server: BridgeServer) {
        guard isWebSocket else { return }
        server.log("\(peer): the daemon closed its socket; WebSocket closed (1001)")
        output += WebSocketSession.closeFrame(code: 1001, reason: "the daemon closed its socket")
        finish()
    }

    /// Writes what it can to the client; false when the client is gone.
    func flushToClient() -> Bool {
        guard Self.flush(&output, from: &outputOffset, to: fd) else { return false }
        if output.isEmpty, case .closing = state { isFinished = true }
        return true
    }

    /// Writes what it can to the daemon; false when the daemon's socket failed.
    func flushToDaemon() -> Bool {
        Self.flush(&toDaemon, from: &toDaemonOffset, to: daemon)
    }

    /// Sends `buffer` from `offset` on to `fd` until it would block; a buffer sent whole is
    /// emptied (its storage kept when small). False when the peer failed.
    private static func flush(_ buffer: inout [UInt8], from offset: inout Int, to fd: Int32) -> Bool {
        while offset < buffer.count {
            let n = buffer.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            guard n > 0 else { return false }
            offset += n
        }
        if offset == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.count <= 64 * 1024)
            offset = 0
        }
        return true
    }

    /// Stops reading; the connection closes once its output is written.
    func finish() {
        state = .closing
        closeDaemon()
        if outputOffset == output.count { isFinished = true }
    }

    /// Gives up on a client that takes nothing: closed with its output unwritten.
    func abandon() {
        state = .closing
        closeDaemon()
        isFinished = true
    }

    func closeDaemon() {
        if daemon >= 0 { close(daemon); daemon = -1 }
        toDaemon.removeAll()
        toDaemonOffset = 0
    }

    deinit {
        closeDaemon()
        close(fd)
    }
}
