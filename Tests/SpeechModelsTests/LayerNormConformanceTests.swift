import Foundation
@testable import SpeechModels
import TestSupport
import XCTest

/// smart-turn's layer norm (``FloatKernels/layerNorm(_:count:weight:bias:epsilon:into:)``)
/// beside onnxruntime's LayerNormalization on the same rows, bit for bit: nine of the model's
/// ten norms are that node (the encoder's four layers twice, and the classifier's), and a last
/// bit there moves a value across an 8-bit rounding boundary now and then, which four layers
/// amplify. The one-pass variance in double this kernel had reproduced 84 % of the outputs.
final class LayerNormConformanceTests: XCTestCase {
    func testEveryOutputIsOnnxruntimesToTheBit() throws {
        var generator = HumanSpeech.SplitMix(49)
        // The encoder's width and the classifier's, rows as a residual stream has them: a
        // level from 0.1 to 20, an offset, and a few channels far out (Whisper's encoder has
        // such channels), with weights about 1 and small biases.
        for (width, count) in [(384, 1_500), (256, 500)] {
            let weight = (0..<width).map { _ in Float.random(in: 0.3...1.7, using: &generator) }
            let bias = (0..<width).map { _ in Float.random(in: -0.2...0.2, using: &generator) }
            var rows: [Float] = []
            rows.reserveCapacity(count * width)
            for _ in 0..<count {
                let level = Float.random(in: 0.1...20, using: &generator), offset = Float.random(in: -3...3, using: &generator)
                for c in 0..<width {
                    let value = (0..<4).map { _ in Float.random(in: -1...1, using: &generator) }.reduce(0, +) * level + offset
                    rows.append(c % 97 == 5 ? value * 12 : value)
                }
            }
            let file = ONNXReference.temporaryFile("layer-norm.f32")
            defer { try? FileManager.default.removeItem(at: file) }
            try ONNXReference.write(weight + bias + rows, to: file)
            let expected = try ONNXReference.runBinary(["layer-norm", "\(width)", file.path])
            XCTAssertEqual(expected.count, rows.count)

            var ours = [Float](repeating: 0, count: rows.count)
            rows.withUnsafeBufferPointer { x in
                ours.withUnsafeMutableBufferPointer { y in
                    for r in 0..<count {
                        FloatKernels.layerNorm(x.baseAddress! + r * width, count: width, weight: weight, bias: bias,
                                               into: y.baseAddress! + r * width)
                    }
                }
            }
            let differing = zip(ours, expected).filter { $0.bitPattern != $1.bitPattern }.count
            print("layer norm, width \(width): \(rows.count - differing) of \(rows.count) outputs identical to onnxruntime's")
            XCTAssertEqual(differing, 0, "width \(width): outputs that differ from onnxruntime's")
        }
    }
}
