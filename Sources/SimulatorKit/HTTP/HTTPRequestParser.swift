/// An HTTP/1.1 request as the simulator's server receives it.
public struct HTTPRequest: Equatable, Sendable {
    public var method: String
    /// The request target as sent (path and query).
    public var target: String
    /// "HTTP/1.1" or "HTTP/1.0".
    public var version: String
    /// Header fields in order, names as sent.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, target: String, version: String = "HTTP/1.1",
                headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
    }

    /// The first value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    /// Whether the connection stays open after the response: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool {
        let connection = header("Connection")?.lowercased()
        return version == "HTTP/1.0" ? connection == "keep-alive" : connection != "close"
    }

    public static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.target == b.target && a.version == b.version && a.body == b.body
            && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }
}

/// Why a request was refused; the server answers with `status` and closes the connection.
public struct HTTPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// 400 malformed, 413 body too large, 431 header too large, 501 unsupported coding,
    /// 505 version not supported.
    public var status: Int
    public var reason: String

    public var description: String { "\(status): \(reason)" }
}

/// Parses HTTP/1.1 requests from a connection's bytes, fed in chunks of any size; pipelined
/// requests come out one after another. Bodies by `Content-Length` or `chunked`
/// transfer coding (extensions and trailers accepted); a request with both is refused (the
/// request-smuggling rule of RFC 9112 §6.1). Lines may end in CRLF or a bare LF. Header
/// section and body sizes are limited. After an error the parser stays failed: the
/// connection is answered and closed.
public struct HTTPRequestParser {
    public var maximumHeaderBytes = 16 * 1024
    public var maximumBodyBytes = 16 * 1024 * 1024

    private enum State {
        case head
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case failed(HTTPParseError)
    }

    private var state = State.head
    private var line: [UInt8] = []
    private var headLines: [String] = []
    private var headBytes = 0
    private var request = HTTPRequest(method: "", target: "")

    public init() {}

    /// Feeds bytes; returns the requests completed, or throws the error that ends the
    /// connection.
    public mutating func feed(_ bytes: [UInt8]) throws(HTTPParseError) -> [HTTPRequest] {
        var done: [HTTPRequest] = []
        var i = 0
        while i < bytes.count {
            switch state {
            case .failed(let error):
                throw error
            case .fixedBody(let remaining):
                let n = min(remaining, bytes.count - i)
                request.body.append(contentsOf: bytes[i..<(i + n)])
                i += n
                if remaining - n == 0 { done.append(finish()) } else { state = .fixedBody(remaining: remaining - n) }
            case .chunkData(let remaining):
                let n = min(remaining, bytes.count - i)
                request.body.append(contentsOf: bytes[i..<(i + n)])
                i += n
                state = remaining - n == 0 ? .chunkDataEnd : .chunkData(remaining: remaining - n)
            case .head, .chunkSize, .chunkDataEnd, .trailers:
                let byte = bytes[i]
                i += 1
                if byte != 0x0A {
                    line.append(byte)
                    headBytes += 1
                    if headBytes > maximumHeaderBytes { try fail(431, "header section larger than \(maximumHeaderBytes) bytes") }
                    continue
                }
                if line.last == 0x0D { line.removeLast() }
                let text = String(decoding: line, as: UTF8.self)
                line.removeAll(keepingCapacity: true)
                if let request = try handleLine(text) { done.append(request) }
            }
        }
        if case .failed(let error) = state { throw error }
        return done
    }

    private mutating func fail(_ status: Int, _ reason: String) throws(HTTPParseError) -> Never {
        let error = HTTPParseError(status: status, reason: reason)
        state = .failed(error)
        throw error
    }

    /// Handles one complete line of the head, a chunk size, a chunk's end or a trailer.
    private mutating func handleLine(_ text: String) throws(HTTPParseError) -> HTTPRequest? {
        switch state {
        case .head:
            if text.isEmpty {
                if headLines.isEmpty { return nil }  // blank lines before a request are ignored
                return try startBody()
            }
            headLines.append(text)
            return nil
        case .chunkSize:
            let sizeText = text.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: " \t") } ?? ""
            guard !sizeText.isEmpty, sizeText.count <= 8, let size = Int(sizeText, radix: 16) else {
                try fail(400, "bad chunk size '\(text)'")
            }
            if request.body.count + size > maximumBodyBytes { try fail(413, "body larger than \(maximumBodyBytes) bytes") }
            state = size == 0 ? .trailers : .chunkData(remaining: size)
            return nil
        case .chunkDataEnd:
            guard text.isEmpty else { try fail(400, "chunk data longer than its size") }
            state = .chunkSize
            return nil
        case .trailers:
            return text.isEmpty ? finish() : nil  // trailer fields are accepted and ignored
        default:
            return nil
        }
    }

    /// The head is complete: parse it and decide how the body is framed.
    private mutating func startBody() throws(HTTPParseError) -> HTTPRequest? {
        let requestLine = headLines[0].split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, !requestLine[0].isEmpty, requestLine[0].allSatisfy({ $0.isLetter && $0.isUppercase }),
              requestLine[1].hasPrefix("/") || requestLine[1] == "*" else {
            try fail(400, "malformed request line '\(headLines[0])'")
        }
        let version = String(requestLine[2])
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else { try fail(505, "HTTP version '\(version)' not supported") }
        var headers: [(name: String, value: String)] = []
        for field in headLines.dropFirst() {
            guard let colon = field.firstIndex(of: ":"), colon != field.startIndex,
                  !field[..<colon].contains(where: { $0 == " " || $0 == "\t" }) else {
                try fail(400, "malformed header field '\(field)'")
            }
            headers.append((String(field[..<colon]), field[field.index(after: colon)...].trimmingCharacters(in: " \t")))
        }
        request = HTTPRequest(method: String(requestLine[0]), target: String(requestLine[1]), version: version, headers: headers)
        headLines.removeAll(keepingCapacity: true)
        let transferEncoding = request.header("Transfer-Encoding")?.lowercased()
        let contentLength = request.header("Content-Length")
        if transferEncoding != nil, contentLength != nil { try fail(400, "both Content-Length and Transfer-Encoding") }
        if let transferEncoding {
            guard transferEncoding == "chunked" else { try fail(501, "transfer coding '\(transferEncoding)' not supported") }
            state = .chunkSize
            return nil
        }
        if let contentLength {
            guard let length = Int(contentLength), length >= 0, contentLength.allSatisfy(\.isNumber) else {
                try fail(400, "bad Content-Length '\(contentLength)'")
            }
            if length > maximumBodyBytes { try fail(413, "body larger than \(maximumBodyBytes) bytes") }
            if length > 0 {
                state = .fixedBody(remaining: length)
                return nil
            }
        }
        return finish()
    }

    private mutating func finish() -> HTTPRequest {
        let complete = request
        request = HTTPRequest(method: "", target: "")
        state = .head
        headBytes = 0
        return complete
    }
}

extension StringProtocol {
    /// The string without leading and trailing characters from `set`.
    func trimmingCharacters(in set: String) -> String {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return String(slice)
    }
}
