import AudioKernel
import XCTest

final class SignalLevelTests: XCTestCase {
    func referenceSum(_ s: [Int16]) -> UInt64 { s.reduce(0) { $0 + UInt64(Int64($1) * Int64($1)) } }
    func referencePeak(_ s: [Int16]) -> Int { s.map { abs(Int($0)) }.max() ?? 0 }

    func testSumOfSquaresAndPeakMatchScalarReferenceForEveryLength() {
        for n in TestSignals.lengths {
            for input in [TestSignals.randomInt16(n, seed: UInt64(n) &+ 100), TestSignals.edgeInt16(n)] {
                let level = SignalLevel(measuring: input)
                XCTAssertEqual(level.sumOfSquares, referenceSum(input), "length \(n)")
                XCTAssertEqual(level.peak, referencePeak(input), "length \(n)")
                XCTAssertEqual(level.sampleCount, n)
                input.withUnsafeBufferPointer { p in
                    XCTAssertEqual(SignalLevel.sumOfSquares(p), referenceSum(input), "length \(n)")
                    XCTAssertEqual(SignalLevel.peakMagnitude(p), referencePeak(input), "length \(n)")
                }
            }
        }
    }

    func testWorstCaseIsExact() {
        // Every sample at Int16.min: each pair of squares is exactly 2^31, the case that
        // overflows a signed 32-bit pairwise sum.
        let input = [Int16](repeating: .min, count: 1 << 16)
        let level = SignalLevel(measuring: input)
        XCTAssertEqual(level.sumOfSquares, UInt64(1 << 16) << 30)
        XCTAssertEqual(level.rms, 32768)
        XCTAssertEqual(level.peak, 32768)
        XCTAssertEqual(level.rmsDBFS, 0, accuracy: 1e-12)
    }

    func testRMSAndDBFS() {
        XCTAssertEqual(SignalLevel.zero.rms, 0)
        XCTAssertEqual(SignalLevel.zero.rmsDBFS, SignalLevel.floorDBFS)
        let square = (0..<480).map { $0 % 2 == 0 ? Int16(1000) : Int16(-1000) }
        let level = SignalLevel(measuring: square)
        XCTAssertEqual(level.rms, 1000)
        XCTAssertEqual(level.peakDBFS, 20 * log10(1000.0 / 32768), accuracy: 1e-9)
        let sine = TestSignals.sine(amplitude: 16384, frequency: 1000, count: 24_000)
        // A sine's RMS is its amplitude / √2: -6.02 dB - 3.01 dB.
        XCTAssertEqual(SignalLevel(measuring: sine).rmsDBFS, -9.03, accuracy: 0.01)
        sine.withUnsafeBufferPointer { XCTAssertEqual(SignalLevel.rms($0), 16384 / 2.0.squareRoot(), accuracy: 0.5) }
    }

    func testMergeEqualsMeasuringTheWhole() {
        let input = TestSignals.randomInt16(1000, seed: 5)
        var merged = SignalLevel(measuring: Array(input[..<333]))
        merged.merge(SignalLevel(measuring: Array(input[333...])))
        XCTAssertEqual(merged, SignalLevel(measuring: input))
    }
}
