import FuzzSupport
import PracticeProtocol
import PracticeNet

/// One fuzz iteration: every LF-separated line of the input goes through the control
/// request decoder, which must never trap; a request it accepts must be well formed and
/// must survive being written back and read again unchanged.
enum ControlRequestFuzzer {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        for line in Array(bytes).split(separator: 0x0A, omittingEmptySubsequences: false) {
            guard case .success(let request) = ControlRequestDecoder.decode(Array(line)) else { continue }
            if request.command.isEmpty { FuzzMain.fail("accepted an empty command") }
            if !request.args.isObject { FuzzMain.fail("accepted args that are not an object") }
            switch request.id {
            case .string, .int: break
            default: FuzzMain.fail("accepted an id that is neither a string nor an integer")
            }
            let written: JSONValue = ["id": request.id, "command": .string(request.command), "args": request.args]
            guard case .success(let again) = ControlRequestDecoder.decode(written.bytes(.compact)) else {
                FuzzMain.fail("a request written back does not decode")
            }
            if again != request { FuzzMain.fail("a request changed when written back") }
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
struct ControlRequestFuzzerMain {
    static func main() { FuzzMain.run(ControlRequestFuzzer.run) }
}
