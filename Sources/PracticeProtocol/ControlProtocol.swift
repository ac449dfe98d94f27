import FoundationEssentials
import PracticeNet

/// The control socket's protocol, `practiced/1`: one JSON object per LF-terminated line,
/// at most ``maximumLineBytes`` bytes. See docs/protocol.md for every message.
public enum ControlProtocol {
    public static let name = "practiced"
    public static let majorVersion = 1
    public static let minorVersion = 0
    public static var identifier: String { "\(name)/\(majorVersion)" }
    /// A longer line is refused with `line_too_long` and the connection is closed.
    public static let maximumLineBytes = 64 * 1024

    /// Whether a client's `practiced/M[.m]` is one this server speaks (same major).
    public static func accepts(_ protocolName: String) -> Bool {
        let prefix = "\(name)/"
        guard protocolName.hasPrefix(prefix) else { return false }
        let version = protocolName.dropFirst(prefix.count)
        let major = version.split(separator: ".", maxSplits: 1).first.flatMap { Int($0) }
        return major == majorVersion
    }
}

/// The error codes a reply can carry.
public enum ControlErrorCode: String, Sendable, CaseIterable {
    /// The line is not JSON, not UTF-8, or not an object.
    case malformedJSON = "malformed_json"
    /// The line is longer than 64 KiB; the connection is closed.
    case lineTooLong = "line_too_long"
    case unknownCommand = "unknown_command"
    /// A missing, unknown-typed or out-of-range argument.
    case badArguments = "bad_arguments"
    /// The command is not allowed in the current state.
    case invalidState = "invalid_state"
    /// The client speaks another major version; the connection is closed.
    case unsupportedProtocol = "unsupported_protocol"
    /// The peer's uid is neither the daemon's, root, nor in the socket group.
    case permissionDenied = "permission_denied"
    /// Nothing answered: the backend could not be reached, or did not answer in time.
    case backendUnavailable = "backend_unavailable"
    /// The backend answered, with an error status (in `status`, its detail in the message)
    /// or with a body that is not the contract's shape. A 500 is an answer, not an outage.
    case backendError = "backend_error"
    case deviceError = "device_error"
    /// The daemon already serves its maximum number of clients.
    case tooManyClients = "too_many_clients"
    /// A file named by the command cannot be read or is not a usable WAV.
    case fileError = "file_error"
    /// Cue practice: the learner must sign in (never did, signed out, or the backend
    /// refused the tokens and their refresh).
    case signInRequired = "sign_in_required"
    /// Cue practice: the backend refused the request for a reason of its own, given in
    /// `reason` (its machine-readable hint, such as `invalid_login_code`, or its code).
    case refused
    case internalError = "internal"
}

/// An error reply: a code to act on, a message for people, and whether the same request
/// may succeed later.
public struct ControlError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: ControlErrorCode
    public var message: String
    public var retryable: Bool
    /// The backend's HTTP status, for `backend_error` answers that had one.
    public var status: Int?
    /// For `refused`: the backend's reason (a hint or a code).
    public var reason: String?

    public init(_ code: ControlErrorCode, _ message: String, retryable: Bool = false, status: Int? = nil, reason: String? = nil) {
        self.code = code
        self.message = message
        self.retryable = retryable
        self.status = status
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(message)" }

    var json: JSONValue {
        var members: [(String, JSONValue)] = [("code", .string(code.rawValue)), ("message", .string(message)), ("retryable", .bool(retryable))]
        if let status { members.append(("status", .int(status))) }
        if let reason { members.append(("reason", .string(reason))) }
        return .object(members)
    }
}

/// A request as read from a line: `{"id": 7, "command": "status", "args": {...}}`.
public struct ControlRequest: Equatable, Sendable {
    /// The client's id, echoed in the reply: a string or an integer.
    public var id: JSONValue
    public var command: String
    /// The arguments (an empty object when absent). Unknown members are ignored.
    public var args: JSONValue

    public init(id: JSONValue, command: String, args: JSONValue = .object([])) {
        self.id = id
        self.command = command
        self.args = args
    }
}

/// Reads request lines. Pure and allocation-bounded: the fuzz target drives it directly.
public enum ControlRequestDecoder {
    /// Decodes one line (without its LF; a trailing CR is allowed). On failure the error
    /// comes with the request's id when one could be read, so the reply can carry it.
    public static func decode(_ line: [UInt8]) -> Result<ControlRequest, DecodeFailure> {
        var bytes = line[...]
        if bytes.last == 0x0D { bytes = bytes.dropLast() }
        guard bytes.count <= ControlProtocol.maximumLineBytes else {
            return .failure(DecodeFailure(id: .null, error: ControlError(.lineTooLong, "a line may hold at most \(ControlProtocol.maximumLineBytes) bytes")))
        }
        guard String(validating: bytes, as: UTF8.self) != nil else {
            return .failure(DecodeFailure(id: .null, error: ControlError(.malformedJSON, "the line is not valid UTF-8")))
        }
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        } catch {
            return .failure(DecodeFailure(id: .null, error: ControlError(.malformedJSON, "the line is not JSON")))
        }
        guard value.isObject else {
            return .failure(DecodeFailure(id: .null, error: ControlError(.malformedJSON, "a request is a JSON object")))
        }
        let id = value["id"] ?? .null
        switch id {
        case .string, .int: break
        default:
            return .failure(DecodeFailure(id: .null, error: ControlError(.badArguments, "'id' must be a string or an integer")))
        }
        guard let command = value["command"]?.stringValue, !command.isEmpty else {
            return .failure(DecodeFailure(id: id, error: ControlError(.badArguments, "'command' must be a non-empty string")))
        }
        let args = value["args"] ?? .object([])
        guard args.isObject else {
            return .failure(DecodeFailure(id: id, error: ControlError(.badArguments, "'args' must be an object")))
        }
        return .success(ControlRequest(id: id, command: command, args: args))
    }

    public struct DecodeFailure: Error, Equatable, Sendable {
        public var id: JSONValue
        public var error: ControlError

        public init(id: JSONValue, error: ControlError) {
            self.id = id
            self.error = error
        }
    }
}

/// The lines the server writes.
package enum ControlMessage {
    package static func hello(serverVersion: String, capabilities: [String]) -> [UInt8] {
        line(ProtocolEncoder.encode(ServerHello(serverVersion: serverVersion, capabilities: capabilities)))
    }

    package static func ok(id: JSONValue, result: JSONValue) -> [UInt8] {
        line(["type": "reply", "id": id, "ok": true, "result": result])
    }

    package static func error(id: JSONValue, _ error: ControlError) -> [UInt8] {
        line(["type": "reply", "id": id, "ok": false, "error": error.json])
    }

    /// `mono_ns` is CLOCK_MONOTONIC when the event was published, comparable with any
    /// process's clock on the machine: a client can tell how late it reads, and order
    /// events against its own.
    package static func event(seq: UInt64, topic: String, name: String, published: Int64, data: JSONValue) -> [UInt8] {
        line(["type": "event", "seq": .int(Int(seq)), "topic": .string(topic), "event": .string(name), "mono_ns": .int(Int(published)),
              "data": data])
    }

    private static func line(_ value: JSONValue) -> [UInt8] { value.bytes(.compact) + [0x0A] }
}
