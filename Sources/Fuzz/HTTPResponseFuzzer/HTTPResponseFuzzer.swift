import FuzzSupport
import PracticeNet

/// One fuzz iteration: the client's HTTP response parser, fed a server's bytes, never traps
/// and does not depend on how the bytes arrive (whole, split where the input's first byte
/// says, and byte by byte for short inputs): the same head, body, end, error and keep-alive.
enum HTTPResponseFuzzer {
    struct Outcome: Equatable {
        var head: HTTPResponseParser.Head?
        var body: [UInt8] = []
        var ended = false
        var consumed = 0
        var failure: String?
        var keepAlive = false
    }

    static func parse(_ pieces: [ArraySlice<UInt8>]) -> Outcome {
        var parser = HTTPResponseParser()
        var outcome = Outcome()
        do {
            for piece in pieces where !outcome.ended {
                outcome.consumed += try piece.withUnsafeBytes { bytes in
                    try parser.feed(bytes) { output in
                        switch output {
                        case .head(let head):
                            if outcome.head != nil { FuzzMain.fail("two heads for one response") }
                            outcome.head = head
                        case .body(let bytes):
                            if outcome.head == nil { FuzzMain.fail("body before the head") }
                            outcome.body += bytes
                        case .end:
                            if outcome.ended { FuzzMain.fail("two ends") }
                            outcome.ended = true
                        }
                    }
                }
            }
            if !outcome.ended {
                try parser.finishAtClose()
                outcome.ended = parser.isComplete
                if !outcome.ended { FuzzMain.fail("accepted the close without completing") }
            }
        } catch {
            outcome.failure = "\(error)"
            outcome.consumed = 0  // a failed feed reports no count, so pieces would differ
        }
        outcome.keepAlive = parser.keepAlive
        return outcome
    }

    static func run(_ bytes: UnsafeRawBufferPointer) {
        let input = Array(bytes)
        let expected = parse([input[...]])
        if expected.consumed > input.count { FuzzMain.fail("consumed more than given") }
        if expected.body.count > input.count { FuzzMain.fail("more body than input") }
        let cut = input.isEmpty ? 0 : Int(input[0]) % (input.count + 1)
        if parse([input[..<cut], input[cut...]]) != expected { FuzzMain.fail("split at \(cut) differs") }
        if input.count <= 512, parse(input.indices.map { input[$0...$0] }) != expected { FuzzMain.fail("byte by byte differs") }
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
struct HTTPResponseFuzzerMain {
    static func main() { FuzzMain.run(HTTPResponseFuzzer.run) }
}
