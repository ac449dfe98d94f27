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

    /// The sparse product of attention's probabilities by pair-interleaved values is the dense
    /// scalar sum: rows all zero, rows with one key, odd keys only, every key, mostly zeros, and
    /// the extremes (255 by ±255).
    func testTheSparsePairProductEqualsTheDenseScalarSums() {
        var generator = HumanSpeech.SplitMix(7)
        let width = SparsePairGEMM.width
        for keys in [2, 6, 400] {
            let rows = 7
            var p = [Int16](repeating: 0, count: rows * keys)
            for j in 0..<keys { p[1 * keys + j] = 255 }  // row 1: every key at the top step
            p[2 * keys + keys - 1] = 1  // row 2: the last key only
            for j in stride(from: 1, to: keys, by: 2) { p[3 * keys + j] = Int16(generator.next() % 256) }  // row 3: odd keys
            for m in 4..<rows {  // mostly zeros, as softmax leaves them
                for j in 0..<keys where generator.next() % 4 == 0 { p[m * keys + j] = Int16(generator.next() % 256) }
            }
            let v = (0..<(keys * width)).map { i in i % 97 == 0 ? Int16(-255) : Int16(Int(generator.next() % 511) - 255) }  // [j][d]
            var paired = [Int16](repeating: 0, count: keys * width)
            for j in 0..<keys { for d in 0..<width { paired[SparsePairGEMM.index(key: j, dimension: d)] = v[j * width + d] } }
            var expected = [Int32](repeating: 0, count: rows * width)
            for m in 0..<rows { for d in 0..<width { for j in 0..<keys { expected[m * width + d] += Int32(p[m * keys + j]) * Int32(v[j * width + d]) } } }
            var got = [Int32](repeating: -1, count: rows * width)
            SparsePairGEMM.multiply(p, rows: rows, keys: keys, pairedValues: paired, into: &got)
            XCTAssertEqual(got, expected, "\(keys) keys")
            XCTAssertEqual(Array(got[0..<width]), [Int32](repeating: 0, count: width), "a row of zeros sums to zero")
        }
    }

    /// The sparse row product by pair-interleaved Int8 weights is the dense scalar sum: a row
    /// of zeros, a row with every value at the top step by the extreme weights, one value
    /// alone (odd and even inputs), and rows 95 % zeros as the rectified GELU leaves them.
    func testTheSparseRowProductEqualsTheDenseScalarSums() {
        var generator = HumanSpeech.SplitMix(11)
        for (depth, columns) in [(2, 32), (6, 64), (1536, 384)] {
            let rows = 7
            var a = [Int16](repeating: 0, count: rows * depth)
            for k in 0..<depth { a[1 * depth + k] = k % 2 == 0 ? 255 : -255 }  // row 1: every input
            a[2 * depth + depth - 1] = 3  // row 2: the last (odd) input alone
            a[3 * depth] = -7  // row 3: the first (even) input alone
            for m in 4..<rows {
                for k in 0..<depth where generator.next() % 20 == 0 { a[m * depth + k] = Int16(generator.next() % 256) }
            }
            let w = (0..<(columns * depth)).map { i in
                i % 89 == 0 ? Int8.min : i % 97 == 0 ? Int8.max : Int8(truncatingIfNeeded: Int(generator.next() % 256) - 128)
            }  // [n][k]
            var expected = [Int32](repeating: 0, count: rows * columns)
            for m in 0..<rows { for n in 0..<columns { for k in 0..<depth { expected[m * columns + n] += Int32(a[m * depth + k]) * Int32(w[n * depth + k]) } } }
            let paired = SparseRowGEMM.paired(w, outputs: columns, inputs: depth)
            var got = [Int32](repeating: -1, count: rows * (columns + 4))  // a wider stride: the gap stays untouched
            var active = [Int16](repeating: 0, count: depth / 2)
            SparseRowGEMM.multiply(a, rows: rows, depth: depth, pairedWeights: paired, columns: columns, into: &got, strideC: columns + 4,
                                   active: &active)
            for m in 0..<rows {
                XCTAssertEqual(Array(got[(m * (columns + 4))..<(m * (columns + 4) + columns)]), Array(expected[(m * columns)..<((m + 1) * columns)]),
                               "\(depth)×\(columns), row \(m)")
                XCTAssertEqual(Array(got[(m * (columns + 4) + columns)..<((m + 1) * (columns + 4))]), [-1, -1, -1, -1], "past the row")
            }
            XCTAssertEqual(Array(got[0..<columns]), [Int32](repeating: 0, count: columns), "a row of zeros sums to zero")
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

    func testTheBatchedProductIsEachVectorsOwnProduct() {
        // Bit for bit: each row's sums run in the same order for one vector or four.
        var generator = HumanSpeech.SplitMix(11)
        for (rows, columns) in [(128, 387), (64, 384), (5, 13), (3, 8), (1, 1)] {
            let matrix = (0..<rows * columns).map { _ in generator.nextSigned() }
            let bias = (0..<rows).map { _ in generator.nextSigned() }
            let vectors = (0..<4 * columns).map { _ in generator.nextSigned() }
            for count in 1...4 {
                var batched = [Float](repeating: .nan, count: 4 * rows)
                FloatKernels.multiply(matrix, rows: rows, columns: columns, vectors: vectors, count: count, bias: bias, into: &batched)
                for v in 0..<count {
                    var one = [Float](repeating: .nan, count: rows)
                    vectors.withUnsafeBufferPointer { FloatKernels.multiply(matrix, rows: rows, columns: columns, $0.baseAddress! + v * columns, bias: bias, into: &one) }
                    XCTAssertEqual(Array(batched[v * rows..<(v + 1) * rows]), one, "\(rows)×\(columns), vector \(v) of \(count)")
                }
                XCTAssertTrue(batched[(count * rows)...].allSatisfy { $0.isNaN }, "nothing written past \(count) vectors")
            }
        }
    }

    func testSilerosSTFTIsTheProductWithTheFilesFilters() throws {
        let graph = try ONNXModel(bytes: ONNXReference.bytes(ONNXReference.silero)).graph
        let basis = try graph.initializer("model.stft.forward_basis_buffer", dims: [258, 1, 256]).floats()
        let stft = try SileroSTFT(basis: basis)
        var generator = HumanSpeech.SplitMix(5)
        let signal = (0..<640).map { _ in generator.nextSigned() * 0.5 }
        var magnitudes = [Float](repeating: 0, count: 129 * 4)
        stft.magnitudes(signal, into: &magnitudes)
        var worst: Float = 0
        for t in 0..<4 {
            for bin in 0..<129 {
                // The convolution as the file states it, in double.
                var re = 0.0, im = 0.0
                for n in 0..<256 {
                    re += Double(basis[bin * 256 + n]) * Double(signal[t * 128 + n])
                    im += Double(basis[(129 + bin) * 256 + n]) * Double(signal[t * 128 + n])
                }
                worst = max(worst, abs(magnitudes[bin * 4 + t] - Float((re * re + im * im).squareRoot())))
            }
        }
        print("Silero's STFT by FFT beside the file's filters: largest difference \(worst)")
        XCTAssertLessThan(worst, 2e-5)
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
