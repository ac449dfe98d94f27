import Foundation
import PracticeSupport
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on a TCP socket: one thread per connection, keep-alive and
/// pipelining, bodies by `Content-Length` or chunked, limits from ``HTTPRequestParser``.
///
/// The simulator needs exactly what the real backend does on the wire (a status line sent
/// before any event, chunks flushed one event at a time, connections kept open between
/// calls, a connection that can be dropped in the middle of a reply), so it writes the
/// bytes itself rather than going through a framework. A thread per connection is plenty
/// for a test backend and keeps a slowly paced reply from holding up anybody else.
public final class HTTPServer: @unchecked Sendable {
    /// Handles one request; writes exactly one response through the writer (or drops the
    /// connection). Runs on the connection's thread, so it may block to pace a stream.
    public typealias Handler = @Sendable (HTTPRequest, HTTPResponseWriter) -> Void

    public let host: String
    public private(set) var port: UInt16
    public var maximumBodyBytes = 16 * 1024 * 1024
    /// Connections beyond this are answered 503 and closed.
    public var maximumConnections = 256

    private let handler: Handler
    /// The server's time (a wait for a peer's close): Dispatch's unless it is handed one.
    private let clock: any PracticeClock
    private let lock = NSLock()
    private var listenFD: Int32 = -1
    private var connections: [Int32: Bool] = [:]
    private var stopped = false
    private var acceptThread: Thread?
    private let allClosed = NSCondition()

    public convenience init(host: String = "127.0.0.1", port: UInt16 = 0, handler: @escaping Handler) {
        self.init(host: host, port: port, clock: DispatchClock(), handler: handler)
    }

    package init(host: String = "127.0.0.1", port: UInt16 = 0, clock: any PracticeClock, handler: @escaping Handler) {
        self.host = host
        self.port = port
        self.clock = clock
        self.handler = handler
    }

    deinit { stop() }

    /// Binds, listens and starts accepting; returns the bound port (useful with port 0).
    @discardableResult
    public func start() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPServerError.socket("socket", errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(fd)
            throw HTTPServerError.badHost(host)
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw HTTPServerError.socket("bind \(host):\(port)", code)
        }
        guard listen(fd, 128) == 0 else {
            let code = errno
            close(fd)
            throw HTTPServerError.socket("listen", code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        lock.withLock { listenFD = fd }
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.name = "http-accept"
        thread.start()
        acceptThread = thread
        return port
    }

    /// Stops accepting, closes every connection (a reply in progress is cut off) and waits
    /// until their threads are done.
    public func stop() {
        // Descriptors are only shut down here, under the lock; each is closed by the thread
        // that uses it. Closing the listener here let an accept thread that was between two
        // accept() calls take the next server's connections: the number had been reused.
        lock.withLock {
            if stopped { return }
            stopped = true
            if listenFD >= 0 { shutdown(listenFD, Int32(SHUT_RDWR)) }  // wakes the blocked accept()
            listenFD = -1
            for connection in connections.keys { shutdown(connection, Int32(SHUT_RDWR)) }
        }
        allClosed.lock()
        while lock.withLock({ !connections.isEmpty }) {
            _ = allClosed.wait(until: Date().addingTimeInterval(0.1))
        }
        allClosed.unlock()
    }

    /// The number of open connections.
    public var connectionCount: Int { lock.withLock { connections.count } }
    /// Connections admitted since the start (open or closed since).
    public var connectionsAdmitted: Int { lock.withLock { admittedTotal } }
    private var admittedTotal = 0

    private func acceptLoop(_ fd: Int32) {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM {
                    usleep(10_000)  // out of descriptors or memory for now: back off, keep listening
                    continue
                }
                close(fd)  // shut down by stop(): this thread owns the listener
                return
            }
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let admitted: Bool = lock.withLock {
                if stopped || connections.count >= maximumConnections { return false }
                connections[client] = true
                admittedTotal += 1
                return true
            }
            guard admitted else {
                let writer = HTTPResponseWriter(fd: client, keepAlive: false, clock: clock)
                writer.respond(status: 503, contentType: "text/plain", body: Array("too many connections\n".utf8))
                close(client)
                continue
            }
            let thread = Thread { [self] in serve(client) }
            thread.name = "http-connection"
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            // Closed under the lock, with the entry, so stop() never shuts down a number
            // that accept() has already handed to a newer connection.
            lock.withLock {
                _ = connections.removeValue(forKey: fd)
                close(fd)
            }
            allClosed.lock()
            allClosed.broadcast()
            allClosed.unlock()
        }
        var parser = HTTPRequestParser()
        parser.maximumBodyBytes = maximumBodyBytes
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            let requests: [HTTPRequest]
            do {
                requests = try parser.feed(Array(buffer[0..<n]))
            } catch {
                let writer = HTTPResponseWriter(fd: fd, keepAlive: false, clock: clock)
                writer.respond(status: error.status, contentType: "text/plain", body: Array("\(error.reason)\n".utf8))
                return
            }
            for request in requests {
                let writer = HTTPResponseWriter(fd: fd, keepAlive: request.keepAlive, clock: clock)
                handler(request, writer)
                if !writer.hasResponded {
                    writer.respond(status: 500, contentType: "text/plain", body: Array("Internal Server Error".utf8))
                }
                if writer.connectionClosed || !request.keepAlive { return }
            }
        }
    }
}

public enum HTTPServerError: Error, CustomStringConvertible {
    case socket(String, Int32)
    case badHost(String)

    public var description: String {
        switch self {
        case .socket(let call, let code): return "\(call): \(String(cString: strerror(code)))"
        case .badHost(let host): return "not an IPv4 address: \(host)"
        }
    }
}

/// Writes one response on a connection: a whole body with `Content-Length`, or a chunked
/// stream whose every chunk is sent at once (TCP_NODELAY, no buffering), or nothing at all
/// when the connection is dropped.
public final class HTTPResponseWriter: @unchecked Sendable {
    private let fd: Int32
    private let keepAlive: Bool
    public private(set) var hasResponded = false
    /// The connection must not be used again (dropped, or a chunked reply left unfinished).
    public private(set) var connectionClosed = false
    /// A write failed: the client has gone (hung up the stream).
    public private(set) var peerGone = false
    private var chunked = false
    private let clock: any PracticeClock

    init(fd: Int32, keepAlive: Bool, clock: any PracticeClock) {
        self.fd = fd
        self.keepAlive = keepAlive
        self.clock = clock
    }

    /// A complete response with a body.
    public func respond(status: Int, contentType: String = "application/json", headers: [(String, String)] = [], body: [UInt8]) {
        hasResponded = true
        send(head(status, contentType, [("content-length", "\(body.count)")] + headers) + body)
        if !keepAlive { connectionClosed = true }
    }

    /// Starts a chunked response: the status line and headers go out at once, as the real
    /// server's do before its first event.
    public func beginChunked(status: Int = 200, contentType: String, headers: [(String, String)] = []) {
        hasResponded = true
        chunked = true
        send(head(status, contentType, [("transfer-encoding", "chunked")] + headers))
    }

    /// The status line and header section.
    private func head(_ status: Int, _ contentType: String, _ headers: [(String, String)]) -> [UInt8] {
        // An empty type sends none (the Chatterbox files service's empty 200 to a PUT).
        var head = "HTTP/1.1 \(status) \(HTTPStatus.reason(status))\r\n" + (contentType.isEmpty ? "" : "content-type: \(contentType)\r\n")
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += keepAlive ? "\r\n" : "connection: close\r\n\r\n"
        return Array(head.utf8)
    }

    /// Sends one chunk. Returns false when the client has gone.
    @discardableResult
    public func writeChunk(_ bytes: [UInt8]) -> Bool {
        precondition(chunked, "writeChunk before beginChunked")
        guard !bytes.isEmpty else { return !peerGone }
        send(Self.chunkFrame(bytes))
        return !peerGone
    }

    /// Sends raw bytes inside the chunked body without framing them as one chunk: a slow
    /// drip writes a chunk's bytes a few at a time. `bytes` must be framed by the caller.
    @discardableResult
    public func writeRaw(_ bytes: [UInt8]) -> Bool {
        send(bytes)
        return !peerGone
    }

    /// Ends a chunked response with the last chunk.
    public func endChunked() {
        send(Array("0\r\n\r\n".utf8))
        if !keepAlive { connectionClosed = true }
    }

    /// Drops the connection without finishing the response: the client sees the stream end
    /// in the middle (a reset, like a crashed server or a lost network).
    public func dropConnection() {
        hasResponded = true
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)  // RST, not an orderly FIN
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        shutdown(fd, Int32(SHUT_RDWR))
        connectionClosed = true
    }

    /// Waits until the client hangs up or `timeout` seconds pass, sending nothing: a stream
    /// the server keeps open (a replayed trace that the recording client hung up). Returns
    /// whether the client hung up.
    public func waitForPeerClose(timeout: Double) -> Bool {
        let deadline = clock.now + UInt64(max(0, timeout) * 1e9)
        while !peerGone {
            let now = clock.now
            guard now < deadline else { return false }
            var entry = pollfd(fd: fd, events: Int16(POLLIN) | Self.pollReadHangUp, revents: 0)
            let ready = poll(&entry, 1, Int32(min(1_000, (deadline - now) / 1_000_000 + 1)))
            if ready < 0 && errno != EINTR { break }
            guard ready > 0 else { continue }
            if entry.revents & (Int16(POLLHUP) | Int16(POLLERR) | Self.pollReadHangUp) != 0 { break }
            var byte: UInt8 = 0
            if recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) == 0 { break }
            usleep(1_000)  // the client sent something (a next request): not a hang-up
        }
        peerGone = true
        connectionClosed = true
        return true
    }

    /// Linux's POLLRDHUP (the peer shut down its side), which Glibc's overlay does not export.
    private static let pollReadHangUp: Int16 = 0x2000

    /// Chunk-frames `bytes` (the caller then sends the frame in pieces with ``writeRaw(_:)``).
    public static func chunkFrame(_ bytes: [UInt8]) -> [UInt8] {
        Array(String(bytes.count, radix: 16).utf8) + [0x0D, 0x0A] + bytes + [0x0D, 0x0A]
    }

    private func send(_ bytes: [UInt8]) {
        guard !peerGone else { return }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                peerGone = true
                connectionClosed = true
                return
            }
            offset += n
        }
    }
}

/// Reason phrases for the statuses the simulator sends.
enum HTTPStatus {
    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 413: return "Content Too Large"
        case 422: return "Unprocessable Entity"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Status \(status)"
        }
    }
}
