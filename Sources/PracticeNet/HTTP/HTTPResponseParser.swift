/// Reads one HTTP/1.1 response as its bytes arrive (RFC 9112): the head, then the body
/// delimited by chunked transfer coding, by `Content-Length`, or by the connection closing.
///
/// Body bytes are handed out as slices of the input, never copied, so a streamed reply
/// costs the parser nothing per chunk. Interim (1xx) responses are skipped. Limits keep a
/// broken or hostile server from growing memory: a head of at most 64 KiB, chunk-size and
/// trailer lines of at most 4 KiB.
public struct HTTPResponseParser: Sendable {
    public struct Head: Equatable, Sendable {
        public var version: String
        public var status: Int
        /// In arrival order; names as sent.
        public var fields: [(name: String, value: String)]

        /// The field's values joined with ", " (as RFC 9110 allows for lists); nil when absent.
        public func value(_ name: String) -> String? {
            let values = fields.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
            return values.isEmpty ? nil : values.joined(separator: ", ")
        }

        /// Whether a comma-separated field lists `token` (case-insensitive).
        public func lists(_ name: String, _ token: String) -> Bool {
            guard let value = value(name) else { return false }
            return value.split(separator: ",").contains { $0.trimmed(newlines: false).equalsIgnoringASCIICase(token) }
        }

        public static func == (a: Head, b: Head) -> Bool {
            a.version == b.version && a.status == b.status && a.fields.elementsEqual(b.fields) { $0 == $1 }
        }
    }

    public enum Output {
        case head(Head)
        case body(UnsafeRawBufferPointer)
        /// The response is complete; bytes after it belong to the next one and are not consumed.
        case end
    }

    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    public static let maximumHeadBytes = 64 * 1024
    public static let maximumLineBytes = 4 * 1024

    private enum State {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        case done
    }

    private var state = State.head
    private var line: [UInt8] = []
    /// False for a response to HEAD: its head describes a body that is not sent.
    private let bodyAllowed: Bool
    /// Whether the connection may carry another request once this response is complete.
    public private(set) var keepAlive = false

    public init(requestHasBody bodyAllowed: Bool = true) {
        self.bodyAllowed = bodyAllowed
        line.reserveCapacity(1024)
    }

    public var isComplete: Bool { if case .done = state { return true } else { return false } }

    /// Consumes bytes, calling `emit` for each piece of output; returns how many bytes it
    /// consumed (fewer than given only once the response is complete).
    @discardableResult
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ emit: (Output) -> Void) throws(Failure) -> Int {
        var index = 0
        let count = bytes.count
        while index < count {
            switch state {
            case .head:
                // Line by line into one buffer; the head ends at an empty line.
                guard try takeLine(bytes, &index, limit: Self.maximumHeadBytes,
                                   tooLong: "response head longer than \(Self.maximumHeadBytes) bytes") else { return count }
                if Self.isBlankLineEnd(line) {
                    let head = try Self.parseHead(line)
                    line.removeAll(keepingCapacity: true)
                    if (100..<200).contains(head.status) && head.status != 101 { continue }  // interim: the real one follows
                    try begin(head)
                    emit(.head(head))
                    if case .done = state { emit(.end); return index }
                }
            case .fixed(let remaining):
                let take = min(remaining, count - index)
                emit(.body(UnsafeRawBufferPointer(rebasing: bytes[index..<index + take])))
                index += take
                if take == remaining {
                    state = .done
                    emit(.end)
                    return index
                }
                state = .fixed(remaining: remaining - take)
            case .chunkSize:
                guard try takeLine(bytes, &index, limit: Self.maximumLineBytes,
                                   tooLong: "chunk-size line longer than \(Self.maximumLineBytes) bytes") else { return count }
                let size = try Self.parseChunkSize(line)
                line.removeAll(keepingCapacity: true)
                state = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                let take = min(remaining, count - index)
                emit(.body(UnsafeRawBufferPointer(rebasing: bytes[index..<index + take])))
                index += take
                state = take == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - take)
            case .chunkDataEnd:
                // CRLF after the data (a bare LF is tolerated, as in lines).
                guard try takeLine(bytes, &index, limit: 2, tooLong: "chunk data not followed by CRLF") else { return count }
                guard line == [10] || line == [13, 10] else { throw Failure(description: "chunk data not followed by CRLF") }
                line.removeAll(keepingCapacity: true)
                state = .chunkSize
            case .trailers:
                guard try takeLine(bytes, &index, limit: Self.maximumLineBytes,
                                   tooLong: "trailer line longer than \(Self.maximumLineBytes) bytes") else { return count }
                let blank = line == [10] || line == [13, 10]
                line.removeAll(keepingCapacity: true)  // trailer fields are not used
                if blank {
                    state = .done
                    emit(.end)
                    return index
                }
            case .untilClose:
                emit(.body(UnsafeRawBufferPointer(rebasing: bytes[index..<count])))
                return count
            case .done:
                return index
            }
        }
        return index
    }

    /// The connection closed. Ends a body delimited by the close; anything else cut short
    /// is an error.
    public mutating func finishAtClose() throws(Failure) {
        switch state {
        case .done:
            return
        case .untilClose:
            state = .done
        case .head:
            throw Failure(description: line.isEmpty ? "the server closed the connection without answering" : "the server closed the connection in the middle of the response head")
        case .fixed(let remaining):
            throw Failure(description: "the server closed the connection \(remaining) bytes before the end of the body")
        case .chunkSize, .chunkData, .chunkDataEnd, .trailers:
            throw Failure(description: "the server closed the connection before the last chunk")
        }
    }

    // MARK: -

    private mutating func begin(_ head: Head) throws(Failure) {
        let http11 = head.version == "HTTP/1.1"
        keepAlive = http11 ? !head.lists("Connection", "close") : head.lists("Connection", "keep-alive")
        if !bodyAllowed || head.status == 204 || head.status == 304 || head.status == 101 {
            state = .done
            return
        }
        if let coding = head.value("Transfer-Encoding") {
            // Chunked must be the last coding; anything else runs until the close.
            let last = coding.split(separator: ",").last?.trimmed(newlines: false) ?? ""
            if last.equalsIgnoringASCIICase("chunked") {
                state = .chunkSize
                // Both headers mean someone in between may have read it differently: do not reuse.
                if head.value("Content-Length") != nil { keepAlive = false }
            } else {
                state = .untilClose
                keepAlive = false
            }
            return
        }
        if let length = head.value("Content-Length") {
            // "5, 5" (a repeated header) is one length; differing values are an error.
            let values = Set(length.split(separator: ",").map { $0.trimmed(newlines: false) })
            guard values.count == 1, let text = values.first, !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                  text.utf8.count <= 15, let value = Int(text) else {
                throw Failure(description: "bad Content-Length '\(length)'")
            }
            state = value == 0 ? .done : .fixed(remaining: value)
            return
        }
        state = .untilClose
        keepAlive = false
    }

    /// Adds the bytes up to and including the next LF to `line`; true once the line is
    /// whole, false when the input ran out first (the rest comes with the next feed).
    private mutating func takeLine(_ bytes: UnsafeRawBufferPointer, _ index: inout Int, limit: Int,
                                   tooLong: @autoclosure () -> String) throws(Failure) -> Bool {
        let newline = bytes[index...].firstIndex(of: 10)
        let end = newline.map { $0 + 1 } ?? bytes.count
        guard line.count + (end - index) <= limit else { throw Failure(description: tooLong()) }
        line.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<end]))
        index = end
        return newline != nil
    }

    /// The head so far ends with an empty line: LF LF, or CRLF CRLF (or a mix).
    private static func isBlankLineEnd(_ head: [UInt8]) -> Bool {
        let n = head.count
        if n >= 2 && head[n - 2] == 10 { return true }
        if n >= 3 && head[n - 3] == 10 && head[n - 2] == 13 { return true }
        return false
    }

    static func parseHead(_ bytes: [UInt8]) throws(Failure) -> Head {
        var lines = bytes.split(separator: 10, omittingEmptySubsequences: false).map { line -> ArraySlice<UInt8> in
            line.last == 13 ? line.dropLast() : line
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let statusLine = lines.first else { throw Failure(description: "empty response head") }
        // HTTP/1.x SP 3DIGIT [SP reason]
        let parts = statusLine.split(separator: 32, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, let version = String(validating: parts[0], as: UTF8.self), version == "HTTP/1.1" || version == "HTTP/1.0",
              parts[1].count == 3, parts[1].allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let status = Int(String(decoding: parts[1], as: UTF8.self)) else {
            throw Failure(description: "bad status line '\(String(decoding: statusLine.prefix(80), as: UTF8.self))'")
        }
        var fields: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            if let first = line.first, first == 32 || first == 9 {
                // Obsolete line folding: the line continues the previous value.
                guard !fields.isEmpty else { throw Failure(description: "a folded line before any header field") }
                fields[fields.count - 1].value += " " + String(decoding: line, as: UTF8.self).trimmed(newlines: false)
                continue
            }
            guard let colon = line.firstIndex(of: 58), colon > line.startIndex else {
                throw Failure(description: "bad header line '\(String(decoding: line.prefix(80), as: UTF8.self))'")
            }
            let name = line[line.startIndex..<colon]
            // A token: no whitespace or controls (a space before the colon is a smuggling trick).
            guard name.allSatisfy({ $0 > 32 && $0 < 127 }) else {
                throw Failure(description: "bad header name '\(String(decoding: name.prefix(80), as: UTF8.self))'")
            }
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmed(newlines: false)
            fields.append((String(decoding: name, as: UTF8.self), value))
        }
        return Head(version: version, status: status, fields: fields)
    }

    /// 1*HEXDIG [; extensions] CRLF, as a byte count.
    private static func parseChunkSize(_ line: [UInt8]) throws(Failure) -> Int {
        var size = 0
        var digits = 0
        for byte in line {
            let value: Int
            switch byte {
            case 48...57: value = Int(byte) - 48
            case 65...70: value = Int(byte) - 55
            case 97...102: value = Int(byte) - 87
            default:
                guard digits > 0, byte == 59 || byte == 32 || byte == 9 || byte == 13 || byte == 10 else {
                    throw Failure(description: "bad chunk-size line '\(String(decoding: line.prefix(40), as: UTF8.self))'")
                }
                return size
            }
            digits += 1
            guard digits <= 12 else { throw Failure(description: "chunk size too large") }  // 2^48: more than any reply
            size = size << 4 | value
        }
        throw Failure(description: "chunk-size line without an end")  // not reached: lines end in LF
    }
}
