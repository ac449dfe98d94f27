import Foundation
@testable import SpeechModels
import TestSupport
import XCTest

/// The kernels beside plain scalar versions of themselves.
final class KernelTests: XCTestCase {
    func testIntegerProductsEqualTheScalarSumsAtEveryEdgeShape() {
        var generator = HumanSpeech.SplitMix(42)
        for (rows, depth, columns) in [(1, 8, 1), (2, 16, 2), (3, 8, 3), (4, 24, 5), (7, 64, 10), (10, 240, 4),
                                       (5, 1536, 40), (4, 384, 70)] {  // the last two: several panels of widened weights
            let a = (0..<(rows * depth)).map { _ in Int16(Int(generator.next() % 511) - 255) }
            let b8 = (0..<(columns * depth)).map { _ in Int8(truncatingIfNeeded: Int(generator.next() % 256) - 128) }
            let b16 = (0..<(columns * depth)).map { _ in Int16(Int(generator.next() % 511) - 255) }
            var expected8 = [Int32](repeating: 0, count: rows * columns), expected16 = expected8
            for m in 0..<rows {
                for n in 0..<columns {
                    for k in 0..<depth {
                        expected8[m * columns + n] += Int32(a[m * depth + k]) * Int32(b8[n * depth + k])
                        expected16[m * columns + n] += Int32(a[m * depth + k]) * Int32(b16[n * depth + k])
                    }
                }
            }
            var got8 = [Int32](repeating: -1, count: rows * columns), got16 = got8
            let panel = UnsafeMutablePointer<Int16>.allocate(capacity: IntegerGEMM.panelCapacity)
            defer { panel.deallocate() }
            IntegerGEMM.multiply(a, rows: rows, depth: depth, strideA: depth, b8, columns: columns, strideB: depth, into: &got8, strideC: columns, panel: panel)
            IntegerGEMM.multiply(a, rows: rows, depth: depth, strideA: depth, b16, columns: columns, strideB: depth, into: &got16, strideC: columns)
            XCTAssertEqual(got8, expected8, "\(rows)×\(depth)×\(columns) int8")
            XCTAssertEqual(got16, expected16, "\(rows)×\(depth)×\(columns) int16")
        }
    }

    func testTheMixedRadixDFTIsTheDirectOne() {
        let dft = MixedRadixDFT()
        var generator = HumanSpeech.SplitMix(7)
        let x = (0..<400).map { _ in Double(generator.nextSigned()) }
        var power = [Double](repeating: 0, count: 201)
        dft.powerSpectrum(x, into: &power)
        for k in 0...200 {
            var re = 0.0, im = 0.0
            for n in 0..<400 {
                re += x[n] * cos(2 * .pi * Double(k * n) / 400)
                im -= x[n] * sin(2 * .pi * Double(k * n) / 400)
            }
            XCTAssertEqual(power[k], re * re + im * im, accuracy: 1e-9 * max(1, re * re + im * im), "bin \(k)")
        }
    }

    func testTheErrorFunctionIsFaithful() {
        // Within 2 units in the last place of libm's everywhere it matters, odd, and ±1 far out.
        var x: Float = -6
        while x <= 6 {
            let ours = ErrorFunction.erf(x), reference = erff(x)
            XCTAssertLessThanOrEqual(abs(ours - reference), 2 * reference.ulp + .leastNonzeroMagnitude, "erf(\(x))")
            XCTAssertEqual(ErrorFunction.erf(-x), -ours)
            x += 0.001
        }
        XCTAssertEqual(ErrorFunction.erf(50), 1)
        XCTAssertEqual(ErrorFunction.erf(0), 0)
    }

    func testQuantizationRoundsHalfToEvenAndClamps() {
        let q = Quantization(scale: 0.5, zeroPoint: 10)
        XCTAssertEqual(q.centred(0.25), 0)  // 0.5 steps: 0.5 rounds to 0
        XCTAssertEqual(q.centred(0.75), 2)  // 1.5 rounds to 2
        XCTAssertEqual(q.centred(-0.25), 0)
        XCTAssertEqual(q.centred(1_000), 245)  // 255 − zero point
        XCTAssertEqual(q.centred(-1_000), -10)  // 0 − zero point
        XCTAssertEqual(q.centred(.nan), -10)
        XCTAssertEqual(q.centred(.infinity), 245)
        XCTAssertEqual(q.centred(sum: 5, multiplier: 0.5), 2)
        XCTAssertEqual(q.centred(sum: Int32.max, multiplier: 1), 245)
    }
}
