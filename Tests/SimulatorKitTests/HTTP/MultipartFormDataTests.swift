import SimulatorKit
import XCTest

final class MultipartFormDataTests: XCTestCase {
    private func body(_ text: String, binary: [UInt8] = []) -> [UInt8] {
        Array(text.replacingOccurrences(of: "<BIN>", with: "").utf8)
    }

    func testBoundaryFromContentType() {
        XCTAssertEqual(MultipartFormData.boundary(fromContentType: "multipart/form-data; boundary=abc123"), "abc123")
        XCTAssertEqual(MultipartFormData.boundary(fromContentType: "Multipart/Form-Data;boundary=\"a b;c\""), "a b;c")
        XCTAssertNil(MultipartFormData.boundary(fromContentType: "application/json"))
        XCTAssertNil(MultipartFormData.boundary(fromContentType: "multipart/form-data"))
        XCTAssertNil(MultipartFormData.boundary(fromContentType: "multipart/form-data; boundary=" + String(repeating: "x", count: 71)))
    }

    func testPartsWithBinaryContentPreambleAndQuotedParameters() throws {
        let wav: [UInt8] = [0x52, 0x49, 0x46, 0x46, 0x0D, 0x0A, 0x2D, 0x2D, 0x00, 0xFF]  // CRLF and "--" inside
        var bytes = Array("preamble to ignore\r\n--XyZ\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"a;b.wav\"\r\nContent-Type: audio/wav\r\n\r\n".utf8)
        bytes += wav
        bytes += Array("\r\n--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n--XyZ--\r\nepilogue".utf8)
        let parts = try MultipartFormData.parse(bytes, boundary: "XyZ")
        XCTAssertEqual(parts.count, 2)
        XCTAssertEqual(parts[0].name, "audio")
        XCTAssertEqual(parts[0].filename, "a;b.wav")
        XCTAssertEqual(parts[0].contentType, "audio/wav")
        XCTAssertEqual(parts[0].body, wav)
        XCTAssertEqual(parts[1].name, "note")
        XCTAssertNil(parts[1].filename)
        XCTAssertEqual(parts[1].body, Array("hello".utf8))
    }

    func testBrokenBodiesAreErrors() {
        let cases: [(String, String)] = [
            ("no boundary at all", "no multipart boundary"),
            ("--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nunterminated", "closing boundary"),
            ("--B\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--B--", "not form-data"),
            ("--B\r\nContent-Disposition: form-data\r\n\r\nx\r\n--B--", "without a name"),
            ("--Bgarbage", "not followed by CRLF"),
        ]
        for (text, reason) in cases {
            XCTAssertThrowsError(try MultipartFormData.parse(Array(text.utf8), boundary: "B"), text) {
                XCTAssertTrue("\($0)".contains(reason), "\(text): \($0)")
            }
        }
    }
}
