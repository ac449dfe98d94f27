import Foundation
@testable import SpeechModels
import XCTest

/// What a damaged, foreign or hostile model file does: a clear error naming what is wrong,
/// never a crash or a read past the buffer.
final class ModelFileTests: XCTestCase {
    func testTruncatedFilesAreRefusedAtEveryLength() throws {
        let bytes = try ONNXReference.bytes(ONNXReference.silero)
        XCTAssertNoThrow(try SileroVAD(onnx: bytes))
        for length in [0, 1, 7, 100, 1_000, bytes.count / 3, bytes.count / 2, bytes.count - 1] {
            XCTAssertThrowsError(try SileroVAD(onnx: Array(bytes.prefix(length))), "\(length) bytes") { error in
                XCTAssertTrue(error is ModelError, "\(error)")
            }
        }
    }

    func testGarbageAndHostileLengthsAreMalformed() {
        // A field claiming 2^62 bytes, a varint that never ends, an unknown wire type.
        for bytes: [UInt8] in [[0x3A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x3F],
                               [0x08] + [UInt8](repeating: 0xFF, count: 20),
                               [0x0F, 0x00], Array("<html>not a model</html>".utf8)] {
            XCTAssertThrowsError(try ONNXModel(bytes: bytes)) { error in
                guard case .malformed = error as? ModelError else { return XCTFail("\(error)") }
            }
        }
    }

    func testEachModelRefusesTheOthersFile() throws {
        let silero = try ONNXReference.bytes(ONNXReference.silero)
        let smartTurn = try ONNXReference.bytes(ONNXReference.smartTurn)
        XCTAssertThrowsError(try SmartTurnModel(onnx: silero)) { print("smart-turn on Silero's file: \($0)") }
        XCTAssertThrowsError(try SileroVAD(onnx: smartTurn)) { print("Silero on smart-turn's file: \($0)") }
    }

    func testSTFTFiltersThatAreNotAWindowedDFTAreRefused() throws {
        // The STFT is computed as the windowed FFT the file's filters are; filters that are
        // something else (another export, a damaged file that still parses) are refused, not
        // replaced by a transform the file does not hold.
        let graph = try ONNXModel(bytes: ONNXReference.bytes(ONNXReference.silero)).graph
        let basis = try graph.initializer("model.stft.forward_basis_buffer", dims: [258, 1, 256]).floats()
        XCTAssertNoThrow(try SileroSTFT(basis: basis))
        for (index, change) in [(5 * 256 + 17, Float(1e-4)), (200 * 256 + 3, -1e-4), (0 * 256 + 128, 0.01)] {
            var damaged = basis
            damaged[index] += change
            XCTAssertThrowsError(try SileroSTFT(basis: damaged), "value \(index)") { error in
                guard case .unexpectedGraph(let what) = error as? ModelError else { return XCTFail("\(error)") }
                XCTAssertTrue(what.contains("STFT filter"), what)
            }
        }
    }

    /// A well-formed file whose feed-forward contraction has an odd depth (layer 2's [1536][384]
    /// weight given again as [1535][384], with its data: the graph keeps the last initializer of
    /// a name) is refused as the wrong shape before its weights are laid out for the sparse
    /// product, which takes inputs in pairs.
    func testAFeedForwardOfTheWrongDepthIsRefusedNotLaidOut() throws {
        let name = Array("val_234_quantized".utf8)
        var tensor: [UInt8] = [0x08] + Self.varint(1535) + [0x08] + Self.varint(384) + [0x10, 0x03, 0x42, UInt8(name.count)] + name
        tensor += [0x4A] + Self.varint(1535 * 384) + [UInt8](repeating: 1, count: 1535 * 384)  // raw_data
        let extra = [0x2A] + Self.varint(tensor.count) + tensor  // the graph's initializer field
        let bytes = try Self.appendingToGraph(ONNXReference.bytes(ONNXReference.smartTurn), extra)
        XCTAssertThrowsError(try SmartTurnModel(onnx: bytes)) { error in
            guard case .wrongShape(let what) = error as? ModelError else { return XCTFail("\(error)") }
            XCTAssertTrue(what.contains("layer 2"), what)
        }
    }

    static func varint(_ value: Int) -> [UInt8] {
        var v = UInt64(value), out: [UInt8] = []
        repeat {
            out.append(UInt8(v & 0x7F) | (v >= 0x80 ? 0x80 : 0))
            v >>= 7
        } while v > 0
        return out
    }

    /// The model's bytes with `extra` appended to its graph (ModelProto's field 7), every other
    /// top-level field as it was.
    static func appendingToGraph(_ model: [UInt8], _ extra: [UInt8]) throws -> [UInt8] {
        try model.withUnsafeBytes { buffer in
            var reader = ProtobufReader(buffer[...])
            var out: [UInt8] = []
            while !reader.atEnd {
                let field = try reader.next()
                out += varint(field.number << 3 | Int(field.wireType.rawValue))
                switch field.wireType {
                case .varint: out += varint(Int(field.varint))
                case .fixed32, .fixed64, .lengthDelimited:
                    if field.wireType == .lengthDelimited {
                        out += varint(field.bytes.count + (field.number == 7 ? extra.count : 0))
                    }
                    out += Array(field.bytes)
                    if field.number == 7 { out += extra }
                }
            }
            return out
        }
    }

    func testATensorOfTheWrongShapeIsNamed() throws {
        // The LSTM's input weight, [512, 128] float, as its TensorProto begins: dims 512 and
        // 128 (field 1), data type 1 (field 2), then its name (field 8). 512 becomes 511 in
        // place (0x80 0x04 -> 0xFF 0x03: the same length, so the file still parses).
        var bytes = try ONNXReference.bytes(ONNXReference.silero)
        let name = Array("model.decoder.rnn.weight_ih".utf8)
        let header: [UInt8] = [0x08, 0x80, 0x04, 0x08, 0x80, 0x01, 0x10, 0x01, 0x42, UInt8(name.count)] + name
        let at = try XCTUnwrap((0..<(bytes.count - header.count)).first { Array(bytes[$0..<$0 + header.count]) == header })
        bytes[at + 1] = 0xFF
        bytes[at + 2] = 0x03
        XCTAssertThrowsError(try SileroVAD(onnx: bytes)) { error in
            XCTAssertTrue("\(error)".contains("model.decoder.rnn.weight_ih"), "names the tensor: \(error)")
        }
    }
}
