import FuzzSupport
import KioskBridge

/// One fuzz iteration: the input is what a client of the kiosk bridge sends, read as an HTTP
/// request head and, whole and cut at every 7th byte, as WebSocket frames after the
/// handshake. Neither may trap; the session must say what it delivers within its limit, and
/// once it has closed it must take nothing more.
enum BridgeInputFuzzer {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        let input = Array(bytes)
        if case .head(_, let length) = HTTPRequestHead.parse(input), length > input.count {
            FuzzMain.fail("a head longer than its input")
        }
        for step in [input.count, 7] where step > 0 {
            var session = WebSocketSession(maximumMessageBytes: 4096)
            var pending: [UInt8] = []
            var offset = 0
            var closed = false
            while offset < input.count {
                pending += input[offset..<min(offset + step, input.count)]
                offset += step
                for action in session.receive(&pending) {
                    switch action {
                    case .deliver(let message):
                        if closed { FuzzMain.fail("delivered after the close") }
                        if message.count > 4096 { FuzzMain.fail("delivered a message over the limit") }
                    case .send(let frame):
                        if frame.isEmpty || frame[0] & 0x80 == 0 { FuzzMain.fail("sent a frame without FIN") }
                    case .close(let code, _):
                        if closed { FuzzMain.fail("closed twice") }
                        if !WebSocketSession.isValidCloseCode(code) && code != 1005 { FuzzMain.fail("closed with \(code)") }
                        closed = true
                    }
                }
                if closed && !pending.isEmpty { FuzzMain.fail("kept input after the close") }
            }
        }
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzMain.runOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
#endif

@main
struct BridgeInputFuzzerMain {
    static func main() { FuzzMain.run(BridgeInputFuzzer.run) }
}
