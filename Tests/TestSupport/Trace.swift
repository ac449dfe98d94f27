import Foundation
import PracticeKit
import PracticeNet

/// One exchange recorded byte for byte against the real TalkCo server
/// (`shared/talkco-traces/NN-name.json`, described by that folder's README): the request the
/// recording client sent, and the status, headers, exact body bytes and SSE arrival times
/// of the answer. The traces are the reference for the backend; practice-sim and the client
/// are checked against them, never the other way round.
public struct Trace: Sendable {
    public let name: String
    public let title: String
    public let method: String
    public private(set) var path: String
    /// The request's Content-Type (the only request header the TalkCo traces record).
    public let requestContentType: String?
    /// The request headers recorded (the Chatterbox traces record Authorization and
    /// X-Refresh-Token too, with placeholders for the tokens).
    public let requestHeaders: [String: String]
    /// The exact JSON text sent (JSON requests only).
    public let requestBody: String?
    public let status: Int
    /// As recorded: Content-Type, and Content-Length or Transfer-Encoding.
    public private(set) var headers: [String: String]
    /// The exact body bytes (for SSE: the de-chunked stream).
    public private(set) var body: [UInt8]
    /// Milliseconds from the request to the headers, and to the body's end.
    public let headersMilliseconds: Double
    public let completeMilliseconds: Double
    /// SSE only: the events in arrival order.
    public let events: [Event]

    public struct Event: Sendable {
        public let name: String
        /// The text after `data: `.
        public let data: [UInt8]
        /// The event's bytes as the server wrote them (`event: …\ndata: …\n\n`): one chunk.
        public let bytes: [UInt8]
        /// Milliseconds from the request until its closing blank line had been read.
        public let arrivalMilliseconds: Double

        public var json: JSONValue? { Trace.parse(data) }
    }

    public var isStream: Bool { headers["Content-Type"]?.hasPrefix("text/event-stream") == true }
    public var contentType: String { headers["Content-Type"] ?? "" }
    /// The body as JSON (REST answers), nil when it is not JSON (the 500's plain text).
    public var json: JSONValue? { Trace.parse(body) }
    public var eventNames: [String] { events.map(\.name) }
    /// Whether the stream ends with `done` (file 11 does not: the client hung up).
    public var isWhole: Bool { events.last?.name == "done" }

    /// The PCM16 bytes of every `audio` event, joined (each event decoded on its own).
    public var audio: [UInt8] {
        events.filter { $0.name == "audio" }.flatMap { event -> [UInt8] in
            guard let text = event.json?["audio"]?.stringValue, let pcm = Data(base64Encoded: text) else { return [] }
            return Array(pcm)
        }
    }

    /// The `text` of the first event named `name`.
    public func text(of name: String) -> String? { events.first { $0.name == name }?.json?["text"]?.stringValue }

    /// Where the traces are: `$TALKCO_TRACES`, else `shared/talkco-traces` beside the
    /// checkout (where CI puts `shared/`).
    public static let directory: String = {
        if let path = ProcessInfo.processInfo.environment["TALKCO_TRACES"], !path.isEmpty { return path }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared/talkco-traces").path
    }()

    /// Every trace file's name (without `.json`), in order.
    public static var all: [String] { all(in: directory) }

    /// Where the Chatterbox traces are: `$CHATTERBOX_TRACES`, else `shared/chatterbox-traces`
    /// beside the checkout.
    public static let chatterboxDirectory: String = {
        if let path = ProcessInfo.processInfo.environment["CHATTERBOX_TRACES"], !path.isEmpty { return path }
        return URL(fileURLWithPath: directory).deletingLastPathComponent().appendingPathComponent("chatterbox-traces").path
    }()

    /// Every trace file's name in `directory` (without `.json`), in order.
    public static func all(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".json") && $0.first?.isNumber == true }.map { String($0.dropLast(5)) }.sorted()
    }

    /// Loads `NN-name` (or a unique prefix such as `21`) from `directory` (the TalkCo traces
    /// unless told).
    public static func load(_ name: String, from directory: String = directory) throws -> Trace {
        let match = all(in: directory).filter { $0 == name || $0.hasPrefix(name + "-") }
        guard match.count == 1 else { throw TraceError(message: "no single trace named \(name) in \(directory) (found \(match))") }
        let data = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent(match[0] + ".json"))
        return try Trace(name: match[0], data: data)
    }

    /// A Chatterbox trace.
    public static func chatterbox(_ name: String) throws -> Trace { try load(name, from: chatterboxDirectory) }

    /// The trace with each key of `replacements` replaced by its value in the path, the
    /// answer's headers and body (a placeholder such as `<UPLOAD_SIG_1>`, or a recorded
    /// host, made into what the replay serves).
    public func replacing(_ replacements: [String: String]) -> Trace {
        var copy = self
        for (old, new) in replacements {
            copy.path = copy.path.replacingOccurrences(of: old, with: new)
            copy.headers = copy.headers.mapValues { $0.replacingOccurrences(of: old, with: new) }
            // Text bodies only: a binary one (the .m4a of file 34) is left as it is.
            if let text = String(bytes: copy.body, encoding: .utf8) { copy.body = Array(text.replacingOccurrences(of: old, with: new).utf8) }
        }
        return copy
    }

    init(name: String, data: Data) throws {
        let file = try JSONDecoder().decode(JSONValue.self, from: data)
        let request = file["request"] ?? .null, response = file["response"] ?? .null
        func need<T>(_ value: T?, _ what: String) throws -> T {
            guard let value else { throw TraceError(message: "\(name): no \(what)") }
            return value
        }
        self.name = name
        title = file["title"]?.stringValue ?? name
        method = try need(request["method"]?.stringValue, "request.method")
        path = try need(request["path"]?.stringValue, "request.path")
        requestContentType = request["headers"]?["Content-Type"]?.stringValue
        var requestHeaders: [String: String] = [:]
        if case .object(let members) = request["headers"] ?? .null {
            for (key, value) in members { requestHeaders[key] = value.stringValue }
        }
        self.requestHeaders = requestHeaders
        requestBody = request["body_text"]?.stringValue
        status = try need(response["status"]?.intValue, "response.status")
        var headers: [String: String] = [:]
        if case .object(let members) = response["headers"] ?? .null {
            for (key, value) in members { headers[key] = value.stringValue }
        }
        self.headers = headers
        body = try Array(need(Data(base64Encoded: need(response["body_base64"]?.stringValue, "body_base64")), "base64 body"))
        headersMilliseconds = response["timing_ms"]?["headers_received"]?.doubleValue ?? 0
        completeMilliseconds = response["timing_ms"]?["body_complete"]?.doubleValue ?? headersMilliseconds
        var events: [Event] = []
        if headers["Content-Type"]?.hasPrefix("text/event-stream") == true {
            let arrivals = response["arrival_ms"]?.arrayValue?.compactMap(\.doubleValue) ?? []
            for (index, block) in try Self.sseEvents(in: body).enumerated() {
                events.append(Event(name: block.name, data: block.data, bytes: block.bytes,
                                    arrivalMilliseconds: index < arrivals.count ? arrivals[index] : completeMilliseconds))
            }
        }
        self.events = events
    }

    /// The events of an SSE body in the grammar the real server uses (the traces' README):
    /// exactly `event: NAME\ndata: JSON\n\n`, nothing else; anything else is an error.
    public static func sseEvents(in bytes: [UInt8]) throws -> [(name: String, data: [UInt8], bytes: [UInt8])] {
        var events: [(name: String, data: [UInt8], bytes: [UInt8])] = []
        var start = 0
        while let end = blankLine(in: bytes, from: start) {
            let block = Array(bytes[start..<end])
            guard let newline = block.firstIndex(of: 0x0A) else { throw TraceError(message: "an event without a data line") }
            let nameLine = String(decoding: block[..<newline], as: UTF8.self)
            let dataLine = Array(block[(newline + 1)...])
            guard nameLine.hasPrefix("event: "), dataLine.starts(with: Array("data: ".utf8)), !dataLine.contains(0x0A) else {
                throw TraceError(message: "an event block not in the server's form: \(String(decoding: block.prefix(80), as: UTF8.self))")
            }
            events.append((String(nameLine.dropFirst(7)), Array(dataLine.dropFirst(6)), Array(bytes[start..<(end + 2)])))
            start = end + 2
        }
        guard start == bytes.count else { throw TraceError(message: "\(bytes.count - start) bytes after the last event") }
        return events
    }

    /// JSON bytes as a value, nil when they are not JSON.
    public static func parse(_ bytes: [UInt8]) -> JSONValue? { try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) }

    private static func blankLine(in bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == 0x0A && bytes[index + 1] == 0x0A { return index }
            index += 1
        }
        return nil
    }
}

public struct TraceError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
