import AudioKernel
import CFuzzerDriver

#if canImport(Glibc)
import Glibc
#endif

/// One fuzz iteration: whatever the bytes, the decoder returns a layout or a typed error,
/// and what it returns is consistent. Any inconsistency aborts, which libFuzzer reports.
enum WAVDecoderFuzzer {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        let layout: WAVLayout
        do {
            layout = try WAVDecoder.parse(bytes)
        } catch {
            _ = error.description  // every error must describe itself
            return
        }
        check(layout.dataOffset >= 12 && layout.dataRange.upperBound <= bytes.count, "data range out of bounds")
        check(layout.dataByteCount % layout.format.bytesPerFrame == 0, "partial frame in data")
        check(layout.format.channels > 0 && layout.format.sampleRate > 0, "invalid format accepted")

        let decoded: DecodedWAV
        do { decoded = try WAVDecoder.decode(bytes) } catch { fail("decode failed after parse succeeded: \(error)") }
        check(decoded.samples.count == layout.sampleCount, "sample count differs from layout")

        // What we decode, we can write again and read back identically.
        do {
            let again = try WAVDecoder.decode(try WAVEncoder.encode(decoded.samples, format: decoded.format))
            check(again == decoded, "re-encoded file decodes differently")
        } catch {
            fail("round trip failed: \(error)")
        }
        let gate = SpeechGate()
        let verdict = (try? gate.holdsSpeech(wav: bytes)) ?? !gate.holdsSpeech(decoded.samples)
        check(verdict == gate.holdsSpeech(decoded.samples), "speech gate differs between WAV and samples")
    }

    static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fail(message()) }
    }

    static func fail(_ message: String) -> Never {
        printError("WAVDecoderFuzzer: \(message)")
        abort()
    }
}

/// The entry point: with `-DFUZZING` it hands control to libFuzzer; otherwise it replays the
/// files named on the command line (a crash reproducer).
#if FUZZING
/// libFuzzer's entry point by its own name too: a debug link pulls in libFuzzer's `main`,
/// which calls it; a release link starts libFuzzer from the `main` below. Either way the
/// same check runs.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    WAVDecoderFuzzer.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
#endif

@main
struct WAVDecoderFuzzerMain {
    static func main() {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(practiced_fuzzer_run(&argc, &argv) { data, size in
            WAVDecoderFuzzer.run(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        })
        #else
        let paths = CommandLine.arguments.dropFirst()
        if paths.isEmpty {
            printError("usage: fuzz-wav-decoder FILE...  (build with -sanitize=fuzzer -DFUZZING to fuzz; see README)")
            exit(2)
        }
        for path in paths {
            guard let file = fopen(path, "rb") else { WAVDecoderFuzzer.fail("cannot open \(path)") }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&chunk, 1, chunk.count, file)
                if n <= 0 { break }
                bytes += chunk[0..<n]
            }
            fclose(file)
            bytes.withUnsafeBytes { WAVDecoderFuzzer.run($0) }
            print("\(path): ok")
        }
        #endif
    }
}

/// Writes a line to standard error (the C `stderr` global is not concurrency-safe in Swift 6).
func printError(_ message: String) {
    var line = message + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
