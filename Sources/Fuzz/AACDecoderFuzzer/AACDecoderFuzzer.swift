import AudioKernel
import FuzzSupport

/// One fuzz iteration: a configuration and a run of AAC frames, decoded one after another as
/// `play` decodes a file. Byte 0 picks the sampling frequency index, byte 1 the channel
/// configuration; then each frame is a 2-byte big-endian length and its bytes. Whatever the
/// bytes, each frame decodes or is a typed error, the decoder goes on with the next, and no
/// read leaves the frame (AddressSanitizer watches the bit reader's loads).
enum AACDecoderFuzzer {
    static func run(_ raw: UnsafeRawBufferPointer) {
        guard raw.count >= 2 else { return }
        let rates = AudioSpecificConfig.sampleRates
        let config = AudioSpecificConfig(sampleRate: rates[Int(raw[0]) % rates.count], channelConfiguration: 1 + Int(raw[1]) % 7)
        let decoder: AACDecoder
        do {
            decoder = try AACDecoder(config: config)
        } catch {
            _ = error.description
            return
        }
        let channels = config.channels
        let pcm = UnsafeMutablePointer<Int16>.allocate(capacity: 1_024 * channels)
        let floats = UnsafeMutablePointer<Float>.allocate(capacity: 1_024 * channels)
        defer { pcm.deallocate(); floats.deallocate() }
        var at = 2, index = 0
        while at + 2 <= raw.count {
            let length = Int(raw[at]) << 8 | Int(raw[at + 1])
            at += 2
            let frame = UnsafeRawBufferPointer(rebasing: raw[at..<min(raw.count, at + length)])
            at += frame.count
            do {
                if index % 2 == 0 {
                    try decoder.decode(frame, into: pcm)
                } else {
                    try decoder.decode(frame, into: floats)
                }
            } catch {
                check(!error.description.isEmpty, "an error without a description")
            }
            index += 1
        }
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
struct AACDecoderFuzzerMain {
    static func main() { FuzzMain.run(AACDecoderFuzzer.run) }
}
