import AudioKernel
import FuzzSupport

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
        do { decoded = try WAVDecoder.decode(bytes) } catch { FuzzMain.fail("decode failed after parse succeeded: \(error)") }
        check(decoded.samples.count == layout.sampleCount, "sample count differs from layout")

        // What we decode, we can write again and read back identically.
        do {
            let again = try WAVDecoder.decode(try WAVEncoder.encode(decoded.samples, format: decoded.format))
            check(again == decoded, "re-encoded file decodes differently")
        } catch {
            FuzzMain.fail("round trip failed: \(error)")
        }
        let gate = SpeechGate()
        let verdict = (try? gate.holdsSpeech(wav: bytes)) ?? !gate.holdsSpeech(decoded.samples)
        check(verdict == gate.holdsSpeech(decoded.samples), "speech gate differs between WAV and samples")
    }

    static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { FuzzMain.fail(message()) }
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
struct WAVDecoderFuzzerMain {
    static func main() { FuzzMain.run(WAVDecoderFuzzer.run) }
}
