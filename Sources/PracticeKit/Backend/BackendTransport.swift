import AudioKernel
import Dispatch
import FoundationEssentials
import PracticeNet
import PracticeSupport

/// Carries the client's requests, `http://` and `https://`, over ``HTTPClient``, the
/// daemon's own HTTP/1.1 transport (TLS through the system's OpenSSL).
///
/// Every call, REST or stream, is a task whose callbacks reach the call's handler on one
/// serial queue: handlers need no locks of their own for state that only callbacks touch,
/// and events keep their order. URLSession carried `https://` until FoundationNetworking's
/// write source, armed for the length of each streamed reply, was measured spinning a
/// third of a core (see ``TLSContext``).
/// What a reply stream needs of a transport: the serial queue its callbacks, timers and
/// cancellation run on, and a request started with a handler (swift-openapi-runtime's
/// `ClientTransport` is the model). ``BackendTransport`` is the HTTP one; ReplyStream's
/// tests give it one in memory, which answers as a script says.
protocol StreamTransport: AnyObject, Sendable {
    var queue: DispatchQueue { get }
    func start(_ request: HTTPRequest, body: HTTPBody?, handler: TaskHandler) -> TransportTask?
}

final class BackendTransport: StreamTransport, @unchecked Sendable {
    /// The queue every callback and timer of the client runs on.
    let queue: DispatchQueue
    private let http: HTTPClient
    /// A REST call's deadline runs on it (the client's clock: Dispatch's in the daemon).
    let clock: any PracticeClock

    /// `caFile`: the PEM file of CAs an `https://` backend's certificate must chain to;
    /// nil trusts the system's store.
    init(caFile: String? = nil, clock: any PracticeClock) {
        self.clock = clock
        queue = DispatchQueue(label: "practiced.backend")
        http = HTTPClient(queue: queue, caFile: caFile, clock: clock)
    }

    /// Starts a task; the handler gets its callbacks until it completes. Nil once the
    /// transport is invalidated, or for a URL that is neither `http://` nor `https://`.
    func start(_ request: HTTPRequest, body: HTTPBody?, handler: TaskHandler) -> TransportTask? {
        http.start(request, body: body, handler: handler)
    }

    /// Cancels every task and closes every connection.
    func invalidate() {
        http.invalidate()
    }

    /// One request and its whole answer, within `timeout` seconds; an answer body over
    /// `limit` bytes ends the exchange as ``BackendError/invalidResponse(_:)`` (nothing more
    /// is read or kept). Cancelling the calling task cancels the request.
    func exchange(_ request: HTTPRequest, body: Data?, timeout: Double, limit: Int = .max) async -> Result<(HTTPResponse, Data), BackendError> {
        let box = ExchangeBox()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let exchange = RESTExchange(limit: limit) { continuation.resume(returning: $0) }
                box.set(exchange)
                exchange.attach(start(request, body: body.map(HTTPBody.init), handler: exchange))
                // Weak: a block holding the exchange would keep its answer until the deadline.
                clock.after(timeout, on: queue) { [weak exchange] in exchange?.abort(.timedOut(seconds: timeout)) }
            }
        } onCancel: {
            box.exchange?.abort(.cancelled)
        }
    }
}

/// Hands the exchange of an attempt to the cancellation handler, which may run first.
private final class ExchangeBox: @unchecked Sendable {
    private let lock = Lock()
    private var stored: RESTExchange?
    private var cancelled = false

    func set(_ exchange: RESTExchange) {
        let cancelNow: Bool = lock.withLock {
            stored = exchange
            return cancelled
        }
        if cancelNow { exchange.abort(.cancelled) }
    }

    var exchange: RESTExchange? {
        lock.withLock {
            cancelled = true
            return stored
        }
    }
}

/// One REST attempt: collects the answer, enforces the call's deadline.
final class RESTExchange: TaskHandler, @unchecked Sendable {
    typealias Completion = @Sendable (Result<(HTTPResponse, Data), BackendError>) -> Void

    private let lock = Lock()
    private var response: HTTPResponse?
    private var body = Data()
    private var completion: Completion?
    private var task: TransportTask?
    private var endReason: BackendError?
    private let limit: Int

    init(limit: Int = .max, completion: @escaping Completion) {
        self.limit = limit
        self.completion = completion
    }

    /// The attempt's task, or nil when the transport is closed (the attempt ends cancelled).
    func attach(_ task: TransportTask?) {
        guard let task else { return abortWithoutTask() }
        // The task is on the wire once `start` returns, so an abort may already have come
        // (caller cancelled, deadline passed) and found no task to cancel: cancel it here.
        let abortedAlready: Bool = lock.withLock {
            self.task = task
            return endReason != nil
        }
        if abortedAlready { task.cancel() }
    }

    private func abortWithoutTask() {
        let completion: Completion? = lock.withLock {
            defer { self.completion = nil }
            return self.completion
        }
        completion?(.failure(.cancelled))
    }

    /// Ends the attempt early (deadline, caller's cancellation).
    func abort(_ reason: BackendError) {
        let task: TransportTask? = lock.withLock {
            if endReason == nil { endReason = reason }
            return self.task
        }
        task?.cancel()
    }

    func taskDidReceive(response: HTTPResponse) { lock.withLock { self.response = response } }
    func taskDidReceive(data: Data) {
        let over: Bool = lock.withLock {
            guard endReason == nil else { return false }
            guard body.count + data.count <= limit else { return true }
            body.append(data)
            return false
        }
        if over { abort(.invalidResponse("an answer larger than \(limit) bytes")) }
    }
    func taskDidSend(totalBytesSent: Int64, totalBytesExpected: Int64) {}

    func taskDidComplete(error: Error?) {
        let (completion, result): (Completion?, Result<(HTTPResponse, Data), BackendError>) = lock.withLock {
            let completion = self.completion
            self.completion = nil
            if let endReason { return (completion, .failure(endReason)) }
            if let error { return (completion, .failure(BackendError.from(transportError: error))) }
            guard let response else { return (completion, .failure(.invalidResponse("no HTTP response"))) }
            return (completion, .success((response, body)))
        }
        completion?(result)
    }
}

/// A `multipart/form-data` body with one file part, as the backend's `/chat` expects: its
/// head, the file's bytes as they are (not copied), its tail.
struct MultipartFormBody {
    let boundary: String
    let body: HTTPBody

    init(field: String, filename: String, contentType: String, content: HTTPBody.Part, boundary: String = "practiced-" + UUID().uuidString) {
        self.boundary = boundary
        let head = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(field)\"; filename=\"\(filename)\"\r\nContent-Type: \(contentType)\r\n\r\n".utf8)
        body = HTTPBody(parts: [.bytes(head), content, .bytes(Array("\r\n--\(boundary)--\r\n".utf8))])
    }

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }
}
