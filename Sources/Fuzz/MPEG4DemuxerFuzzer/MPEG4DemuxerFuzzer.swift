import AudioKernel
import FuzzSupport

/// One fuzz iteration: whatever the bytes, the MPEG-4 demuxer returns an AAC track or a
/// typed error, and a track it returns is consistent with the file: every frame inside it,
/// the presentation inside the media. Any inconsistency aborts, which libFuzzer reports.
enum MPEG4DemuxerFuzzer {
    static func run(_ raw: UnsafeRawBufferPointer) {
        let bytes = Array(raw)
        let track: MPEG4AudioTrack
        do {
            track = try MPEG4Demuxer.parse(bytes)
        } catch {
            _ = error.description  // every error must describe itself
            return
        }
        for frame in track.frames {
            check(frame.offset >= 0 && frame.size >= 0 && frame.offset + frame.size <= bytes.count, "a frame outside the file")
        }
        check(track.timescale > 0, "a timescale of 0 accepted")
        check(track.presentationStart >= 0 && track.presentationLength >= 0, "a negative edit")
        check(track.presentationStart + track.presentationLength <= track.mediaDuration, "the edit runs past the media")
        check((1...7).contains(track.config.channelConfiguration), "a channel configuration outside 1...7")
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
struct MPEG4DemuxerFuzzerMain {
    static func main() { FuzzMain.run(MPEG4DemuxerFuzzer.run) }
}
