#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A server-sent event as the WHATWG rules define it.
public struct SSEEvent: Equatable, Sendable {
    /// The `event` field, or "message" when none was given.
    public var type: String
    /// The `data` lines joined with LF.
    public var data: String
    /// The last event ID seen so far in the stream.
    public var lastEventID: String

    public init(type: String, data: String, lastEventID: String = "") {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}

/// An event as the parser holds it: views of its bytes, valid only during the callback.
/// The audio path reads `data` straight from here without building a String.
public struct SSEEventView {
    /// The event type's UTF-8 bytes ("message" when the stream gave none).
    public let type: UnsafeRawBufferPointer
    /// The data's UTF-8 bytes (lines joined with LF).
    public let data: UnsafeRawBufferPointer
    /// The last event ID.
    public let lastEventID: String

    /// Whether the type is exactly `name` (no String is built).
    public func isType(_ name: StaticString) -> Bool {
        guard name.utf8CodeUnitCount == type.count, let base = type.baseAddress else { return name.utf8CodeUnitCount == 0 && type.isEmpty }
        return memcmp(name.utf8Start, base, type.count) == 0
    }

    /// A copy as an ``SSEEvent``; invalid UTF-8 becomes U+FFFD.
    public func makeEvent() -> SSEEvent {
        SSEEvent(type: String(decoding: type, as: UTF8.self), data: String(decoding: data, as: UTF8.self), lastEventID: lastEventID)
    }
}

/// Parses a server-sent-event stream fed as bytes in chunks of any size, exactly as the
/// WHATWG HTML standard's "event stream interpretation" says:
/// - one leading U+FEFF BOM is skipped;
/// - lines end at CR, LF or CRLF, also when the CR and the LF arrive in different chunks;
/// - lines starting with ":" are comments; a line without ":" is a field with an empty value;
///   one space after the colon is dropped;
/// - `data` lines are joined with LF; `event` sets the type; `id` sets the last event ID
///   (ignored when it holds NUL) and persists across events; `retry` takes digits only;
/// - a blank line dispatches the event (none when the data is empty); an event not closed by
///   a blank line when the stream ends is discarded;
/// - invalid UTF-8 becomes U+FFFD (bytes are decoded per field; line ends are ASCII, so this
///   equals decoding the whole stream).
///
/// Buffers are kept between events: in steady state parsing allocates nothing. A line that
/// lies inside one chunk is read in place; only a line split across chunks is copied.
public struct SSEParser {
    /// The last event ID (persists across events).
    public private(set) var lastEventID = ""
    /// The reconnection time the stream asked for with `retry`, in milliseconds.
    public private(set) var reconnectionTime: Int?

    private var partialLine: [UInt8] = []
    private var data: [UInt8] = []
    private var eventType: [UInt8] = []
    private var bomState = 0  // 0..3 bytes of the BOM seen; 4 = past the start of the stream
    private var pendingCR = false

    private static let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
    private static let message: StaticString = "message"

    public init() {}

    /// The capacity kept for lines split across chunks (tests check that it is reused).
    var splitLineCapacity: Int { partialLine.capacity }

    /// Feeds the next bytes of the stream; `onEvent` is called for each event completed.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, onEvent: (SSEEventView) -> Void) {
        var input = bytes
        if bomState < 4 { input = skipBOM(input) }
        // An empty read changes nothing (a pending CR still waits for a possible LF).
        guard !input.isEmpty else { return }
        if pendingCR {
            pendingCR = false
            if input[0] == 0x0A { input = UnsafeRawBufferPointer(rebasing: input[1...]) }  // the LF of a split CRLF
        }
        guard let base = input.baseAddress else { return }
        var start = 0
        let end = input.count
        var nextCR = findCR(base, from: 0, to: end)
        while start < end {
            if nextCR < start { nextCR = findCR(base, from: start, to: end) }
            let lf = memchr(base + start, 0x0A, end - start).map { $0 - UnsafeMutableRawPointer(mutating: base) } ?? end
            let lineEnd = min(lf, nextCR)
            if lineEnd == end {
                Self.append(&partialLine, UnsafeRawBufferPointer(rebasing: input[start..<end]))
                return
            }
            if partialLine.isEmpty {
                processLine(UnsafeRawBufferPointer(rebasing: input[start..<lineEnd]), onEvent: onEvent)
            } else {
                Self.append(&partialLine, UnsafeRawBufferPointer(rebasing: input[start..<lineEnd]))
                // Swapped out rather than copied (a copy would make the next append
                // reallocate), then swapped back with its capacity.
                var line: [UInt8] = []
                swap(&line, &partialLine)
                line.withUnsafeBytes { processLine($0, onEvent: onEvent) }
                line.removeAll(keepingCapacity: true)
                swap(&line, &partialLine)
            }
            if lineEnd == nextCR {
                if lineEnd + 1 < end {
                    start = lineEnd + (input[lineEnd + 1] == 0x0A ? 2 : 1)
                } else {
                    pendingCR = true  // a CR at the chunk's end: its LF may come next
                    start = end
                }
            } else {
                start = lineEnd + 1
            }
        }
    }

    /// Feeds the next bytes of the stream.
    public mutating func feed(_ bytes: [UInt8], onEvent: (SSEEventView) -> Void) {
        bytes.withUnsafeBytes { feed($0, onEvent: onEvent) }
    }

    /// Feeds bytes and returns the completed events as values.
    public mutating func events(from bytes: [UInt8]) -> [SSEEvent] {
        var result: [SSEEvent] = []
        feed(bytes) { result.append($0.makeEvent()) }
        return result
    }

    /// The stream ended: an event without its blank line is discarded, as the standard says.
    public mutating func finish() {
        partialLine.removeAll(keepingCapacity: true)
        data.removeAll(keepingCapacity: true)
        eventType.removeAll(keepingCapacity: true)
        pendingCR = false
    }

    /// Appends raw bytes with one memcpy. Static on purpose: an instance method called with
    /// `&self.partialLine` would hold a second reference to the array and make every append
    /// copy it (the benchmark's allocation stacks showed it).
    private static func append(_ array: inout [UInt8], _ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        array.append(contentsOf: UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: bytes.count))
    }

    private func findCR(_ base: UnsafeRawPointer, from: Int, to: Int) -> Int {
        guard from < to else { return to }
        return memchr(base + from, 0x0D, to - from).map { $0 - UnsafeMutableRawPointer(mutating: base) } ?? to
    }

    private mutating func skipBOM(_ input: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var i = 0
        while bomState < 3, i < input.count {
            if input[i] == Self.bom[bomState] {
                bomState += 1
                i += 1
            } else {
                // Not a BOM after all: the bytes matched so far are ordinary input.
                // (They are not line ends, so they simply begin the first line.)
                partialLine.append(contentsOf: Self.bom[0..<bomState])
                bomState = 4
                return UnsafeRawBufferPointer(rebasing: input[i...])
            }
        }
        if bomState == 3 { bomState = 4 }
        return UnsafeRawBufferPointer(rebasing: input[i...])
    }

    private mutating func processLine(_ line: UnsafeRawBufferPointer, onEvent: (SSEEventView) -> Void) {
        if line.isEmpty {
            dispatch(onEvent)
            return
        }
        if line[0] == 0x3A { return }  // ":" comment
        let colon = line.firstIndex(of: 0x3A)
        let name = UnsafeRawBufferPointer(rebasing: line[0..<(colon ?? line.count)])
        var value = colon.map { UnsafeRawBufferPointer(rebasing: line[($0 + 1)...]) } ?? UnsafeRawBufferPointer(rebasing: line[line.count...])
        if let first = value.first, first == 0x20 { value = UnsafeRawBufferPointer(rebasing: value[1...]) }
        switch name.count {
        case 4 where matches(name, "data"):
            Self.append(&data, value)
            data.append(0x0A)
        case 5 where matches(name, "event"):
            eventType.removeAll(keepingCapacity: true)
            Self.append(&eventType, value)
        case 2 where matches(name, "id"):
            if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
        case 5 where matches(name, "retry"):
            if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }) {
                reconnectionTime = Int(String(decoding: value, as: UTF8.self))
            }
        default:
            break  // unknown fields are ignored
        }
    }

    private func matches(_ bytes: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        return memcmp(base, name.utf8Start, name.utf8CodeUnitCount) == 0
    }

    private mutating func dispatch(_ onEvent: (SSEEventView) -> Void) {
        defer {
            data.removeAll(keepingCapacity: true)
            eventType.removeAll(keepingCapacity: true)
        }
        guard !data.isEmpty else { return }
        data.removeLast()  // the LF after the last data line
        let id = lastEventID
        let useDefault = eventType.isEmpty  // an empty type means "message"
        data.withUnsafeBytes { dataBytes in
            if useDefault {
                onEvent(SSEEventView(type: UnsafeRawBufferPointer(start: Self.message.utf8Start, count: Self.message.utf8CodeUnitCount),
                                     data: dataBytes, lastEventID: id))
            } else {
                eventType.withUnsafeBytes { typeBytes in
                    onEvent(SSEEventView(type: typeBytes, data: dataBytes, lastEventID: id))
                }
            }
        }
    }
}
