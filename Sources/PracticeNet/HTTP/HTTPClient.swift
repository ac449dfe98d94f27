import AudioKernel
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The backend client's own HTTP/1.1 transport for `http://` and `https://` URLs:
/// non-blocking sockets watched by the daemon's own epoll thread (``DescriptorWatch``), TLS through the system's OpenSSL
/// (``TLSSession``), keep-alive connections kept in a small pool, responses parsed as they
/// arrive by ``HTTPResponseParser``.
///
/// Why not URLSession: on Linux, FoundationNetworking drives libcurl through Dispatch and
/// never disarms a socket's write source once curl stops asking to write, so for the whole
/// of a streamed reply the socket (writable) woke a worker thread about 15,000 times a
/// second: half a core of a kiosk's CPU per conversation, and jitter for everything else.
/// This transport watches for room to write only while a write is waiting for it.
///
/// Everything runs on `queue`, the backend client's serial queue; the handlers' callbacks
/// come on it as they did from URLSession's delegate.
package final class HTTPClient: HTTPConnectionOwner, @unchecked Sendable {
    let queue: DispatchQueue
    /// Idle connections kept per host; more are closed.
    static let idlePerHost = 4
    /// A connection idle this long is not reused (servers close theirs after a minute or so;
    /// a request sent on a connection the server is closing would be lost in the race).
    static let idleLifetime: UInt64 = 50_000_000_000

    // On the queue.
    private var idle: [String: [HTTPConnection]] = [:]
    private var active: [ObjectIdentifier: HTTPExchange] = [:]
    private var invalidated = false
    /// One receive buffer for every connection: all reads run on the one queue.
    let receiveBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    /// Where `https://` trust comes from: a PEM file of CAs, or the system's store when nil.
    private let caFile: String?
    /// Made on the first `https://` request (loading the CA store takes a few milliseconds);
    /// a failure is not kept, so a CA file put right is read at the next request.
    private var tlsContext: TLSContext?

    /// The backend client's clock (the daemon's one), for the pool's age limit.
    let clock: any MonotonicClock

    package init(queue: DispatchQueue, caFile: String? = nil, clock: any MonotonicClock = UptimeClock()) {
        self.queue = queue
        self.caFile = caFile
        self.clock = clock
    }

    /// The shared TLS context (on the queue).
    func tls() -> Result<TLSContext, TLSError> {
        if let tlsContext { return .success(tlsContext) }
        do throws(TLSError) {
            let made = try TLSContext(caFile: caFile)
            tlsContext = made
            return .success(made)
        } catch {
            return .failure(error)
        }
    }

    deinit { receiveBuffer.deallocate() }

    static func handles(_ url: URL?) -> Bool { ["http", "https"].contains(url?.scheme?.lowercased()) }

    /// Starts the request; nil when the client is closed or the URL is not one it handles.
    package func start(_ request: HTTPRequest, body: HTTPBody?, handler: TaskHandler) -> TransportTask? {
        guard let endpoint = HTTPEndpoint(url: request.url) else { return nil }
        let exchange = HTTPExchange(client: self, endpoint: endpoint, request: request, body: body, handler: handler)
        queue.async { [self] in
            guard !invalidated else { return exchange.fail(TransportError(.cancelled, "the backend client is closed")) }
            active[ObjectIdentifier(exchange)] = exchange
            exchange.begin()
        }
        return exchange
    }

    /// Closes every connection and cancels every exchange.
    package func invalidate() {
        queue.async { [self] in
            invalidated = true
            for exchange in active.values { exchange.fail(TransportError(.cancelled, "the backend client is closed")) }
            for connection in idle.values.joined() { connection.close() }
            idle = [:]
        }
    }

    // MARK: - For exchanges (on the queue)

    func ended(_ exchange: HTTPExchange) { active[ObjectIdentifier(exchange)] = nil }

    /// A kept connection to the endpoint, newest first, or nil.
    func takeIdle(_ key: String) -> HTTPConnection? {
        while let connection = idle[key]?.popLast() {
            if clock.now - connection.idleSince < Self.idleLifetime, !connection.isClosed {
                return connection
            }
            connection.close()
        }
        return nil
    }

    /// Keeps a connection whose last response ended cleanly, for the next request.
    func keep(_ connection: HTTPConnection) {
        guard !invalidated, (idle[connection.key]?.count ?? 0) < Self.idlePerHost else { return connection.close() }
        connection.owner = self
        connection.idleSince = clock.now
        idle[connection.key, default: []].append(connection)
    }

    /// An idle connection became readable: the server closed it (or sent what nobody asked
    /// for). Either way it cannot carry a request any more.
    func connectionIsReadable(_ connection: HTTPConnection) {
        if case .failure(let error) = connection.read(into: receiveBuffer), error == .wouldBlock { return }
        connection.close()
        idle[connection.key]?.removeAll { $0 === connection }
    }
}

/// Where a request goes: host, port, and the resolved addresses once known.
struct HTTPEndpoint {
    var host: String
    var port: UInt16
    /// `https://`: the connection is TLS.
    var tls: Bool
    /// The `Host` header: the host as written, with the port unless it is the default.
    var hostHeader: String
    /// The request target: path and query, percent-encoded as given.
    var target: String
    var key: String { "\(tls ? "https" : "http")://\(host):\(port)" }

    init?(url: URL) {
        guard HTTPClient.handles(url), let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              var host = components.host, !host.isEmpty else { return nil }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.host = host
        tls = url.scheme?.lowercased() == "https"
        port = UInt16(components.port ?? (tls ? 443 : 80))
        let written = host.contains(":") ? "[\(host)]" : host
        hostHeader = components.port.map { "\(written):\($0)" } ?? written
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        target = components.percentEncodedQuery.map { "\(path)?\($0)" } ?? path
    }

    /// The host's addresses: numeric ones at once, names through the resolver (which may
    /// block, so callers run this off their queue).
    static func resolve(_ host: String, port: UInt16) -> Result<[SocketAddress], TransportError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            return .failure(TransportError(.cannotFindHost, "cannot resolve \(host): \(String(cString: gai_strerror(status)))"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            if let address = current.pointee.ai_addr, current.pointee.ai_family == AF_INET || current.pointee.ai_family == AF_INET6 {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(current.pointee.ai_addrlen))) }
                addresses.append(SocketAddress(storage: storage, length: current.pointee.ai_addrlen, family: current.pointee.ai_family))
            }
            entry = current.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(TransportError(.cannotFindHost, "\(host) has no IPv4 or IPv6 address")) : .success(addresses)
    }

    /// Whether the host is an address literal (resolving it does not block).
    static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

struct SocketAddress {
    var storage: sockaddr_storage
    var length: socklen_t
    var family: Int32
}
