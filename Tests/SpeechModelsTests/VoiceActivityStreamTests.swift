import AudioKernel
import SpeechModels
import XCTest

/// The window smart-turn is asked about (``VoiceActivityStream/copyRecent(into:dropping:omitting:)``):
/// the newest 8 s with spans left out and the audio on either side joined. At 16 kHz in (no
/// resampler) every sample can be told by its value.
final class VoiceActivityStreamTests: XCTestCase {
    /// 200,000 samples, each its position modulo 20,000. The window does not depend on what the
    /// model hears, so a stand-in hears it.
    private func stream() throws -> VoiceActivityStream {
        let model = FrameCountingModel()
        let stream = try VoiceActivityStream(model: model, inputRate: 16_000)
        let samples = (0..<200_000).map { Int16($0 % 20_000) }
        samples.withUnsafeBufferPointer { stream.process($0) { _, _, _ in } }
        XCTAssertEqual(model.frames, 200_000 / 512, "every whole frame went to the model")
        return stream
    }

    /// The window against what it should hold, told by the first sample that differs.
    private func assertWindow(_ stream: VoiceActivityStream, omitting spans: [(start: Int, end: Int)], _ expected: [Int],
                              _ message: String = "", line: UInt = #line) {
        let got = window(stream, omitting: spans)
        XCTAssertEqual(got.count, expected.count, line: line)
        if let i = got.indices.first(where: { $0 < expected.count && got[$0] != expected[$0] }) {
            XCTFail("\(message) sample \(i): \(got[i]), not \(expected[i]) (\(got[max(0, i - 2)..<min(got.count, i + 3)]))", line: line)
        }
    }

    private func window(_ stream: VoiceActivityStream, omitting spans: [(start: Int, end: Int)], continuing: Int = 0) -> [Int] {
        var window = [Int16](repeating: .min, count: WhisperFeatures.windowSamples)
        window.withUnsafeMutableBufferPointer { stream.copyRecent(into: $0, omitting: spans, continuing: continuing) }
        return window.map { Int($0) }
    }

    func testASpanIsLeftOutAndOlderAudioFillsItsPlace() throws {
        let s = try stream()
        // The ring holds 72,000 on: 20,000 older samples are not there to fill the gap.
        let expected = [Int](repeating: 0, count: 20_000) + (72_000..<150_000).map { $0 % 20_000 } + (170_000..<200_000).map { $0 % 20_000 }
        assertWindow(s, omitting: [(150_000, 170_000)], expected)
        assertWindow(s, omitting: [], (72_000..<200_000).map { $0 % 20_000 }, "nothing left out: the last 8 s")
    }

    func testWhatTheRingNoLongerHoldsIsZeros() throws {
        let s = try stream()
        // The ring holds 72,000 on; without 100,000..<190,000 and 30,000..<40,000 (gone
        // already) 38,000 samples are left, behind 90,000 zeros.
        let expected = [Int](repeating: 0, count: 90_000) + (72_000..<100_000).map { $0 % 20_000 } + (190_000..<200_000).map { $0 % 20_000 }
        assertWindow(s, omitting: [(30_000, 40_000), (100_000, 190_000)], expected)
    }

    func testSpansAtTheEndAndBackToBackJoin() throws {
        let s = try stream()
        let expected = [Int](repeating: 0, count: 20_000) + (72_000..<150_000).map { $0 % 20_000 } + (160_000..<190_000).map { $0 % 20_000 }
        assertWindow(s, omitting: [(150_000, 155_000), (155_000, 160_000), (190_000, 210_000)], expected)
    }
}

extension VoiceActivityStreamTests {
    /// Asked ahead of a pause's question point: the window ends `continuing` samples after the
    /// stream, the newest 512 samples (the VAD frame just heard as a pause) played back and
    /// forth over them.
    func testAContinuedPauseIsTheNewestFrameBackAndForth() throws {
        let s = try stream()
        let got = window(s, omitting: [], continuing: 1_200)
        let heard = (73_200..<200_000).map { $0 % 20_000 }
        XCTAssertEqual(Array(got[0..<heard.count]), heard, "the audio heard, 1,200 samples earlier in the window")
        let newest = (199_488..<200_000).map { $0 % 20_000 }  // 512 samples
        let expected = newest.reversed() + newest + newest.reversed()[0..<176]
        XCTAssertEqual(Array(got[heard.count...]), Array(expected), "back from the newest sample, forth, back")
        XCTAssertEqual(window(s, omitting: [(150_000, 170_000)], continuing: 0), window(s, omitting: [(150_000, 170_000)]), "0: as heard")
    }
}
