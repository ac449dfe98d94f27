@testable import AudioKernel
import Foundation
import SpeechModels
import XCTest

/// smart-turn on its own thread (``TurnCompletionWorker``): an answer carries its question's
/// token and the probability computed on the window's features; a withdrawn question is given
/// up when the model next checks (after a layer) and never answered. The model is a stand-in
/// here (the debug build's takes most of a minute a window; the real one's checks are in
/// `SmartTurnModel.probability(features:until:)`, run by the conformance tests).
final class TurnCompletionWorkerTests: XCTestCase {
    /// A 16 kHz stream fed 10 s of a tone going up and down in level (what a model would hear of
    /// it plays no part here: a stand-in hears it).
    private func stream() throws -> VoiceActivityStream {
        let stream = try VoiceActivityStream(model: FrameCountingModel(), inputRate: 16_000)
        let samples = (0..<160_000).map { (i: Int) -> Int16 in
            let t = Double(i)
            let level: Double = 0.5 + 0.5 * sin(t / 4_000)
            return Int16((8_000 * sin(t * 0.05) * level).rounded())
        }
        samples.withUnsafeBufferPointer { stream.process($0) { _, _, _ in } }
        return stream
    }

    /// Polls `takeAnswer` until it gives something or `seconds` pass.
    private func answer(_ worker: TurnCompletionWorker, within seconds: Double) -> (token: Int, probability: Float, nanoseconds: Int64)? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let answer = worker.takeAnswer() { return answer }
            usleep(1_000)
        }
        return nil
    }

    /// A stand-in's answer: the features' sum, which tells whether it was given the window's.
    private static func sum(_ features: UnsafePointer<Float>) -> Float {
        var sum: Float = 0
        for i in 0..<(WhisperFeatures.bins * WhisperFeatures.frames) { sum += features[i] }
        return sum
    }

    func testAnAnswerComesFromTheWindowsFeaturesUnderItsToken() throws {
        let s = try stream()
        let worker = try TurnCompletionWorker { features, _ in Self.sum(features) }
        defer { worker.stop() }
        worker.ask(s, token: 7, continuing: 1_200)
        let got = try XCTUnwrap(answer(worker, within: 30))
        XCTAssertEqual(got.token, 7)
        var window = [Int16](repeating: 0, count: WhisperFeatures.windowSamples)
        window.withUnsafeMutableBufferPointer { s.copyRecent(into: $0, omitting: [], continuing: 1_200) }
        var features = [Float](repeating: 0, count: WhisperFeatures.bins * WhisperFeatures.frames)
        window.withUnsafeBufferPointer { w in features.withUnsafeMutableBufferPointer { WhisperFeatures().compute(w, into: $0.baseAddress!) } }
        XCTAssertEqual(got.probability, features.withUnsafeBufferPointer { Self.sum($0.baseAddress!) }, "the window continued as asked")
        XCTAssertEqual(worker.abandoned, 0)
    }

    /// A stand-in whose first question runs until told to stop (as the model checks after each
    /// layer), answering 0.9 only if never told; later ones answer `probability` at once.
    private func workerHoldingItsFirstQuestion(thenAnswering probability: Float) throws -> (TurnCompletionWorker, Locked<Int>) {
        let calls = Locked(0)
        let worker = try TurnCompletionWorker { _, stop in
            guard calls.withLock({ $0 += 1; return $0 }) == 1 else { return probability }
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline { if stop() { return nil } }
            return 0.9
        }
        return (worker, calls)
    }

    func testAWithdrawnQuestionIsGivenUpAndNeverAnswered() throws {
        let s = try stream()
        let (worker, _) = try workerHoldingItsFirstQuestion(thenAnswering: 0.5)
        defer { worker.stop() }
        worker.ask(s, token: 1)
        worker.withdraw(token: 1)  // the learner went on
        let deadline = Date().addingTimeInterval(30)
        while worker.abandoned == 0 && Date() < deadline { usleep(1_000) }
        XCTAssertEqual(worker.abandoned, 1, "given up")
        XCTAssertNil(worker.takeAnswer(), "no answer for it")
        worker.ask(s, token: 2)
        XCTAssertEqual(answer(worker, within: 30)?.token, 2, "the next question is answered")
        XCTAssertEqual(worker.abandoned, 1)
    }

    func testANewerQuestionReplacesOneInFlight() throws {
        let s = try stream()
        let (worker, calls) = try workerHoldingItsFirstQuestion(thenAnswering: 0.25)
        defer { worker.stop() }
        worker.ask(s, token: 1)
        let started = Date().addingTimeInterval(30)
        while calls.withLock({ $0 }) == 0 && Date() < started { usleep(1_000) }
        worker.ask(s, token: 2)  // a newer pause while the first is worked on: not worth finishing
        let got = answer(worker, within: 30)
        XCTAssertEqual(got?.token, 2)
        XCTAssertEqual(got?.probability, 0.25)
        XCTAssertEqual(worker.abandoned, 1)
    }
}
