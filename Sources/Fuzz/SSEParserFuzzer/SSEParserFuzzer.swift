import CFuzzerDriver
import PracticeKit

#if canImport(Glibc)
import Glibc
#endif

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
        if parts != expected { fail("split at \(cut) differs") }
        if input.count <= 512 {
            var bytewise = SSEParser()
            var events: [SSEEvent] = []
            for b in input { events += bytewise.events(from: [b]) }
            if events != expected { fail("byte-by-byte differs") }
        }
        var decoder = AudioPayloadDecoder()
        var again = SSEParser()
        again.feed(input) { event in _ = try? decoder.decode(event.data) }
    }

    static func fail(_ message: String) -> Never {
        var line = "SSEParserFuzzer: \(message)\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        abort()
    }
}

#if FUZZING
/// libFuzzer's entry point by its own name too: a debug link pulls in libFuzzer's `main`,
/// which calls it; a release link starts libFuzzer from the `main` below. Either way the
/// same check runs.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    SSEParserFuzzer.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
#endif

@main
struct SSEParserFuzzerMain {
    static func main() {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(practiced_fuzzer_run(&argc, &argv) { data, size in
            SSEParserFuzzer.run(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        })
        #else
        for path in CommandLine.arguments.dropFirst() {
            guard let file = fopen(path, "rb") else { SSEParserFuzzer.fail("cannot open \(path)") }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&chunk, 1, chunk.count, file)
                if n <= 0 { break }
                bytes += chunk[0..<n]
            }
            fclose(file)
            bytes.withUnsafeBytes { SSEParserFuzzer.run($0) }
            print("\(path): ok")
        }
        #endif
    }
}
