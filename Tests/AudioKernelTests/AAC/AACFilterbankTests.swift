@testable import AudioKernel
import XCTest

/// The filterbank's analysis and synthesis invert each other (time-domain aliasing
/// cancellation) across every window sequence transition.
final class AACFilterbankTests: XCTestCase {
    func testAnalysisThenSynthesisGivesTheInputBackThroughEveryTransition() {
        let bank = AACFilterbank()
        let frames = 12
        var input = [Float](repeating: 0, count: (frames + 2) * 1024)
        var seed: UInt32 = 7
        for i in 1024..<(frames * 1024) {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            input[i] = Float(Int32(bitPattern: seed)) / Float(Int32.max) * 10_000 + 3_000 * sinf(Float(i) * 0.05)
        }
        let sequences: [AACWindowSequence] = [.onlyLong, .longStart, .eightShort, .eightShort, .longStop, .onlyLong, .longStart, .eightShort, .longStop, .longStart, .eightShort, .longStop, .onlyLong]
        let shapes = [0, 1, 1, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1]
        let channel = AACChannel()
        var output = [Float](repeating: 0, count: (frames + 1) * 1024)
        var previousShape = 0
        for t in 0...frames {
            let seq = sequences[t]
            channel.info.setLayout(seq, rateIndex: 6)
            channel.info.shape = shapes[t]
            input.withUnsafeBufferPointer { x in
                // Frame t's window covers samples (t − 1)·1024 ..< (t + 1)·1024; before 0, zeros.
                var window = [Float](repeating: 0, count: 2048)
                for n in 0..<2048 where (t - 1) * 1024 + n >= 0 { window[n] = x[(t - 1) * 1024 + n] }
                bank.analyze(window, seq, shape: shapes[t], previousShape: previousShape, into: channel.spectrum)
            }
            previousShape = shapes[t]
            output.withUnsafeMutableBufferPointer { bank.synthesize(channel, into: $0.baseAddress! + t * 1024) }
        }
        // Output frame t is input block t − 1.
        var worst: Float = 0
        for i in 0..<((frames - 1) * 1024) { worst = max(worst, abs(output[i + 1024] - input[i])) }
        XCTAssertLessThan(worst, 0.05, "largest error over 12 frames of ±13000")
    }
}
