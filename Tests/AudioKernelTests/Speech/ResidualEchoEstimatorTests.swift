@testable import AudioKernel
import XCTest

/// The residual-echo estimate on block powers made to order: the delay and gain of an echo
/// are found, a learner over it is not learned as echo, and a microphone that does not follow
/// the kiosk gives no estimate (no residue predicted).
final class ResidualEchoEstimatorTests: XCTestCase {
    /// A speech-like reference: syllables of 50–200 ms at −20 to −40 dBFS with gaps between.
    private func reference(blocks: Int, seed: UInt64 = 7) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        var powers: [Float] = []
        while powers.count < blocks {
            let loud = Float(pow(10, -(20 + Double(generator.next() % 20)) / 10)) * 32_768 * 32_768
            powers += [Float](repeating: loud, count: 5 + Int(generator.next() % 16))
            powers += [Float](repeating: 10, count: 2 + Int(generator.next() % 8))
        }
        return Array(powers.prefix(blocks))
    }

    /// Runs `estimator` over `microphone` against `far`, each block seeing the reference's
    /// newest blocks as they were; returns the predictions.
    private func run(_ estimator: inout ResidualEchoEstimator, microphone: [Float], far: [Float], learning: Bool = true) -> [Float] {
        let n = ResidualEchoEstimator.referenceBlocks
        let padded = [Float](repeating: 0, count: n) + far
        return microphone.indices.map { i in
            padded[(i + 1)..<(i + 1 + n)].withUnsafeBufferPointer { estimator.predict(microphone: microphone[i], reference: $0, learning: learning) }
        }
    }

    func testAnEchosDelayAndGainAreFound() {
        let far = reference(blocks: 400)
        // Seven blocks late, 12 dB down (power ratio 0.063), over a quiet room.
        let microphone = far.indices.map { i in (i >= 7 ? far[i - 7] : 0) * 0.063 + 4 }
        var estimator = ResidualEchoEstimator()
        let predicted = run(&estimator, microphone: microphone, far: far)
        let estimate = try! XCTUnwrap(estimator.estimate)
        XCTAssertEqual(estimate.delay, 7)
        XCTAssertEqual(estimate.gain, 0.063, accuracy: 0.005)
        XCTAssertGreaterThan(estimate.correlation, 0.9)
        // Every loud block of the last second is predicted within the margin.
        for i in 300..<400 where far[i - 7] > 1_000 {
            XCTAssertLessThanOrEqual(microphone[i], ResidualEchoEstimator.margin * predicted[i], "block \(i)")
        }
    }

    func testALearnerOverTheEchoIsAboveItsPredictionAndNotLearned() {
        let far = reference(blocks: 600)
        var microphone = far.indices.map { i in (i >= 4 ? far[i - 4] : 0) * 0.05 + 4 }
        // From block 300 a learner at the kiosk's own level speaks for a second.
        let learner = reference(blocks: 100, seed: 99)
        for i in 0..<100 { microphone[300 + i] += learner[i] }
        var estimator = ResidualEchoEstimator()
        let predicted = run(&estimator, microphone: microphone, far: far)
        let loudLearner = (300..<400).filter { learner[$0 - 300] > 1_000 }
        let above = loudLearner.filter { microphone[$0] > ResidualEchoEstimator.margin * predicted[$0] }
        XCTAssertGreaterThan(Double(above.count) / Double(loudLearner.count), 0.8, "the learner taken for the echo")
        // The estimate after the learner is still the echo's.
        XCTAssertEqual(estimator.estimate?.delay, 4)
        XCTAssertEqual(estimator.estimate?.gain ?? 0, 0.05, accuracy: 0.01)
    }

    func testAMicrophoneThatDoesNotFollowTheKioskPredictsNoResidue() {
        let far = reference(blocks: 400)
        // A canceller that removed the echo: the room and someone else's voice, unrelated.
        let microphone = reference(blocks: 400, seed: 1234).map { $0 * 0.01 + 4 }
        var estimator = ResidualEchoEstimator()
        let predicted = run(&estimator, microphone: microphone, far: far)
        XCTAssertNil(estimator.estimate)
        XCTAssertEqual(predicted.suffix(100).max(), 0)
    }

    func testNothingIsLearnedWhileNotLearningOrWhileTheKioskIsSilent() {
        let far = reference(blocks: 300)
        let microphone = far.indices.map { i in (i >= 4 ? far[i - 4] : 0) * 0.05 + 4 }
        var estimator = ResidualEchoEstimator()
        _ = run(&estimator, microphone: microphone, far: far, learning: false)
        XCTAssertNil(estimator.estimate)
        _ = run(&estimator, microphone: microphone, far: [Float](repeating: 0, count: 300))
        XCTAssertNil(estimator.estimate, "learned from a silent kiosk")
    }
}
