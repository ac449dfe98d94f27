import FuzzSupport
import PracticeNet

/// One fuzz iteration: the events of a stream do not depend on how it is cut into chunks
/// (whole, split where the input's first byte says, and byte by byte for short inputs), and
/// no event data makes the audio decoder trap.
enum SSEParserFuzzer {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        let input = Array(bytes)
        var whole = SSEParser()
        let expected = whole.events(from: input)
        var split = SSEParser()
        let cut = input.isEmpty ? 0 : Int(input[0]) % (input.count + 1)
        let parts = split.events(from: Array(input[..<cut])) + split.events(from: Array(input[cut...]))
        if parts != expected { FuzzMain.fail("split at \(cut) differs") }
        if input.count <= 512 {
            var bytewise = SSEParser()
            var events: [SSEEvent] = []
            for b in input { events += bytewise.events(from: [b]) }
            if events != expected { FuzzMain.fail("byte-by-byte differs") }
        }
        var decoder = AudioPayloadDecoder()
        var again = SSEParser()
        again.feed(input) { event in _ = try? decoder.decode(event.data) }
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
struct SSEParserFuzzerMain {
    static func main() { FuzzMain.run(SSEParserFuzzer.run) }
}
