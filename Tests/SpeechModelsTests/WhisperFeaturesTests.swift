import SpeechModels
import TestSupport
import XCTest

/// smart-turn's features from the PCM16 window the daemon keeps (``WhisperFeatures/compute(_:into:)``
/// with Int16 samples) against the Float path the conformance tests hold to pipecat's: the
/// same bits, on a recorded voice (Allison, asterisk-core-sounds-en-g722) padded with digital
/// silence at the front as a short turn is, where the floor (the maximum − 8) decides most values.
final class WhisperFeaturesTests: XCTestCase {
    private func window() throws -> [Int16] {
        let voice = try HumanSpeech.prompt("en_US_f_Allison", "demo-congrats").prefix(WhisperFeatures.windowSamples / 2)
        let padding = [Int16](repeating: 0, count: WhisperFeatures.windowSamples - voice.count)
        return padding + voice.map { Int16(clamping: Int(($0 * 32_768).rounded())) }
    }

    func testPCM16FeaturesAreTheFloatFeaturesToTheBit() throws {
        let pcm = try window()
        let floats = pcm.map { Float($0) / 32_768 }
        let count = WhisperFeatures.bins * WhisperFeatures.frames
        var fromPCM = [Float](repeating: .nan, count: count), fromFloat = [Float](repeating: .nan, count: count)
        let features = WhisperFeatures()
        pcm.withUnsafeBufferPointer { w in fromPCM.withUnsafeMutableBufferPointer { features.compute(w, into: $0.baseAddress!) } }
        floats.withUnsafeBufferPointer { w in fromFloat.withUnsafeMutableBufferPointer { features.compute(w, into: $0.baseAddress!) } }
        XCTAssertEqual(fromPCM.map(\.bitPattern), fromFloat.map(\.bitPattern))
    }

    /// The floor is applied after the values are written (no window of doubles held for it):
    /// every value at least the maximum − 2 (8 in log10 units, / 4), and the silence at it.
    func testEverythingBelowTheMaximumLessEightIsRaisedToIt() throws {
        let pcm = try window()
        var out = [Float](repeating: .nan, count: WhisperFeatures.bins * WhisperFeatures.frames)
        pcm.withUnsafeBufferPointer { w in out.withUnsafeMutableBufferPointer { WhisperFeatures().compute(w, into: $0.baseAddress!) } }
        let top = try XCTUnwrap(out.max()), bottom = try XCTUnwrap(out.min())
        XCTAssertEqual(bottom, top - 2, accuracy: 1e-6, "the floor is the maximum − 8 / 4")
        // The first 3 s are digital silence: all of their frames sit on the floor.
        let silentFrames = 300
        for bin in 0..<WhisperFeatures.bins {
            for frame in 0..<silentFrames {
                XCTAssertEqual(out[bin * WhisperFeatures.frames + frame], bottom, "bin \(bin), frame \(frame)")
            }
        }
    }
}
