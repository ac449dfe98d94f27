import Foundation
import TestSupport
import XCTest

/// onnxruntime from PyPI (the environment .ci/setup builds) running the same model files, and
/// pipecat's own feature code: what the Swift inference is checked against.
enum ONNXReference {
    static let models = ProcessInfo.processInfo.environment["PRACTICED_MODELS_DIR"] ?? "/opt/practiced-ci/models"
    static let silero = "\(models)/silero_vad_op18_ifless.onnx"
    static let smartTurn = "\(models)/smart-turn-v3.2-cpu.onnx"
    static let pipecatFeatures = "\(models)/pipecat_whisper_features.py"
    static let python = "/opt/practiced-ci/onnx/bin/python3"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/onnx-reference/reference.py").standardized.path

    static func bytes(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func write(_ samples: [Float], to url: URL) throws {
        try samples.withUnsafeBufferPointer { try Data(buffer: $0).write(to: url) }
    }

    /// Numbers printed one per line by the reference script.
    static func run(_ arguments: [String]) throws -> [Float] {
        try runTool(python, [script] + arguments).split(separator: "\n").map { try XCTUnwrap(Float($0)) }
    }

    /// Raw float32 written by the reference script to standard output.
    static func runBinary(_ arguments: [String]) throws -> [Float] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("reference-\(UUID().uuidString).f32")
        defer { try? FileManager.default.removeItem(at: output) }
        _ = try runTool("sh", ["-c", "\"$0\" \"$@\" > \"\(output.path)\"", python, script] + arguments)
        return try Data(contentsOf: output).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The shipped build's `audiokernel-demo speech …`, its numbers one per line.
    static func ours(_ arguments: [String]) throws -> [Float] {
        try runTool(ShippedBinaries.path(of: "audiokernel-demo"), ["speech"] + arguments)
            .split(separator: "\n").map { try XCTUnwrap(Float($0)) }
    }

    static func temporaryFile(_ name: String) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString)-\(name)")
    }
}
