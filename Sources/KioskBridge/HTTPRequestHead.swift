/// The head of one HTTP/1.1 request (RFC 9112): its request line and header fields, parsed
/// from the bytes before the blank line. The bridge serves GETs and one WebSocket upgrade,
/// so a request with a body is refused rather than read.
public struct HTTPRequestHead: Equatable, Sendable {
    public var method: String
    public var target: String
    public var version: String
    /// Field names in lower case, in order; a repeated field appears once per line.
    public var fields: [(name: String, value: String)]

    public static func == (a: Self, b: Self) -> Bool {
        a.method == b.method && a.target == b.target && a.version == b.version
            && a.fields.elementsEqual(b.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The longest head accepted (a browser's are under 2 KB).
    public static let maximumBytes = 16 * 1024

    public enum ParseResult: Equatable, Sendable {
        /// More bytes are needed (and fewer than ``maximumBytes`` have come).
        case incomplete
        /// A head, and how many bytes of the input it took (the blank line included).
        case head(HTTPRequestHead, length: Int)
        /// Not a request this server can read: answer `status` and close.
        case invalid(status: Int, reason: String)
    }

    /// The first value of field `name` (lower case).
    public func field(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// Every comma-separated token of every `name` field, trimmed.
    public func tokens(_ name: String) -> [String] {
        fields.filter { $0.name == name }.flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingCharacters(in: " \t") }.filter { !$0.isEmpty }
    }

    public var keepAlive: Bool {
        let connection = tokens("connection").map { $0.lowercased() }
        return version == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
    }

    /// `searchFrom`: where to look for the blank line (bytes before it were searched already).
    public static func parse(_ bytes: [UInt8], searchFrom: Int = 0) -> ParseResult {
        guard let end = headEnd(bytes, from: searchFrom) else {
            return bytes.count >= maximumBytes ? .invalid(status: 431, reason: "a request head over \(maximumBytes) bytes") : .incomplete
        }
        guard end <= maximumBytes else { return .invalid(status: 431, reason: "a request head over \(maximumBytes) bytes") }
        // Field values are bytes to HTTP; the ones this server reads are ASCII, and anything
        // else (a control character, a byte over 0x7E) makes the request invalid.
        guard bytes[..<end].allSatisfy({ $0 == 0x09 || $0 == 0x0D || $0 == 0x0A || (0x20...0x7E).contains($0) }) else {
            return .invalid(status: 400, reason: "a request head that is not printable ASCII")
        }
        let text = String(decoding: bytes[..<end], as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, !requestLine[0].isEmpty, requestLine[1].first == "/" else {
            return .invalid(status: 400, reason: "a malformed request line")
        }
        let version = String(requestLine[2])
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else { return .invalid(status: 505, reason: "HTTP version \(version)") }
        var fields: [(String, String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                  !line[..<colon].contains(where: { $0 == " " || $0 == "\t" }) else {
                return .invalid(status: 400, reason: "a malformed header field")
            }
            fields.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: " \t")))
        }
        let head = HTTPRequestHead(method: String(requestLine[0]), target: String(requestLine[1]), version: version, fields: fields)
        // A body is never wanted here; a chunked or sized one is refused unread.
        if head.field("transfer-encoding") != nil || (head.field("content-length").map { $0 != "0" } ?? false) {
            return .invalid(status: 413, reason: "a request with a body")
        }
        return .head(head, length: end + 4)
    }

    /// The index of the blank line's "\r\n\r\n", if it has come.
    private static func headEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= 4, start <= bytes.count - 4 else { return nil }
        for i in max(0, start)...(bytes.count - 4) where bytes[i] == 0x0D && bytes[i + 1] == 0x0A && bytes[i + 2] == 0x0D && bytes[i + 3] == 0x0A {
            return i
        }
        return nil
    }
}

extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice.removeFirst() }
        while let last = slice.last, set.contains(last) { slice.removeLast() }
        return String(slice)
    }
}
