import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeNet
import PracticeProtocol
import PracticeSupport

/// The practice backend's client: every endpoint of the contract, over the daemon's own
/// HTTP/1.1 transport (``BackendTransport``), `http://` or `https://`.
///
/// REST calls are `async` and throw ``BackendError``; they have a deadline each
/// (``BackendConfiguration/requestTimeout``) and are retried with backoff only where that is
/// safe (see ``RetryPolicy``). The three reply streams return a ``ReplyStream`` whose events
/// arrive as they are parsed. The network log (debug level) names methods, paths, statuses,
/// sizes and times, never a body: no audio, no base64, no learner text.
public final class BackendClient: Sendable {
    public let configuration: BackendConfiguration
    private let transport: BackendTransport
    private let logger: Logger
    /// Whose time the retries and each attempt's deadline wait on.
    private let clock: any PracticeClock

    public convenience init(configuration: BackendConfiguration, logger: Logger = .disabled) {
        self.init(configuration: configuration, logger: logger, clock: DispatchClock())
    }

    init(configuration: BackendConfiguration, logger: Logger = .disabled, clock: any PracticeClock) {
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        transport = BackendTransport(caFile: configuration.caFile, clock: clock)
    }

    deinit { transport.invalidate() }

    // MARK: - REST

    public func topics() async throws(BackendError) -> [Topic] {
        try await call("GET", "topics", as: [Topic].self)
    }

    public func createSession(_ request: CreateSessionRequest) async throws(BackendError) -> CreatedSession {
        try await call("POST", "sessions", body: request, as: CreatedSession.self)
    }

    /// `DELETE /sessions/{id}`: the learner ends the talk (→ `reviewing`, or `ended` in review mode).
    public func endTalk(sessionID: String) async throws(BackendError) -> EndedTalk {
        try await call("DELETE", "sessions/\(Self.escape(sessionID))", as: EndedTalk.self)
    }

    public func review(sessionID: String) async throws(BackendError) -> Review {
        try await call("GET", "sessions/\(Self.escape(sessionID))/review", as: Review.self)
    }

    public func requestCorrection(sessionID: String, _ request: CorrectionRequest) async throws(BackendError) -> Correction {
        try await call("POST", "sessions/\(Self.escape(sessionID))/corrections", body: request, as: Correction.self)
    }

    /// `POST /sessions/{id}/end` (→ `completing`, or `completed` at once without segments).
    public func endSession(sessionID: String) async throws(BackendError) -> EndedSession {
        try await call("POST", "sessions/\(Self.escape(sessionID))/end", body: EmptyBody(), as: EndedSession.self)
    }

    public func profile(userID: String) async throws(BackendError) -> UserProfile {
        try await call("GET", "users/\(Self.escape(userID))/profile", as: UserProfile.self)
    }

    public func evaluate(userID: String) async throws(BackendError) -> UserProfile {
        try await call("POST", "users/\(Self.escape(userID))/evaluate", body: EmptyBody(), as: UserProfile.self)
    }

    /// Sets or (with nil) clears the learning goal; newer servers only (older answer 404).
    public func setLearningGoal(userID: String, goal: String?) async throws(BackendError) -> UserProfile {
        try await call("POST", "users/\(Self.escape(userID))/learning-goal", body: LearningGoalBody(learningGoal: goal), as: UserProfile.self)
    }

    // MARK: - Streams

    /// `POST /sessions/{id}/start`: the greeting. Call once per session (a second call hangs).
    public func startGreeting(sessionID: String, onEvent: @escaping ReplyStream.EventHandler) -> ReplyStream {
        let request = makeRequest("POST", "sessions/\(Self.escape(sessionID))/start", accept: "text/event-stream")
        return stream(request, body: nil, onEvent: onEvent)
    }

    /// `POST /sessions/{id}/chat`: one recorded turn as a WAV. `idempotencyKey` names the
    /// turn; its delivery sends it again with the same key.
    public func sendTurn(sessionID: String, wav: [UInt8], idempotencyKey: String,
                         onEvent: @escaping ReplyStream.EventHandler) -> ReplyStream {
        sendTurn(sessionID: sessionID, wav: .bytes(wav), idempotencyKey: idempotencyKey, onEvent: onEvent)
    }

    public func sendTurn(sessionID: String, wav: Data, idempotencyKey: String,
                         onEvent: @escaping ReplyStream.EventHandler) -> ReplyStream {
        sendTurn(sessionID: sessionID, wav: .data(wav), idempotencyKey: idempotencyKey, onEvent: onEvent)
    }

    private func sendTurn(sessionID: String, wav: HTTPBody.Part, idempotencyKey: String,
                          onEvent: @escaping ReplyStream.EventHandler) -> ReplyStream {
        let form = MultipartFormBody(field: "audio", filename: "audio.wav", contentType: "audio/wav", content: wav)
        var request = makeRequest("POST", "sessions/\(Self.escape(sessionID))/chat", accept: "text/event-stream")
        request.setValue(form.contentType, forHTTPHeaderField: "Content-Type")
        request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
        // Tried once: the turn's delivery owns its retries (``TurnDelivery``, one loop with
        // backoff and jitter), so one failed upload is one `turn.retrying`, never a
        // `reply.retrying` inside it as well.
        return stream(request, body: form.body, retry: RetryPolicy.none, onEvent: onEvent)
    }

    /// `POST /sessions/{id}/chat/text`: a typed turn.
    public func sendText(sessionID: String, text: String, onEvent: @escaping ReplyStream.EventHandler) -> ReplyStream {
        var request = makeRequest("POST", "sessions/\(Self.escape(sessionID))/chat/text", accept: "text/event-stream")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let body = (try? JSONCall.encoder.encode(TextBody(text: text))) ?? Data()
        return stream(request, body: HTTPBody(body), onEvent: onEvent)
    }

    private func stream(_ request: HTTPRequest, body: HTTPBody?, retry: RetryPolicy? = nil, onEvent: @escaping ReplyStream.EventHandler) -> ReplyStream {
        var configuration = configuration
        if let retry { configuration.retry = retry }
        let stream = ReplyStream(owner: self, transport: transport, request: request, body: body, configuration: configuration,
                                 logger: logger, clock: clock, onEvent: onEvent)
        stream.begin()
        return stream
    }

    // MARK: - Plumbing

    /// Percent-escapes one path segment (ids are opaque strings).
    static func escape(_ segment: String) -> String {
        // RFC 3986's pchar less ";" and "/" (so "?" and "#" too), UTF-8 percent-escaped
        // otherwise: what Foundation's urlPathAllowed less "/?#" lets through.
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,=:@".utf8)
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(segment.utf8.count)
        for byte in segment.utf8 {
            if allowed.contains(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private func makeRequest(_ method: String, _ path: String, accept: String = "application/json") -> HTTPRequest {
        let base = configuration.baseURL.absoluteString.hasSuffix("/") ? configuration.baseURL.absoluteString : configuration.baseURL.absoluteString + "/"
        var request = HTTPRequest(url: URL(string: base + path)!, method: method)
        request.setValue(accept, forHTTPHeaderField: "Accept")
        return request
    }

    private func call<Response: Decodable>(_ method: String, _ path: String, as: Response.Type) async throws(BackendError) -> Response {
        try await call(method, path, body: Optional<EmptyBody>.none, as: Response.self)
    }

    /// One REST call with its deadline and retries (``JSONCall`` makes each attempt).
    private func call<Body: Encodable, Response: Decodable>(_ method: String, _ path: String, body: Body?,
                                                             as: Response.Type) async throws(BackendError) -> Response {
        var request = makeRequest(method, path)
        let label = "\(method) /\(path)"
        var payload: Data?
        if let body {
            payload = try JSONCall.encode(body, label: "the request")
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let exchange = JSONCall(transport: transport, logger: logger, timeout: configuration.requestTimeout)
        var attempt = 0
        while true {
            attempt += 1
            let failure: BackendError
            switch await exchange.exchange(request, body: payload, label: label) {
            case .success(let (response, data)):
                if (200..<300).contains(response.statusCode) { return try JSONCall.decode(Response.self, from: data, label: label) }
                failure = BackendError.from(status: response.statusCode, contentType: response.value(forHTTPHeaderField: "Content-Type"), body: data)
            case .failure(let error):
                failure = error
            }
            guard configuration.retry.shouldRetry(failure, method: method, attempt: attempt), !Task.isCancelled else { throw failure }
            let delay = configuration.retry.delay(afterAttempt: attempt)
            logger.info("\(method) /\(path): \(failure); retrying in \(Int(delay * 1000)) ms (attempt \(attempt + 1))")
            do { try await clock.sleep(delay) } catch { throw .cancelled }
        }
    }
}

/// The body of a POST that sends none (`{}`).
struct EmptyBody: Codable, Sendable {}

struct TextBody: Codable, Sendable {
    var text: String
}

struct LearningGoalBody: Codable, Sendable {
    var learningGoal: String?

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(learningGoal, forKey: .learningGoal)  // null clears the goal
    }
}
