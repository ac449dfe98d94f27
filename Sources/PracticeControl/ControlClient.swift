import AudioKernel
import FoundationEssentials
import Glibc
import PracticeNet
import PracticeProtocol

/// A blocking client of the control socket, for practicectl and tests: connects, reads
/// `hello`, sends requests and reads their replies; events that arrive meanwhile are kept
/// for ``nextEvent(timeout:)``.
public final class ControlClient {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// No daemon at the path (ENOENT, ECONNREFUSED).
        case notRunning(String)
        /// The socket refused us (EACCES from the filesystem, or `permission_denied`).
        case permissionDenied(String)
        /// The daemon answered with an error.
        case command(ControlError)
        case timedOut
        /// The connection ended or sent something that is not the protocol.
        case protocolError(String)

        public var description: String {
            switch self {
            case .notRunning(let why): return "practiced is not running: \(why)"
            case .permissionDenied(let why): return "permission denied: \(why)"
            case .command(let error): return "\(error.code.rawValue): \(error.message)"
            case .timedOut: return "no answer in time"
            case .protocolError(let why): return "protocol error: \(why)"
            }
        }
    }

    public let fd: Int32
    /// The server's hello.
    public private(set) var hello: JSONValue = .null
    private var buffer: [UInt8] = []
    private var events: [JSONValue] = []
    private var nextID = 1
    /// The command of each request sent and not yet answered, by its id (compact JSON).
    private var sent: [String: String] = [:]

    /// Sees every message a client reads, with the command a reply answers (nil for the
    /// hello, events, and replies to lines the client did not send as requests). The tests
    /// check every line the daemon writes against the protocol's schema with it.
    public typealias Inspector = @Sendable (_ message: JSONValue, _ answering: String?) -> Void
    private static let installedInspector = Locked<Inspector?>(nil)
    public static var inspector: Inspector? {
        get { installedInspector.withLock { $0 } }
        set { installedInspector.withLock { $0 = newValue } }
    }

    /// Connects and reads the hello (or the refusal that replaces it).
    public init(path: String, timeout: Double = 5) throws(Failure) {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .protocolError("socket: \(Errno(rawValue: errno).description)") }
        let connected = UnixListener.withAddress(path) { connect(fd, $0, $1) }
        if connected != 0 {
            let code = errno
            Glibc.close(fd)
            if code == EACCES || code == EPERM { throw .permissionDenied("\(path): \(Errno(rawValue: code).description)") }
            throw .notRunning("\(path): \(Errno(rawValue: code).description)")
        }
        let first = try readMessage(timeout: timeout)
        if first["type"]?.stringValue == "reply", let error = Self.error(first) {
            Glibc.close(fd)
            throw error.code == .permissionDenied ? .permissionDenied(error.message) : .command(error)
        }
        guard first["type"]?.stringValue == "hello" else { throw .protocolError("expected hello, got \(first.serialized(.compact))") }
        hello = first
    }

    deinit { Glibc.close(fd) }

    /// Sends command `C` and reads its reply as `C.Result`: the command's name comes from its
    /// type, and a result that is not the command's is a protocol error.
    public func send<C: ControlCommand>(_ command: C.Type, _ args: JSONValue = .object([]), timeout: Double = 10) throws(Failure) -> C.Result {
        let result = try request(C.name, args, timeout: timeout)
        do {
            return try ProtocolDecoder.decode(C.Result.self, from: result)
        } catch {
            throw .protocolError("\(C.name)'s result: \(error.message)")
        }
    }

    /// Sends command `C` (its name from its type) and waits for its reply; the result as the
    /// wire has it, for a caller that reads the JSON itself (a test of the wire's shape).
    public func request<C: ControlCommand>(_ command: C.Type, _ args: JSONValue = .object([]), timeout: Double = 10) throws(Failure) -> JSONValue {
        try request(C.name, args, timeout: timeout)
    }

    /// Sends a request and waits for its reply; the result, or the error it carried.
    public func request(_ command: String, _ args: JSONValue = .object([]), timeout: Double = 10) throws(Failure) -> JSONValue {
        let id = nextID
        nextID += 1
        let line: JSONValue = ["id": .int(id), "command": .string(command), "args": args]
        noteSent(id: .int(id), command: command)
        try send(line.bytes(.compact) + [0x0A])
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let message = try readMessage(timeout: deadline.timeIntervalSinceNow)
            if message["type"]?.stringValue == "event" {
                events.append(message)
                continue
            }
            guard message["type"]?.stringValue == "reply", message["id"]?.intValue == id else { continue }
            if let error = Self.error(message) { throw .command(error) }
            return message["result"] ?? .null
        }
    }

    /// The next event (kept or arriving), waiting at most `timeout` seconds.
    public func nextEvent(timeout: Double) throws(Failure) -> JSONValue {
        if !events.isEmpty { return events.removeFirst() }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let message = try readMessage(timeout: deadline.timeIntervalSinceNow)
            if message["type"]?.stringValue == "event" { return message }
        }
    }

    /// Records that a request with `id` for `command` went out by ``send(_:)``, so that its
    /// reply is inspected as that command's.
    public func noteSent(id: JSONValue, command: String) { sent[id.serialized(.compact)] = command }

    /// Writes raw bytes (tests send garbage with it).
    public func send(_ bytes: [UInt8]) throws(Failure) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .protocolError("send: \(Errno(rawValue: errno).description)")
            }
            offset += n
        }
    }

    /// Reads the next line as JSON.
    public func readMessage(timeout: Double) throws(Failure) -> JSONValue {
        let line = try readLine(timeout: timeout)
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(line)) else {
            throw .protocolError("not JSON: \(String(decoding: line.prefix(200), as: UTF8.self))")
        }
        var answering: String?
        if value["type"]?.stringValue == "reply", let id = value["id"] { answering = sent.removeValue(forKey: id.serialized(.compact)) }
        Self.inspector?(value, answering)
        return value
    }

    /// Reads the next raw line (without its LF).
    public func readLine(timeout: Double) throws(Failure) -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw .timedOut }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining, 3600) * 1000) + 1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw .timedOut }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .protocolError(n == 0 ? "the daemon closed the connection" : "recv: \(Errno(rawValue: errno).description)") }
            buffer += chunk[0..<n]
        }
    }

    static func error(_ reply: JSONValue) -> ControlError? {
        guard reply["ok"]?.boolValue == false, let error = reply["error"] else { return nil }
        let code = error["code"]?.stringValue.flatMap(ControlErrorCode.init(rawValue:)) ?? .internalError
        return ControlError(code, error["message"]?.stringValue ?? "", retryable: error["retryable"]?.boolValue ?? false,
                            status: error["status"]?.intValue, reason: error["reason"]?.stringValue)
    }
}
