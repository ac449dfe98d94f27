import KioskBridge
import XCTest

/// The WebSocket's rules as a client's frames meet them: every violation closes with the
/// RFC's code, and nothing a client sends makes the bridge hold more than a message's limit.
final class WebSocketSessionTests: XCTestCase {
    /// A client's frame: masked (unless told not to), with the FIN and RSV bits given.
    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0,
                      mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | rsv | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case 0...125: bytes.append(maskBit | UInt8(payload.count))
        case 126...0xFFFF: bytes += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: bytes.append(maskBit | 127); bytes += (0..<8).reversed().map { UInt8((UInt64(payload.count) >> (8 * UInt64($0))) & 0xFF) }
        }
        guard masked else { return bytes + payload }
        return bytes + mask + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
    }

    private func run(_ bytes: [UInt8], limit: Int = 1024) -> (actions: [WebSocketSession.Action], left: [UInt8]) {
        var session = WebSocketSession(maximumMessageBytes: limit)
        var input = bytes
        return (session.receive(&input), input)
    }

    private func closeCode(_ actions: [WebSocketSession.Action]) -> UInt16? {
        for case .close(let code, _) in actions { return code }
        return nil
    }

    func testTheRFCsMaskedHelloIsDelivered() {
        // RFC 6455 5.7: a single-frame masked text message "Hello".
        let (actions, left) = run([0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
        XCTAssertEqual(actions, [.deliver(Array("Hello".utf8))])
        XCTAssertEqual(left, [])
    }

    func testFragmentsAreJoinedAndAPingBetweenThemIsAnswered() {
        let bytes = Self.frame(2, [1, 2], fin: false) + Self.frame(9, [7]) + Self.frame(0, [3], fin: false) + Self.frame(0, [4])
        XCTAssertEqual(run(bytes).actions, [.send([0x8A, 1, 7]), .deliver([1, 2, 3, 4])])
    }

    func testAPartialFrameWaitsForTheRestOneByteAtATime() {
        let whole = Self.frame(2, Array(repeating: 9, count: 300))
        var session = WebSocketSession()
        var input: [UInt8] = []
        var delivered: [WebSocketSession.Action] = []
        for byte in whole {
            input.append(byte)
            delivered += session.receive(&input)
        }
        XCTAssertEqual(delivered, [.deliver(Array(repeating: 9, count: 300))])
    }

    func testEveryBrokenRuleClosesWithItsCode() {
        let cases: [(String, [UInt8], UInt16)] = [
            ("unmasked", Self.frame(2, [1], masked: false), 1002),
            ("a reserved bit", Self.frame(2, [1], rsv: 0x40), 1002),
            ("reserved opcode 3", Self.frame(3, [1]), 1002),
            ("reserved control opcode 11", Self.frame(11, []), 1002),
            ("a fragmented ping", Self.frame(9, [1], fin: false), 1002),
            ("a ping of 126 bytes", Self.frame(9, Array(repeating: 0, count: 126)), 1002),
            ("a continuation of nothing", Self.frame(0, [1]), 1002),
            ("a new message inside a fragmented one", Self.frame(1, Array("a".utf8), fin: false) + Self.frame(1, Array("b".utf8)), 1002),
            ("text that is not UTF-8", Self.frame(1, [0xC3, 0x28]), 1007),
            ("text cut mid-character across fragments, never finished right", Self.frame(1, [0xE2, 0x82], fin: false) + Self.frame(0, [0x41]), 1007),
            ("a message over the limit", Self.frame(2, Array(repeating: 0, count: 1025)), 1009),
            ("fragments over the limit together", Self.frame(2, Array(repeating: 0, count: 600), fin: false) + Self.frame(0, Array(repeating: 0, count: 600)), 1009),
            ("a close of one byte", Self.frame(8, [3]), 1002),
            ("close code 1005, never sent", Self.frame(8, [0x03, 0xED]), 1002),
            ("close code 999", Self.frame(8, [0x03, 0xE7]), 1002),
            ("close code 5000", Self.frame(8, [0x13, 0x88]), 1002),
            ("a close reason that is not UTF-8", Self.frame(8, [0x03, 0xE8, 0xFF]), 1007),
        ]
        for (name, bytes, code) in cases {
            let (actions, left) = run(bytes)
            XCTAssertEqual(closeCode(actions), code, name)
            XCTAssertEqual(left, [], "\(name): nothing more is read")
            XCTAssertFalse(actions.contains { if case .deliver = $0 { true } else { false } }, "\(name): nothing delivered")
        }
    }

    /// A length of 2^63 or 4 GiB is refused from the header, before any payload is held.
    func testAHugeLengthIsRefusedFromItsHeader() {
        let header: [UInt8] = [0x82, 0xFF, 0, 0, 0, 1, 0, 0, 0, 0]  // 4 GiB, masked, no payload sent
        XCTAssertEqual(closeCode(run(header).actions), 1009)
        XCTAssertEqual(closeCode(run([0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0]).actions), 1002, "the top bit of a 64-bit length")
    }

    func testACloseIsEchoedWithItsCodeAndNothingAfterItIsRead() {
        let (actions, left) = run(Self.frame(8, [0x03, 0xE8] + Array("bye".utf8)) + Self.frame(2, [1]))
        XCTAssertEqual(actions, [.send([0x88, 2, 0x03, 0xE8]), .close(code: 1000, reason: "closed by the client")])
        XCTAssertEqual(left, [], "what followed the close is dropped")
        var session = WebSocketSession()
        var input = Self.frame(8, [])
        _ = session.receive(&input)
        input = Self.frame(2, [1])
        XCTAssertEqual(session.receive(&input), [], "a closed session takes nothing more")
        XCTAssertEqual(input, [])
        XCTAssertEqual(run(Self.frame(8, [])).actions.first, .send([0x88, 0]), "an empty close is answered with an empty one")
        XCTAssertEqual(closeCode(run(Self.frame(8, [0x0F, 0xA0])).actions), 4000, "an application's code is valid")
    }

    func testServerFramesUseTheShortestLengthAndAreNotMasked() {
        XCTAssertEqual(WebSocketSession.frame(.binary, [UInt8](repeating: 1, count: 125)).prefix(2), [0x82, 125])
        XCTAssertEqual(WebSocketSession.frame(.binary, [UInt8](repeating: 1, count: 126)).prefix(4), [0x82, 126, 0, 126])
        XCTAssertEqual(WebSocketSession.frame(.binary, [UInt8](repeating: 1, count: 70_000)).prefix(10), [0x82, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70])
        // A reason cut to fit 125 bytes, never in the middle of a character.
        let close = WebSocketSession.closeFrame(code: 1000, reason: String(repeating: "é", count: 100))
        XCTAssertLessThanOrEqual(close.count, 127)
        XCTAssertNotNil(String(validating: close[4...], as: UTF8.self))
    }
}
