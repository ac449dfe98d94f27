import Foundation
import TestSupport
import XCTest

/// smart-turn v3.2 and its Whisper features in Swift (the shipped build, through
/// `audiokernel-demo speech`) beside pipecat's own feature code and onnxruntime, on 200 windows
/// of 8 s ending in speech, hesitation pauses, finished sentences, speech in noise, noise,
/// chords, clicks and silence.
final class SmartTurnConformanceTests: XCTestCase {
    static let windowCount = 200

    func testFeaturesAndProbabilitiesMatchPipecatAndOnnxruntime() throws {
        let windows = ConformanceCorpus.windows(try ConformanceCorpus.stream(), count: Self.windowCount)
        let audio = ONNXReference.temporaryFile("windows.f32")
        let ourFeatures = ONNXReference.temporaryFile("ours.f32")
        let theirFeatures = ONNXReference.temporaryFile("theirs.f32")
        defer {
            // PRACTICED_KEEP_CONFORMANCE=DIR keeps the inputs, to look at a disagreement.
            for file in [audio, ourFeatures, theirFeatures] {
                if let keep = ProcessInfo.processInfo.environment["PRACTICED_KEEP_CONFORMANCE"] {
                    try? FileManager.default.moveItem(at: file, to: URL(fileURLWithPath: keep).appendingPathComponent(file.lastPathComponent.components(separatedBy: "-").last!))
                } else {
                    try? FileManager.default.removeItem(at: file)
                }
            }
        }
        try ONNXReference.write(windows, to: audio)

        // The features, against pipecat's Python.
        _ = try ONNXReference.ours(["features", audio.path, ourFeatures.path])
        let reference = try ONNXReference.runBinary(["features", ONNXReference.pipecatFeatures, audio.path, "\(Self.windowCount)"])
        try ONNXReference.write(reference, to: theirFeatures)
        let ours = try Data(contentsOf: ourFeatures).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        XCTAssertEqual(ours.count, Self.windowCount * 80 * 800)
        XCTAssertEqual(ours.count, reference.count)
        let featureError = zip(ours, reference).map { abs($0 - $1) }.max() ?? .infinity
        XCTAssertLessThan(featureError, 1e-3, "features")

        // The model on the same (pipecat's) features, against onnxruntime as pipecat runs it
        // (all graph optimizations) and against onnxruntime unoptimized: the quantized model
        // turns last-bit differences into different roundings, so onnxruntime disagrees with
        // itself across optimization levels; ours must agree with it far more closely.
        let expected = try ONNXReference.run(["smart-turn", ONNXReference.smartTurn, theirFeatures.path])
        let unoptimized = try ONNXReference.run(["smart-turn", ONNXReference.smartTurn, theirFeatures.path, "unoptimized"])
        let probabilities = try ONNXReference.ours(["turn", ONNXReference.smartTurn, "--features", theirFeatures.path])
        XCTAssertEqual(expected.count, Self.windowCount)
        XCTAssertEqual(unoptimized.count, Self.windowCount)
        XCTAssertEqual(probabilities.count, Self.windowCount)
        func compare(_ a: [Float], _ b: [Float]) -> (identical: Int, close: Int, flips: Int, mean: Float, worst: Float) {
            let errors = zip(a, b).map { abs($0 - $1) }
            return (errors.filter { $0 < 1e-6 }.count, errors.filter { $0 <= 0.01 }.count,
                    zip(a, b).filter { ($0 > 0.5) != ($1 > 0.5) }.count,
                    errors.reduce(0, +) / Float(errors.count), errors.max() ?? .infinity)
        }
        let swift = compare(probabilities, expected), itself = compare(unoptimized, expected)
        let finished = expected.filter { $0 > 0.5 }.count
        print("smart-turn: \(Self.windowCount) windows, \(finished) finished by onnxruntime; features within \(featureError)")
        print("smart-turn: ours vs onnxruntime: \(swift.identical) identical, \(swift.close) within 0.01, \(swift.flips) decisions differ, "
              + "mean |Δ| \(swift.mean), worst \(swift.worst)")
        print("smart-turn: onnxruntime unoptimized vs optimized: \(itself.identical) identical, \(itself.close) within 0.01, "
              + "\(itself.flips) decisions differ, mean |Δ| \(itself.mean), worst \(itself.worst)")
        XCTAssertGreaterThan(finished, 10, "the windows include finished turns")
        XCTAssertLessThan(finished, Self.windowCount - 10, "and unfinished ones")
        // Every window within 0.01 and the same decision, as the issue asks: 200, 200 and 0 on
        // the Zen 3 host (2026-11-30) since the layer norm (``LayerNormConformanceTests``) and
        // QLinearSoftmax's table and division are onnxruntime 1.32's; 154 identical, 179 within
        // 0.01 and 2 decisions apart before either, 173, 188 and 1 with the norm alone.
        XCTAssertGreaterThanOrEqual(swift.identical, Self.windowCount * 95 / 100, "bit for bit on nearly every window")
        XCTAssertEqual(swift.close, Self.windowCount, "within 0.01 on every window")
        XCTAssertEqual(swift.flips, 0, "the same decision at 0.5 on every window")
        XCTAssertLessThan(swift.mean, itself.mean / 3, "closer to onnxruntime than onnxruntime is to itself")

        // On two threads (the daemon's default): the integer sums are exact whichever thread
        // computes which rows, so every probability is the same to the bit. Which thread takes
        // which rows does not depend on the window, so a tenth of them (both decisions among
        // them) shows it at a tenth of the cost.
        let subset = stride(from: 0, to: Self.windowCount, by: 10).map { $0 }
        XCTAssertEqual(Set(subset.map { probabilities[$0] > 0.5 }).count, 2, "the subset holds both decisions")
        let subsetFeatures = ONNXReference.temporaryFile("subset.f32")
        defer { try? FileManager.default.removeItem(at: subsetFeatures) }
        let size = 80 * 800
        try ONNXReference.write(subset.flatMap { reference[($0 * size)..<(($0 + 1) * size)] }, to: subsetFeatures)
        let twoThreads = try ONNXReference.ours(["turn", ONNXReference.smartTurn, "--features", subsetFeatures.path, "--threads", "2"])
        XCTAssertEqual(twoThreads, subset.map { probabilities[$0] }, "two threads give one thread's results")
    }
}
