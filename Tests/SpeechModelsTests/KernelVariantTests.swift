import CSpeechKernels
import Foundation
@testable import SpeechModels
import TestSupport
import XCTest

/// The C kernels chosen at run time (issue 70) against the portable Swift kernel they stand
/// in for: every variant this host runs gives its sums to the bit, on random and real shapes;
/// which variants run is what the kernel's own /proc/cpuinfo says the CPU has.
final class KernelVariantTests: XCTestCase {
    /// The CPU's flags as Linux reports them (a reader the project did not write).
    private func cpuFlags() throws -> Set<String> {
        let text = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("flags") })
        return Set(line.split(separator: ":")[1].split(separator: " ").map(String.init))
    }

    func testTheVariantsThatRunAreTheOnesTheCPUHas() throws {
        #if arch(x86_64)
        let flags = try cpuFlags()
        let supported = Set(KernelVariant.supported)
        XCTAssertTrue(supported.contains(.portable))
        XCTAssertEqual(supported.contains(.avx2), flags.contains("avx2"), "avx2")
        XCTAssertEqual(supported.contains(.avxVNNI), flags.contains("avx2") && flags.contains("avx_vnni"), "avx-vnni")
        XCTAssertEqual(supported.contains(.avx512VNNI), ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"].allSatisfy(flags.contains), "avx512-vnni")
        print("kernels: this host runs \(KernelVariant.supported.map(\.rawValue)), best \(KernelVariant.best.rawValue)")
        #else
        XCTAssertEqual(KernelVariant.supported, [.portable])
        #endif
        XCTAssertEqual(try KernelVariant.named("auto"), KernelVariant.best)
        XCTAssertEqual(try KernelVariant.named(nil), KernelVariant.best)
        XCTAssertEqual(try KernelVariant.named("portable"), .portable)
        XCTAssertThrowsError(try KernelVariant.named("avx9000"))
        for variant in KernelVariant.allCases where !variant.isSupported {
            XCTAssertThrowsError(try KernelVariant.named(variant.rawValue), variant.rawValue)
            XCTAssertThrowsError(try KernelVariant.use(variant), variant.rawValue)
        }
    }

    /// Random operands at every edge of the blocking (rows and columns 1 to 10, a short block
    /// of one or two), depths that end on each tail (8, 16, 24 past a multiple of 32), the
    /// model's own depths (64, 384, 1536), strides wider than the depth, and the extremes.
    func testEveryVariantGivesThePortableSumsToTheBit() throws {
        var generator = HumanSpeech.SplitMix(70)
        var shapes: [(rows: Int, depth: Int, columns: Int, pad: Int)] = []
        for rows in 1...7 { for columns in [1, 2, 3, 4, 5, 10] { shapes.append((rows, [8, 16, 24, 32, 40, 56][columns % 6], columns, rows % 3 * 8)) } }
        shapes += [(10, 64, 9, 0), (4, 384, 70, 16), (5, 1536, 40, 0), (1, 1536, 1, 8), (3, 8, 3, 0)]
        let variants = KernelVariant.supported.filter { $0 != .portable }
        for shape in shapes {
            let strideA = shape.depth + shape.pad, strideB = shape.depth + shape.pad
            for extremes in [false, true] {
                func value() -> Int16 { extremes ? (generator.next() % 2 == 0 ? 255 : -255) : Int16(Int(generator.next() % 511) - 255) }
                let a = (0..<(shape.rows * strideA)).map { _ in value() }
                let b = (0..<(shape.columns * strideB)).map { _ in value() }
                let b8 = (0..<(shape.columns * strideB)).map { _ in Int8(truncatingIfNeeded: Int(generator.next() % 256) - 128) }
                let strideC = shape.columns + 1
                var expected = [Int32](repeating: -7, count: shape.rows * strideC), expected8 = expected
                IntegerGEMM.portable(a, rows: shape.rows, depth: shape.depth, strideA: strideA, b, columns: shape.columns, strideB: strideB,
                                     into: &expected, strideC: strideC)
                let panel = UnsafeMutablePointer<Int16>.allocate(capacity: IntegerGEMM.panelCapacity)
                defer { panel.deallocate() }
                IntegerGEMM.multiply(a, rows: shape.rows, depth: shape.depth, strideA: strideA, b8, columns: shape.columns, strideB: strideB,
                                     into: &expected8, strideC: strideC, panel: panel, variant: .portable)
                for variant in variants {
                    var got = [Int32](repeating: -7, count: shape.rows * strideC), got8 = got
                    IntegerGEMM.multiply(a, rows: shape.rows, depth: shape.depth, strideA: strideA, b, columns: shape.columns, strideB: strideB,
                                         into: &got, strideC: strideC, variant: variant)
                    IntegerGEMM.multiply(a, rows: shape.rows, depth: shape.depth, strideA: strideA, b8, columns: shape.columns, strideB: strideB,
                                         into: &got8, strideC: strideC, panel: panel, variant: variant)
                    XCTAssertEqual(got, expected, "\(variant.rawValue) \(shape) int16\(extremes ? " ±255" : "")")
                    XCTAssertEqual(got8, expected8, "\(variant.rawValue) \(shape) int8")
                }
            }
        }
        // The C entry refuses what it has no kernel for, writing nothing.
        var untouched = [Int32](repeating: -7, count: 1)
        let one = [Int16](repeating: 1, count: 8)
        XCTAssertEqual(practicedGEMM(variant: .portable, one, depth: 8, into: &untouched), 0)
        XCTAssertEqual(practicedGEMM(variant: .avx2, one, depth: 7, into: &untouched), 0, "a depth not a multiple of 8")
        XCTAssertEqual(untouched, [-7])
    }

    private func practicedGEMM(variant: KernelVariant, _ a: [Int16], depth: Int, into c: inout [Int32]) -> Int32 {
        practiced_gemm_s16(variant.code, a, 1, depth, depth, a, 1, depth, &c, 1)
    }

    /// smart-turn v3.2 on the conformance windows, the shipped `audiokernel-demo` held to each
    /// variant: the same probabilities to the bit as on the portable kernels.
    func testSmartTurnGivesTheSameProbabilitiesOnEveryVariant() throws {
        let windows = ConformanceCorpus.windows(try ConformanceCorpus.stream(), count: 12)
        let audio = ONNXReference.temporaryFile("variant-windows.f32"), features = ONNXReference.temporaryFile("variant-features.f32")
        defer { for file in [audio, features] { try? FileManager.default.removeItem(at: file) } }
        try ONNXReference.write(windows, to: audio)
        _ = try ONNXReference.ours(["features", audio.path, features.path])
        let portable = try ONNXReference.ours(["turn", ONNXReference.smartTurn, "--features", features.path, "--kernels", "portable"])
        XCTAssertEqual(portable.count, 12)
        XCTAssertEqual(Set(portable.map { $0 > 0.5 }).count, 2, "the windows hold both decisions")
        for variant in KernelVariant.supported where variant != .portable {
            let got = try ONNXReference.ours(["turn", ONNXReference.smartTurn, "--features", features.path, "--kernels", variant.rawValue])
            XCTAssertEqual(got, portable, variant.rawValue)
        }
        let refused = try? ONNXReference.ours(["turn", ONNXReference.smartTurn, "--features", features.path, "--kernels", "avx9000"])
        XCTAssertNil(refused, "an unknown variant is a usage error")
    }
}
