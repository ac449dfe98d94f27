import Foundation
import PracticeProtocol
import XCTest

final class ControlRequestDecoderTests: XCTestCase {
    private func decode(_ text: String) -> Result<ControlRequest, ControlRequestDecoder.DecodeFailure> {
        ControlRequestDecoder.decode(Array(text.utf8))
    }

    private func code(_ text: String) -> ControlErrorCode? {
        if case .failure(let failure) = decode(text) { return failure.error.code }
        return nil
    }

    func testWellFormedRequests() throws {
        XCTAssertEqual(try decode(#"{"id": 1, "command": "ping"}"#).get(), ControlRequest(id: 1, command: "ping"))
        let play = try decode(#"{"command": "play", "args": {"path": "/a.wav", "future": [1]}, "id": "x-9", "trace": true}"#).get()
        XCTAssertEqual(play.id, "x-9")
        XCTAssertEqual(try play.arguments(Command.Play.self).path, "/a.wav")
        XCTAssertEqual(play.args["future"], [1], "unknown fields are kept and ignored")
        XCTAssertEqual(try decode("{\"id\": 2, \"command\": \"ping\"}\r").get().id, 2, "a CR before the LF is allowed")
        XCTAssertEqual(try decode(#"{"id": 3, "command": "say", "args": {"text": "caf\u00e9 \ud83c\udf89"}}"#).get().arguments(Command.Say.self).text, "café 🎉")
    }

    func testEachProblemHasItsCode() {
        XCTAssertEqual(code("not json"), .malformedJSON)
        XCTAssertEqual(code("[1, 2]"), .malformedJSON)
        XCTAssertEqual(code(""), .malformedJSON)
        XCTAssertEqual(ControlRequestDecoder.decode([0x7B, 0xC3, 0x28, 0x7D]).failure?.error.code, .malformedJSON, "invalid UTF-8")
        XCTAssertEqual(code(#"{"command": "ping"}"#), .badArguments, "no id")
        XCTAssertEqual(code(#"{"id": 1.5, "command": "ping"}"#), .badArguments)
        XCTAssertEqual(code(#"{"id": 1, "command": ""}"#), .badArguments)
        XCTAssertEqual(code(#"{"id": 1, "command": "ping", "args": [1]}"#), .badArguments)
        let long = Array(#"{"id": 1, "command": "ping", "args": {"x": ""#.utf8) + [UInt8](repeating: 0x61, count: 70_000) + Array(#""}}"#.utf8)
        XCTAssertEqual(ControlRequestDecoder.decode(long).failure?.error.code, .lineTooLong)
        // The id is echoed whenever it could be read.
        XCTAssertEqual(decode(#"{"id": "q", "command": 7}"#).failure?.id, "q")
    }

    func testProtocolVersions() {
        XCTAssertTrue(ControlProtocol.accepts("practiced/1"))
        XCTAssertTrue(ControlProtocol.accepts("practiced/1.7"))
        XCTAssertFalse(ControlProtocol.accepts("practiced/2"))
        XCTAssertFalse(ControlProtocol.accepts("practiced/"))
        XCTAssertFalse(ControlProtocol.accepts("other/1"))
    }

    func testKeptFuzzInputsDecodeWithoutTrapping() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/control-fuzz")
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        XCTAssertGreaterThanOrEqual(files.count, 4)
        var accepted = 0
        for url in files {
            for line in try Data(contentsOf: url).split(separator: 0x0A, omittingEmptySubsequences: false) {
                if case .success(let request) = ControlRequestDecoder.decode(Array(line)) {
                    accepted += 1
                    XCTAssertFalse(request.command.isEmpty)
                }
            }
        }
        XCTAssertGreaterThanOrEqual(accepted, 4)
    }
}

extension Result {
    var failure: Failure? { if case .failure(let f) = self { return f } else { return nil } }
}
