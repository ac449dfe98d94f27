import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Receives one URLSession task's callbacks, on the transport's serial queue.
protocol TaskHandler: AnyObject, Sendable {
    func taskDidReceive(response: HTTPURLResponse)
    func taskDidReceive(data: Data)
    func taskDidSend(totalBytesSent: Int64, totalBytesExpected: Int64)
    func taskDidComplete(error: Error?)
}

/// A request in flight that can be stopped; its handler then hears `cancelled`.
protocol TransportTask: AnyObject, Sendable {
    func cancel()
}

extension URLSessionTask: TransportTask {}

/// Carries the client's requests: `http://` over ``HTTPClient``, the daemon's own HTTP/1.1
/// transport, anything else (`https://`) over URLSession, which brings TLS.
///
/// Either way every call, REST or stream, is a task whose callbacks this object routes to
/// the call's handler, all on one serial queue: handlers need no locks of their own for
/// state that only callbacks touch, and events keep their order. (On Linux the only way to
/// read a URLSession response as it arrives is `URLSessionDataDelegate`; FoundationNetworking
/// has no `bytes(for:)`.)
final class BackendTransport: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// The queue every callback and timer of the client runs on.
    let queue: DispatchQueue
    private let http: HTTPClient
    private let lock = NSLock()
    /// Made on the first `https://` call: an idle URLSession still costs libcurl's threads.
    private var session: URLSession?
    private var handlers: [Int: TaskHandler] = [:]
    private var invalidated = false

    override init() {
        queue = DispatchQueue(label: "practiced.backend")
        http = HTTPClient(queue: queue)
        super.init()
    }

    /// Starts a task; the handler gets its callbacks until it completes. Nil once the
    /// transport is invalidated (FoundationNetworking traps on a task for a dead session).
    func start(_ request: URLRequest, body: Data?, handler: TaskHandler) -> TransportTask? {
        lock.lock()
        defer { lock.unlock() }
        guard !invalidated else { return nil }
        if HTTPClient.handles(request.url) { return http.start(request, body: body, handler: handler) }
        let session = self.session ?? makeSession()
        let task: URLSessionTask = body.map { session.uploadTask(with: request, from: $0) } ?? session.dataTask(with: request)
        handlers[task.taskIdentifier] = handler
        task.resume()
        return task
    }

    private func makeSession() -> URLSession {
        let operationQueue = OperationQueue()
        operationQueue.maxConcurrentOperationCount = 1
        operationQueue.underlyingQueue = queue
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 4
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        // The client enforces its own deadlines; URLSession's must not cut a long stream.
        configuration.timeoutIntervalForRequest = 3600
        configuration.timeoutIntervalForResource = 3600
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: operationQueue)
        self.session = session
        return session
    }

    /// Cancels every task and closes every connection (a URLSession holds its delegate until then).
    func invalidate() {
        let session: URLSession? = lock.withLock {
            invalidated = true
            return self.session
        }
        session?.invalidateAndCancel()
        http.invalidate()
    }

    private func handler(_ task: URLSessionTask) -> TaskHandler? { lock.withLock { handlers[task.taskIdentifier] } }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        if let http = response as? HTTPURLResponse { handler(dataTask)?.taskDidReceive(response: http) }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        handler(dataTask)?.taskDidReceive(data: data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64,
                    totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        handler(task)?.taskDidSend(totalBytesSent: totalBytesSent, totalBytesExpected: totalBytesExpectedToSend)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let handler = lock.withLock { handlers.removeValue(forKey: task.taskIdentifier) }
        handler?.taskDidComplete(error: error)
    }

    // Redirects are not part of the contract; follow none, so an answer is what it says.
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

/// One REST attempt: collects the answer, enforces the call's deadline.
final class RESTExchange: TaskHandler, @unchecked Sendable {
    typealias Completion = @Sendable (Result<(HTTPURLResponse, Data), BackendError>) -> Void

    private let lock = NSLock()
    private var response: HTTPURLResponse?
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

    func taskDidReceive(response: HTTPURLResponse) { lock.withLock { self.response = response } }
    func taskDidReceive(data: Data) { lock.withLock { body.append(data) } }
    func taskDidSend(totalBytesSent: Int64, totalBytesExpected: Int64) {}

    func taskDidComplete(error: Error?) {
        let (completion, result): (Completion?, Result<(HTTPURLResponse, Data), BackendError>) = lock.withLock {
            let completion = self.completion
            self.completion = nil
            if let endReason { return (completion, .failure(endReason)) }
            if let error { return (completion, .failure(BackendError.from(urlError: error))) }
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
