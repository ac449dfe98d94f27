import AudioKernel
import Dispatch
import FoundationEssentials

/// Receives one URLSession task's callbacks, on the transport's serial queue.
protocol TaskHandler: AnyObject, Sendable {
    func taskDidReceive(response: HTTPResponse)
    func taskDidReceive(data: Data)
    func taskDidSend(totalBytesSent: Int64, totalBytesExpected: Int64)
    func taskDidComplete(error: Error?)
}

/// A request in flight that can be stopped; its handler then hears `cancelled`.
protocol TransportTask: AnyObject, Sendable {
    func cancel()
}

/// Carries the client's requests, `http://` and `https://`, over ``HTTPClient``, the
/// daemon's own HTTP/1.1 transport (TLS through the system's OpenSSL).
///
/// Every call, REST or stream, is a task whose callbacks reach the call's handler on one
/// serial queue: handlers need no locks of their own for state that only callbacks touch,
/// and events keep their order. URLSession carried `https://` until FoundationNetworking's
/// write source, armed for the length of each streamed reply, was measured spinning a
/// third of a core (see ``TLSContext``).
final class BackendTransport: @unchecked Sendable {
    /// The queue every callback and timer of the client runs on.
    let queue: DispatchQueue
    private let http: HTTPClient

    /// `caFile`: the PEM file of CAs an `https://` backend's certificate must chain to;
    /// nil trusts the system's store.
    init(caFile: String? = nil) {
        queue = DispatchQueue(label: "practiced.backend")
        http = HTTPClient(queue: queue, caFile: caFile)
    }

    /// Starts a task; the handler gets its callbacks until it completes. Nil once the
    /// transport is invalidated, or for a URL that is neither `http://` nor `https://`.
    func start(_ request: HTTPRequest, body: Data?, handler: TaskHandler) -> TransportTask? {
        http.start(request, body: body, handler: handler)
    }

    /// Cancels every task and closes every connection.
    func invalidate() {
        http.invalidate()
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

    init(completion: @escaping Completion) { self.completion = completion }

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
    func taskDidReceive(data: Data) { lock.withLock { body.append(data) } }
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

/// A `multipart/form-data` body with one file part, as the backend's `/chat` expects.
struct MultipartFormBody {
    let boundary: String
    let data: Data

    init(field: String, filename: String, contentType: String, content: Data, boundary: String = "practiced-" + UUID().uuidString) {
        self.boundary = boundary
        var body = Data()
        body.append(Data("--\(boundary)\r\n".utf8))
        body.append(Data("Content-Disposition: form-data; name=\"\(field)\"; filename=\"\(filename)\"\r\n".utf8))
        body.append(Data("Content-Type: \(contentType)\r\n\r\n".utf8))
        body.append(content)
        body.append(Data("\r\n--\(boundary)--\r\n".utf8))
        data = body
    }

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }
}
