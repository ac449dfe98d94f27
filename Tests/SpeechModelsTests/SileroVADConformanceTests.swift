import Foundation
import TestSupport
import XCTest

/// Silero VAD in Swift (the shipped build, through `audiokernel-demo speech vad`) beside
/// onnxruntime running the same file, frame by frame over one continuous stream of recorded
/// voices with pauses, speech in noise, noise, chords, clicks and silence: the recurrent
/// state carries across all of it, as in the recorder.
final class SileroVADConformanceTests: XCTestCase {
    func testEveryFrameIsWithinHalfAPercentOfOnnxruntime() throws {
        let audio = try ConformanceCorpus.stream()
        let frames = Array(audio.prefix(audio.count / 512 * 512))
        let input = ONNXReference.temporaryFile("frames.f32")
        defer { try? FileManager.default.removeItem(at: input) }
        try ONNXReference.write(frames, to: input)
        let reference = try ONNXReference.run(["silero", ONNXReference.silero, input.path])
        let ours = try ONNXReference.ours(["vad", ONNXReference.silero, input.path])
        XCTAssertEqual(reference.count, frames.count / 512)
        XCTAssertEqual(ours.count, reference.count)
        let differences = zip(ours, reference).map { abs($0 - $1) }
        let worst = differences.max() ?? .infinity
        let speech = reference.filter { $0 > 0.5 }.count
        print("silero: \(reference.count) frames, \(speech) speech by onnxruntime, largest difference \(worst)")
        XCTAssertGreaterThan(speech, reference.count / 4, "the stream is mostly speech")
        XCTAssertLessThan(reference.count - speech, reference.count / 2, "and has non-speech")
        XCTAssertLessThan(worst, 0.005)
    }
}
