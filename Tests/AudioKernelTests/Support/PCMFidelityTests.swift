import AudioKernel
import TestSupport
import XCTest

/// The measures the sound-server tests hold recordings to, on the learner's recorded phrase.
final class PCMFidelityTests: XCTestCase {
    private let learner = try! WAVDecoder.decode(contentsOfFile: SimulatorHarness.samplesDirectory + "/learner-1.wav").samples

    /// The phrase as the echo-cancelling room handed it over on PipeWire: 127 samples of zeros
    /// in a gap between words, 0.9 s in, after 300 ms of room. Every word is there, the
    /// later ones 5 ms late: the one-lag coefficient reads it as another sound (0.46 on CI),
    /// the followed one does not.
    func testAHoleInTheStreamKeepsEveryWord() throws {
        let room = [Int16](repeating: 0, count: 7_200)
        let cut = try XCTUnwrap(quietestSpot(near: 21_600))
        let recorded = room + learner[..<cut] + [Int16](repeating: 0, count: 127) + learner[cut...] + room
        let whole = try XCTUnwrap(PCMFidelity.correlation(of: learner, in: recorded))
        XCTAssertLessThan(whole.coefficient, 0.8, "one lag cannot follow the hole")
        let followed = PCMFidelity.followedCorrelation(of: learner, in: recorded, from: whole.offset)
        XCTAssertGreaterThan(followed.coefficient, 0.98)
        XCTAssertEqual(followed.slip, 127, accuracy: 2)
    }

    /// Words that are missing, or another sound, are not the learner's words.
    func testMissingWordsAndAnotherSoundAreNot() throws {
        let half = Array(learner[..<(learner.count / 2)])
        let truncated = [Int16](repeating: 0, count: 7_200) + half + [Int16](repeating: 0, count: learner.count)
        let found = try XCTUnwrap(PCMFidelity.correlation(of: learner, in: truncated))
        XCTAssertLessThan(PCMFidelity.followedCorrelation(of: learner, in: truncated, from: found.offset).coefficient, 0.75)
        let other = try WAVDecoder.decode(contentsOfFile: SimulatorHarness.samplesDirectory + "/learner-2.wav").samples
        let elsewhere = try XCTUnwrap(PCMFidelity.correlation(of: learner, in: other))
        XCTAssertLessThan(PCMFidelity.followedCorrelation(of: learner, in: other, from: elsewhere.offset).coefficient, 0.4)
    }

    /// The start of the quietest 10 ms within 0.1 s of `sample`: where a hole between words goes.
    private func quietestSpot(near sample: Int) -> Int? {
        stride(from: sample - 2_400, to: sample + 2_400, by: 24).min { a, b in
            energy(a) < energy(b)
        }
    }

    private func energy(_ start: Int) -> Double {
        learner[start..<(start + 240)].reduce(0) { $0 + Double($1) * Double($1) }
    }
}
