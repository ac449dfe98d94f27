import FoundationEssentials
import PracticeNet
import PracticeProtocol

/// What went wrong talking to the backend, typed so that callers can react: retry, tell
/// the learner, make a new session.
public enum BackendError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server answered with an error status. `detail` is the `{"detail": "..."}` text,
    /// or the body of a text/plain answer (`Internal Server Error`).
    case http(status: Int, detail: String)
    /// FastAPI's 422: the request did not validate; one message per problem.
    case validation(messages: [String])
    /// No answer: connection refused, reset, lost, name not resolved. `sentNothing` is true
    /// when the request cannot have reached the server (safe to send again).
    case transport(code: Int, message: String, sentNothing: Bool)
    /// The call's deadline passed (the whole call, or a stream that went silent too long).
    case timedOut(seconds: Double)
    case cancelled
    /// The server answered 2xx with something that is not the contract's shape.
    case invalidResponse(String)

    public var description: String {
        switch self {
        case .http(let status, let detail): return "backend answered \(status): \(detail)"
        case .validation(let messages): return "backend rejected the request (422): \(messages.joined(separator: "; "))"
        case .transport(let code, let message, _): return "backend unreachable: \(message) (\(code))"
        case .timedOut(let seconds): return "backend did not answer within \(Self.format(seconds)) s"
        case .cancelled: return "cancelled"
        case .invalidResponse(let why): return "backend answered something unexpected: \(why)"
        }
    }

    /// The HTTP status, when the server answered.
    public var status: Int? {
        switch self {
        case .http(let status, _): return status
        case .validation: return 422
        default: return nil
        }
    }

    /// 404 on a session call: the session is gone (its upstream failed); make a new one.
    public var isSessionGone: Bool { status == 404 }

    /// The server's "still connecting" answer, to be retried shortly.
    public var isStillConnecting: Bool { status == 503 }

    private static func format(_ seconds: Double) -> String { String.printf("%.1f", seconds) }

    /// Maps a transport error. Connection refused and unresolvable names mean the request
    /// never left; everything else may have reached the server.
    static func from(transportError error: Error) -> BackendError {
        guard let error = error as? TransportError else {
            return .transport(code: 0, message: "\(error)", sentNothing: false)
        }
        if error.code == .cancelled { return .cancelled }
        return .transport(code: error.code.rawValue, message: error.message, sentNothing: error.sentNothing)
    }

    /// Reads an error answer in any of the server's three shapes.
    static func from(status: Int, contentType: String?, body: Data) -> BackendError {
        struct Detail: Decodable { var detail: String }
        struct ValidationItem: Decodable {
            var loc: [LocPart]?
            var msg: String
        }
        struct Validation: Decodable { var detail: [ValidationItem] }
        /// `loc` holds strings and integers.
        struct LocPart: Decodable {
            var text: String
            init(from decoder: Decoder) throws {
                let c = try decoder.singleValueContainer()
                if let s = try? c.decode(String.self) { text = s } else { text = String(try c.decode(Int.self)) }
            }
        }
        let decoder = JSONDecoder()
        if let detail = try? decoder.decode(Detail.self, from: body) { return .http(status: status, detail: detail.detail) }
        if let validation = try? decoder.decode(Validation.self, from: body) {
            return .validation(messages: validation.detail.map { item in
                let location = item.loc.map { $0.map(\.text).joined(separator: ".") }
                return location.map { "\($0): \(item.msg)" } ?? item.msg
            })
        }
        // text/plain (500 Internal Server Error) or anything else: the first line, bounded.
        let text = String(decoding: body.prefix(200), as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return .http(status: status, detail: text.isEmpty ? HTTPResponse.reason(forStatusCode: status) : text)
    }
}

extension ControlError {
    /// The error a client gets for a backend call that failed: `backend_unavailable` only
    /// when nothing answered; an answered error (a 500 too) is `backend_error` with its status.
    public init(_ error: BackendError) {
        switch error {
        case .transport, .timedOut:
            self.init(.backendUnavailable, "\(error)", retryable: true)
        case .cancelled:
            self.init(.backendUnavailable, "cancelled", retryable: true)
        case .http(let status, _):
            self.init(.backendError, "\(error)", retryable: status >= 500 || status == 408 || status == 429, status: status)
        case .validation:
            self.init(.backendError, "\(error)", status: 422)
        case .invalidResponse:
            self.init(.backendError, "\(error)")
        }
    }
}
