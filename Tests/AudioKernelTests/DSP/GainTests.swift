import AudioKernel
import XCTest

final class GainTests: XCTestCase {
    func referenceRamp(_ s: [Int16], start: Float, step: Float) -> [Int16] {
        s.enumerated().map { i, v in
            let x = Float(v) * (start + step * Float(i))
            return Int16(min(max(x, -32768), 32767).rounded(.toNearestOrEven))
        }
    }

    func testInt16RampMatchesScalarReferenceForEveryLength() {
        for n in TestSignals.lengths {
            let input = TestSignals.randomInt16(n, seed: UInt64(n) &+ 7)
            var out = input
            let next = out.withUnsafeMutableBufferPointer { Gain.ramp($0, from: 1.2, step: -0.001) }
            XCTAssertEqual(out, referenceRamp(input, start: 1.2, step: -0.001), "length \(n)")
            XCTAssertEqual(next, 1.2 - 0.001 * Float(n), accuracy: 1e-5)
        }
    }

    func testFloatRampMatchesScalarReference() {
        for n in TestSignals.lengths {
            let input = TestSignals.randomInt16(n, seed: UInt64(n)).map { Float($0) / 32768 }
            var out = input
            out.withUnsafeMutableBufferPointer { _ = Gain.ramp($0, from: 0.25, step: 0.01) }
            let expected = input.enumerated().map { i, v in v * (0.25 + 0.01 * Float(i)) }
            XCTAssertEqual(out, expected, "length \(n)")
        }
    }

    func testGainSaturatesInsteadOfWrapping() {
        var samples: [Int16] = [20000, -20000, 100, .min, .max]
        samples.withUnsafeMutableBufferPointer { Gain.apply(2, to: $0) }
        XCTAssertEqual(samples, [32767, -32768, 200, -32768, 32767])
        var nanGain: [Int16] = [100, 200]
        nanGain.withUnsafeMutableBufferPointer { Gain.apply(.nan, to: $0) }
        XCTAssertEqual(nanGain, [0, 0])
    }

    func testFadeOutEndsNearSilenceAndFadeInStartsAtSilence() {
        var out = [Int16](repeating: 10000, count: 480)
        out.withUnsafeMutableBufferPointer { Gain.fadeOut($0) }
        XCTAssertEqual(out.first, 10000)
        XCTAssertLessThanOrEqual(abs(Int(out.last!)), 10000 / 480 + 1)
        // Monotonic: no step up, hence no click.
        for i in 1..<out.count { XCTAssertLessThanOrEqual(out[i], out[i - 1]) }
        var inOut = [Int16](repeating: 10000, count: 480)
        inOut.withUnsafeMutableBufferPointer { Gain.fadeIn($0) }
        XCTAssertEqual(inOut.first, 0)
        for i in 1..<inOut.count { XCTAssertGreaterThanOrEqual(inOut[i], inOut[i - 1]) }
    }

    func testGainRampAcrossBlocksEqualsOneRamp() {
        let input = TestSignals.randomInt16(1000, seed: 3)
        var whole = input
        whole.withUnsafeMutableBufferPointer { buffer in
            Gain.ramp(UnsafeMutableBufferPointer(rebasing: buffer[0..<600]), from: 1, step: -1 / 600)
            Gain.apply(0, to: UnsafeMutableBufferPointer(rebasing: buffer[600...]))
        }
        var blocks = input
        var ramp = GainRamp(from: 1, to: 0, length: 600)
        blocks.withUnsafeMutableBufferPointer { buffer in
            for start in stride(from: 0, to: 1000, by: 240) {
                ramp.apply(to: UnsafeMutableBufferPointer(rebasing: buffer[start..<min(1000, start + 240)]))
            }
        }
        XCTAssertTrue(ramp.isFinished)
        // Per-block restarts accumulate the gain by addition, so allow one LSB of rounding.
        for (a, b) in zip(whole, blocks) { XCTAssertLessThanOrEqual(abs(Int(a) - Int(b)), 1) }
        XCTAssertEqual(Array(blocks[600...]), [Int16](repeating: 0, count: 400))
    }
}
