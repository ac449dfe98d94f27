/// The server's side of one WebSocket after its handshake (RFC 6455, sections 5 and 7): bytes
/// from the client in, complete messages and the bytes to answer with out. No I/O: the
/// bridge's connection feeds it what it reads and writes what it is told to.
///
/// Everything a client may send is checked, and a violation closes the connection with the
/// code the RFC gives it: an unmasked frame, reserved bits or opcodes, a fragmented or
/// oversized control frame, a continuation with nothing to continue or a new message inside
/// a fragmented one (1002); a text message that is not UTF-8 (1007); a message over
/// ``maximumMessageBytes`` (1009, refused from its frame header, before its payload is held).
public struct WebSocketSession: Sendable {
    public enum Opcode: UInt8, Sendable {
        case continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10
    }

    /// What the connection does next, in order.
    public enum Action: Equatable, Sendable {
        /// A complete data message's payload (text or binary) for the other side.
        case deliver([UInt8])
        /// Bytes for the client: a pong, or a close frame (after which `close` follows).
        case send([UInt8])
        /// The WebSocket is over: close the connection once `send`s before it are written.
        /// `code` is the status this side sent.
        case close(code: UInt16, reason: String)
    }

    /// The largest message, and so the largest frame, a client may send.
    public let maximumMessageBytes: Int
    private var message: [UInt8] = []
    private var messageIsText = false
    private var inMessage = false
    public private(set) var isClosed = false

    public init(maximumMessageBytes: Int = 256 * 1024) {
        self.maximumMessageBytes = maximumMessageBytes
    }

    /// Takes the complete frames at the front of `input` (removing them; a partial frame
    /// stays for the next call) and says what to do about them. After a close, in either
    /// direction, nothing more is read: what follows it is dropped.
    public mutating func receive(_ input: inout [UInt8]) -> [Action] {
        guard !isClosed else {
            input.removeAll()
            return []
        }
        var actions: [Action] = []
        var offset = 0
        while !isClosed {
            let available = input.count - offset
            guard available >= 2 else { break }
            let first = input[offset], second = input[offset + 1]
            let fin = first & 0x80 != 0
            guard first & 0x70 == 0 else { return fail(1002, "reserved bits set", into: &actions, input: &input) }
            guard let opcode = Opcode(rawValue: first & 0x0F) else {
                return fail(1002, "reserved opcode \(first & 0x0F)", into: &actions, input: &input)
            }
            guard second & 0x80 != 0 else { return fail(1002, "a client's frame must be masked", into: &actions, input: &input) }
            var header = 2
            var length = UInt64(second & 0x7F)
            if length == 126 {
                guard available >= 4 else { break }
                length = UInt64(input[offset + 2]) << 8 | UInt64(input[offset + 3])
                header = 4
            } else if length == 127 {
                guard available >= 10 else { break }
                length = (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(input[offset + 2 + $1]) }
                header = 10
                guard length >> 63 == 0 else { return fail(1002, "a length with its top bit set", into: &actions, input: &input) }
            }
            let isControl = opcode.rawValue >= 8
            if isControl {
                guard fin else { return fail(1002, "a fragmented control frame", into: &actions, input: &input) }
                guard length <= 125 else { return fail(1002, "a control frame over 125 bytes", into: &actions, input: &input) }
            } else {
                // Refused from the header: the payload is never held.
                guard length <= UInt64(maximumMessageBytes - message.count) else {
                    return fail(1009, "a message over \(maximumMessageBytes) bytes", into: &actions, input: &input)
                }
                if opcode == .continuation {
                    guard inMessage else { return fail(1002, "a continuation with no message to continue", into: &actions, input: &input) }
                } else {
                    guard !inMessage else { return fail(1002, "a new message inside a fragmented one", into: &actions, input: &input) }
                }
            }
            let total = header + 4 + Int(length)
            guard available >= total else { break }
            let maskAt = offset + header
            let mask = (input[maskAt], input[maskAt + 1], input[maskAt + 2], input[maskAt + 3])
            var payload = [UInt8](repeating: 0, count: Int(length))
            for i in 0..<payload.count {
                let key: UInt8
                switch i & 3 {
                case 0: key = mask.0
                case 1: key = mask.1
                case 2: key = mask.2
                default: key = mask.3
                }
                payload[i] = input[maskAt + 4 + i] ^ key
            }
            offset += total

            switch opcode {
            case .text, .binary, .continuation:
                if opcode != .continuation {
                    inMessage = true
                    messageIsText = opcode == .text
                }
                message += payload
                if fin {
                    inMessage = false
                    defer { message.removeAll(keepingCapacity: false) }
                    if messageIsText && String(validating: message, as: UTF8.self) == nil {
                        return fail(1007, "a text message that is not UTF-8", into: &actions, input: &input)
                    }
                    actions.append(.deliver(message))
                }
            case .ping:
                actions.append(.send(Self.frame(.pong, payload)))
            case .pong:
                break
            case .close:
                input.removeFirst(offset)
                return closeReceived(payload, into: &actions, input: &input)
            }
        }
        input.removeFirst(min(offset, input.count))
        return actions
    }

    /// The client closed: its code echoed (RFC 6455 5.5.1), or 1002/1007 for a close that
    /// breaks the rules (a 1-byte payload, a code no endpoint may send, a reason not UTF-8).
    private mutating func closeReceived(_ payload: [UInt8], into actions: inout [Action], input: inout [UInt8]) -> [Action] {
        input.removeAll()
        if payload.isEmpty {
            isClosed = true
            actions.append(.send(Self.frame(.close, [])))
            actions.append(.close(code: 1005, reason: "closed by the client"))
            return actions
        }
        guard payload.count >= 2 else { return fail(1002, "a close frame of one byte", into: &actions, input: &input) }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard Self.isValidCloseCode(code) else { return fail(1002, "close code \(code)", into: &actions, input: &input) }
        guard String(validating: payload[2...], as: UTF8.self) != nil else {
            return fail(1007, "a close reason that is not UTF-8", into: &actions, input: &input)
        }
        isClosed = true
        actions.append(.send(Self.closeFrame(code: code, reason: "")))
        actions.append(.close(code: code, reason: "closed by the client"))
        return actions
    }

    private mutating func fail(_ code: UInt16, _ reason: String, into actions: inout [Action], input: inout [UInt8]) -> [Action] {
        isClosed = true
        input.removeAll()
        actions.append(.send(Self.closeFrame(code: code, reason: reason)))
        actions.append(.close(code: code, reason: reason))
        return actions
    }

    /// The codes a close frame may carry (RFC 6455 7.4; 1004-1006 and 1015 are never sent).
    public static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }

    /// One unfragmented, unmasked frame (a server's frames are never masked).
    public static func frame(_ opcode: Opcode, _ payload: some Collection<UInt8>) -> [UInt8] {
        var bytes: [UInt8] = [0x80 | opcode.rawValue]
        bytes.reserveCapacity(payload.count + 10)
        switch payload.count {
        case 0...125: bytes.append(UInt8(payload.count))
        case 126...0xFFFF: bytes += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: bytes.append(127); bytes += (0..<8).reversed().map { UInt8((UInt64(payload.count) >> (8 * UInt64($0))) & 0xFF) }
        }
        bytes += payload
        return bytes
    }

    /// A close frame with `code` and a reason cut to fit a control frame's 125 bytes.
    public static func closeFrame(code: UInt16, reason: String) -> [UInt8] {
        var reasonBytes = Array(reason.utf8.prefix(123))
        while String(validating: reasonBytes, as: UTF8.self) == nil { reasonBytes.removeLast() }  // not mid-character
        return frame(.close, [UInt8(code >> 8), UInt8(code & 0xFF)] + reasonBytes)
    }
}
