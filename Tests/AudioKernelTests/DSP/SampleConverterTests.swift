import AudioKernel
import XCTest

final class SampleConverterTests: XCTestCase {
    /// The plain scalar loop the kernel must match exactly.
    func referenceToFloat(_ s: [Int16]) -> [Float] { s.map { Float($0) / 32768 } }

    func referenceToInt16(_ f: [Float]) -> [Int16] {
        f.map { v in
            guard !v.isNaN else { return 0 }
            return Int16(min(max(v * 32768, -32768), 32767).rounded(.toNearestOrEven))
        }
    }

    func testInt16ToFloatMatchesScalarReferenceForEveryLength() {
        for n in TestSignals.lengths {
            for input in [TestSignals.randomInt16(n, seed: UInt64(n)), TestSignals.edgeInt16(n)] {
                var out = [Float](repeating: .nan, count: n)
                SampleConverter.int16ToFloat32(input, into: &out)
                XCTAssertEqual(out, referenceToFloat(input), "length \(n)")
            }
        }
    }

    func testInt16ToFloatFullScale() {
        var out = [Float](repeating: 0, count: 3)
        SampleConverter.int16ToFloat32([.min, 0, .max], into: &out)
        XCTAssertEqual(out[0], -1.0)
        XCTAssertEqual(out[1], 0)
        XCTAssertEqual(out[2], 32767.0 / 32768.0)
    }

    func testInt16ToFloatWritesOnlyItsLength() {
        // A longer destination keeps its tail: the kernel writes exactly source.count values.
        var out = [Float](repeating: 7, count: 40)
        SampleConverter.int16ToFloat32(TestSignals.randomInt16(33, seed: 1), into: &out)
        XCTAssertEqual(Array(out[33...]), [Float](repeating: 7, count: 7))
    }

    func testFloatToInt16MatchesScalarReferenceForEveryLength() {
        var g = SeededGenerator(seed: 42)
        for n in TestSignals.lengths {
            // Values beyond ±1 exercise the clip; small ones the rounding.
            let input = (0..<n).map { _ in Float.random(in: -1.5...1.5, using: &g) }
            var out = [Int16](repeating: 99, count: n)
            SampleConverter.float32ToInt16(input, into: &out)
            XCTAssertEqual(out, referenceToInt16(input), "length \(n)")
        }
    }

    func testFloatToInt16ClipsNaNAndInfinityWithoutTrapping() {
        let specials: [Float] = [.nan, .infinity, -.infinity, 1, -1, 2, -2, .greatestFiniteMagnitude,
                                 -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -0.0, 0.5 / 32768, 1.5 / 32768,
                                 -.nan, .signalingNaN]
        for n in [1, 15, 16, 17, 33, 64] {
            let input = (0..<n).map { specials[$0 % specials.count] }
            var out = [Int16](repeating: 99, count: n)
            SampleConverter.float32ToInt16(input, into: &out)
            XCTAssertEqual(out, referenceToInt16(input), "length \(n)")
        }
        var out = [Int16](repeating: 99, count: 16)
        SampleConverter.float32ToInt16([Float](repeating: .nan, count: 8) + [Float](repeating: .infinity, count: 4)
                                       + [Float](repeating: -.infinity, count: 4), into: &out)
        XCTAssertEqual(out, [Int16](repeating: 0, count: 8) + [Int16](repeating: 32767, count: 4) + [Int16](repeating: -32768, count: 4))
    }

    func testRoundsToNearestEven() {
        // 0.5 and 1.5 LSB are ties: to even gives 0 and 2.
        var out = [Int16](repeating: 99, count: 2)
        SampleConverter.float32ToInt16([0.5 / 32768, 1.5 / 32768], into: &out)
        XCTAssertEqual(out, [0, 2])
    }

    func testRoundTripIsExact() {
        let input = TestSignals.randomInt16(4097, seed: 9)
        var floats = [Float](repeating: 0, count: input.count)
        var back = [Int16](repeating: 0, count: input.count)
        SampleConverter.int16ToFloat32(input, into: &floats)
        SampleConverter.float32ToInt16(floats, into: &back)
        // One scale each way: every PCM16 value survives Float32 unchanged, the extremes included.
        XCTAssertEqual(back, input)
        var extremes = [Int16](repeating: 0, count: 3)
        SampleConverter.float32ToInt16([-1, 1, 32767.0 / 32768.0], into: &extremes)
        XCTAssertEqual(extremes, [-32768, 32767, 32767])
    }
}
