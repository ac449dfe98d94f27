import AudioKernel
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// One request and its response over ``HTTPClient``: find or open a connection, send the
/// head and body, parse the answer as it arrives and hand it to the task's handler.
///
/// The handler hears exactly what URLSession's delegate would: the response head, the body
/// in pieces, upload progress, then one completion (nil, or a `TransportError`). When a kept
/// connection turns out to be closed by the server before any byte of an answer, the
/// request goes once more on a fresh connection, as curl and browsers do: the server's
/// idle close raced the request. (Should the server have acted on it anyway, the backend's
/// POSTs carry an `Idempotency-Key`.)
final class HTTPExchange: TransportTask, HTTPConnectionOwner, @unchecked Sendable {
    private let client: HTTPClient
    private let endpoint: HTTPEndpoint
    private let head: [UInt8]
    private let body: HTTPBody?
    private var queue: DispatchQueue { client.queue }

    // On the queue.
    private var handler: TaskHandler?
    private var connection: HTTPConnection?
    private var reused = false
    private var resent = false
    /// Bytes of head and body sent so far.
    private var sent = 0
    private var parser: HTTPResponseParser
    private var answered = false
    /// A connect is in progress on `connection`.
    private var connecting = false
    /// A TLS handshake is in progress on `connection`.
    private var handshake: TLSSession?
    private var finished = false
    /// Addresses still to try, and the last connect failure.
    private var addresses: ArraySlice<SocketAddress> = []
    private var connectError: Errno?

    init(client: HTTPClient, endpoint: HTTPEndpoint, request: HTTPRequest, body: HTTPBody?, handler: TaskHandler) {
        self.client = client
        self.endpoint = endpoint
        self.body = body
        self.handler = handler
        let method = request.httpMethod
        parser = HTTPResponseParser(requestHasBody: method != "HEAD")
        head = Self.head(method: method, endpoint: endpoint, fields: request.headerFields, bodyLength: body?.count)
    }

    /// The request head: the caller's fields, with framing fields of our own.
    static func head(method: String, endpoint: HTTPEndpoint, fields: [String: String], bodyLength: Int?) -> [UInt8] {
        var text = "\(method) \(endpoint.target) HTTP/1.1\r\nHost: \(endpoint.hostHeader)\r\n"
        let framing: Set<String> = ["host", "content-length", "transfer-encoding", "connection"]
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) where !framing.contains(name.lowercased()) {
            // A field value with a line break would end the head early: refuse to send it.
            guard !value.contains(where: { $0 == "\r" || $0 == "\n" }) else { continue }
            text += "\(name): \(value)\r\n"
        }
        if fields.keys.contains(where: { $0.equalsIgnoringASCIICase("User-Agent") }) == false {
            text += "User-Agent: practiced\r\n"
        }
        if let bodyLength {
            text += "Content-Length: \(bodyLength)\r\n"
        } else if method == "POST" || method == "PUT" {
            text += "Content-Length: 0\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// Stops the exchange; its completion reports `cancelled`.
    func cancel() {
        queue.async { [self] in fail(TransportError(.cancelled, "cancelled")) }
    }

    // MARK: - Steps (on the queue)

    func begin() {
        if let kept = client.takeIdle(endpoint.key) {
            reused = true
            return use(kept)
        }
        connectFresh()
    }

    private func connectFresh() {
        reused = false
        let host = endpoint.host, port = endpoint.port
        if HTTPEndpoint.isNumeric(host) {
            return resolved(HTTPEndpoint.resolve(host, port: port))
        }
        // A name: the resolver may block for seconds, so not on the client's queue.
        DispatchQueue.global().async { [self] in
            let result = HTTPEndpoint.resolve(host, port: port)
            queue.async { [self] in resolved(result) }
        }
    }

    private func resolved(_ result: Result<[SocketAddress], TransportError>) {
        guard !finished else { return }
        switch result {
        case .failure(let error): fail(error)
        case .success(let list):
            addresses = list[...]
            tryNextAddress()
        }
    }

    /// Connects to the next address; refused or unreachable ones fall through to the next.
    private func tryNextAddress() {
        guard !finished else { return }
        guard var address = addresses.popFirst() else {
            let reason = connectError?.description ?? "no address"
            return fail(TransportError(.cannotConnectToHost, "cannot connect to \(endpoint.key): \(reason)"))
        }
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            connectError = .current
            return tryNextAddress()
        }
        var one: Int32 = 1
        // Small writes (a request head, then its body) must not wait for Nagle's timer.
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let connection = HTTPConnection(fd: fd, key: endpoint.key, queue: queue, since: client.clock.now)
        connection.owner = self
        self.connection = connection
        let status = withUnsafePointer(to: &address.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
        }
        guard status == 0 || errno == EINPROGRESS else {
            connectError = .current
            self.connection = nil
            connection.close()
            return tryNextAddress()
        }
        // Reading is wanted from the connect on, not before it: a socket not yet connecting
        // reports a hang-up of its own.
        connection.startReading()
        if status == 0 { return connected(connection) }
        connecting = true
        connection.whenWritable { [self] in settleConnect(connection) }
    }

    /// The connect in progress has ended, told by whichever handler ran first: writable
    /// (connected, or failed), or readable (a hang-up or an error).
    private func settleConnect(_ connection: HTTPConnection) {
        guard connecting, !finished, self.connection === connection else { return }
        connecting = false
        connection.cancelWriteWait()
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(connection.fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = errno }
        if error == 0 { return connected(connection) }
        connectError = Errno(rawValue: error)
        self.connection = nil
        connection.close()
        tryNextAddress()
    }

    /// TCP is up: over `https://` the TLS handshake comes first, then the request.
    private func connected(_ connection: HTTPConnection) {
        guard endpoint.tls else { return send() }
        switch client.tls() {
        case .failure(let error):
            fail(TransportError(.secureConnectionFailed, error.description))
        case .success(let context):
            do throws(TLSError) {
                handshake = try TLSSession(context: context, fd: connection.fd, host: endpoint.host)
                continueHandshake(connection)
            } catch {
                fail(TransportError(.secureConnectionFailed, error.description))
            }
        }
    }

    /// Moves the handshake on; it resumes when the socket is readable (the connection
    /// calls ``connectionIsReadable(_:)``) or writable.
    private func continueHandshake(_ connection: HTTPConnection) {
        guard !finished, let session = handshake, self.connection === connection else { return }
        switch session.handshake() {
        case .done:
            handshake = nil
            connection.tls = session
            send()
        case .wantRead:
            break
        case .wantWrite:
            connection.whenWritable { [self] in continueHandshake(connection) }
        case .failed(let error):
            // Certificates and names are not the network's fault: no other address or
            // retry would change them. The message says which check failed.
            fail(TransportError(error.description.contains("certificate") ? .serverCertificateUntrusted : .secureConnectionFailed, error.description))
        }
    }

    private func use(_ kept: HTTPConnection) {
        connection = kept
        kept.owner = self
        send()
    }

    /// Writes as much of the head and body as the socket takes; waits for room for the rest.
    private func send() {
        guard !finished, let connection else { return }
        let total = head.count + (body?.count ?? 0)
        while sent < total {
            let result: Result<Int, Errno>
            if sent < head.count {
                result = head.withUnsafeBytes { connection.send(UnsafeRawBufferPointer(rebasing: $0[sent...])) }
            } else {
                let offset = sent - head.count
                result = body!.withBytes(from: offset) { connection.send($0) }
            }
            switch result {
            case .failure(let error):
                return connectionLost("sending the request: \(error)")
            case .success(0):
                return connection.whenWritable { [self] in send() }
            case .success(let n):
                let bodyBefore = max(0, sent - head.count)
                sent += n
                if let body, sent > head.count, sent - head.count > bodyBefore {
                    handler?.taskDidSend(totalBytesSent: Int64(sent - head.count), totalBytesExpected: Int64(body.count))
                }
            }
        }
    }

    private var sentAll: Bool { sent == head.count + (body?.count ?? 0) }

    /// Reads until the socket is drained: one event for the last bytes and the close that
    /// follows them, and a handler that reads once would hear the close only on the next.
    func connectionIsReadable(_ connection: HTTPConnection) {
        if connecting { settleConnect(connection) }
        if handshake != nil { return continueHandshake(connection) }
        let buffer = client.receiveBuffer
        while !finished, connection === self.connection {
            switch connection.read(into: buffer) {
            case .failure(let error) where error == .wouldBlock:
                return
            case .failure(let error):
                return connectionLost("receiving the response: \(error)")
            case .success(0):
                do {
                    try parser.finishAtClose()
                    complete(reusable: false)
                } catch {
                    connectionLost(error.description)
                }
                return
            case .success(let n):
                answered = true
                received(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            }
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        do {
            let consumed = try parser.feed(bytes) { output in
                guard !finished else { return }
                switch output {
                case .head(let head):
                    var fields: [String: String] = [:]
                    for field in head.fields { fields[field.name] = head.value(field.name) }
                    handler?.taskDidReceive(response: HTTPResponse(statusCode: head.status, headerFields: fields))
                case .body(let piece):
                    handler?.taskDidReceive(data: Data(piece))
                case .end:
                    break
                }
            }
            // Bytes after a complete response answer no request: the connection is not reused.
            if parser.isComplete { complete(reusable: parser.keepAlive && sentAll && consumed == bytes.count) }
        } catch {
            fail(TransportError(.badServerResponse, "bad response from \(endpoint.key): \(error.description)"))
        }
    }

    /// The connection failed under the request. A kept connection that died before any
    /// answer is the server's idle close racing our request: send it once more, fresh.
    private func connectionLost(_ reason: String) {
        guard !finished else { return }
        if reused, !answered, !resent {
            resent = true
            connection?.close()
            connection = nil
            sent = 0
            return connectFresh()
        }
        // The request may have reached the server: not a "sent nothing" failure.
        fail(TransportError(.networkConnectionLost, "connection to \(endpoint.key) lost: \(reason)"))
    }

    private func complete(reusable: Bool) {
        guard let connection, reusable else { return end(nil) }
        self.connection = nil
        client.keep(connection)
        end(nil)
    }

    func fail(_ error: TransportError) { end(error) }

    /// The one way out: the connection closed unless kept, the handler told once.
    private func end(_ error: TransportError?) {
        guard !finished else { return }
        finished = true
        connection?.close()
        connection = nil
        let handler = self.handler
        self.handler = nil
        client.ended(self)
        handler?.taskDidComplete(error: error)
    }
}
