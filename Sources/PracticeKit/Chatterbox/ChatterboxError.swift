import FoundationEssentials
import PracticeNet
import PracticeProtocol

/// What went wrong talking to the Chatterbox backend, typed by what the kiosk does next
/// (flows.md §5): sign in again, tell the learner the refusal's reason, retry later.
public enum ChatterboxError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The backend refused the call with its error object. `hint` is the machine-readable
    /// reason for a `P0001` refusal (`invalid_login_code`, …); `code` the SQLSTATE or
    /// PostgREST code (`23505`, `PGRST202`, …). The `message` is never shown to a learner.
    case refused(status: Int, code: String?, hint: String?)
    /// No usable tokens: never signed in, signed out, or a 401 that one refresh did not cure.
    case signInRequired(String)
    /// The files service (upload or download URL) answered an error status, with its text.
    case files(status: Int, text: String)
    /// Transport, deadline, a 5xx without the error object, an answer too large or not the
    /// contract's shape.
    case backend(BackendError)

    public var description: String {
        switch self {
        case .refused(let status, let code, let hint):
            return "backend refused (\(status)\(code.map { " \($0)" } ?? "")\(hint.map { ", \($0)" } ?? ""))"
        case .signInRequired(let why): return "sign-in needed: \(why)"
        case .files(let status, let text): return "files service answered \(status): \(text)"
        case .backend(let error): return "\(error)"
        }
    }

    /// The refusal's reason for a client: the hint, else the code.
    public var reason: String? {
        if case .refused(_, let code, let hint) = self { return hint ?? code }
        return nil
    }

    /// A second upload intent for the same cue within the same second (trace 36): ask again
    /// a second later.
    public var isDuplicateIntent: Bool {
        if case .refused(409, _, _) = self { return true }
        return false
    }

    /// Worth retrying later: the backend or the network, not a refusal.
    public var isTransient: Bool {
        switch self {
        case .backend(let error):
            if case .invalidResponse = error { return false }
            return error != .cancelled
        case .files(let status, _): return status >= 500
        case .refused(let status, _, _): return status == 409 || status >= 500
        case .signInRequired: return false
        }
    }

    /// Reads an error answer: the `{code, details, hint, message}` object, or (files
    /// service, a proxy) plain text.
    static func from(status: Int, body: Data) -> ChatterboxError {
        struct Object: Decodable { var code: String?; var hint: String? }
        if let object = try? JSONDecoder().decode(Object.self, from: body), object.code != nil || object.hint != nil {
            return .refused(status: status, code: object.code, hint: object.hint)
        }
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmed()
        return .backend(.http(status: status, detail: text))
    }
}

extension ControlError {
    /// The client's view of a Chatterbox failure: `sign_in_required`, `refused` with the
    /// backend's reason, or the transport's codes.
    public init(_ error: ChatterboxError) {
        switch error {
        case .refused(let status, _, _):
            self.init(.refused, "the backend refused: \(error.reason ?? "no reason given")", retryable: error.isTransient, status: status,
                      reason: error.reason)
        case .signInRequired(let why):
            self.init(.signInRequired, why)
        case .files(let status, let text):
            self.init(.backendError, "the files service answered \(status): \(text)", retryable: status >= 500, status: status)
        case .backend(let backend):
            self.init(backend)
        }
    }
}
