import Foundation
import PracticeNet
import XCTest

final class AudioPayloadDecoderTests: XCTestCase {
    func decode(_ json: String) throws -> [UInt8] {
        var decoder = AudioPayloadDecoder()
        var bytes = Array(json.utf8)
        let n = try bytes.withUnsafeMutableBytes { try decoder.decode(UnsafeRawBufferPointer($0)) }
        return Array(decoder.decoded.prefix(n))
    }

    func testMatchesFoundationOnRandomPayloadsOfEveryLengthIncludingOdd() throws {
        var g = SystemRandomNumberGenerator()
        for length in Array(0...40) + [2_399, 2_400, 24_001] {
            let pcm = (0..<length).map { _ in UInt8.random(in: 0...255, using: &g) }
            let b64 = Data(pcm).base64EncodedString()
            XCTAssertEqual(try decode("{\"audio\": \"\(b64)\"}"), pcm, "length \(length), server shape")
            XCTAssertEqual(try decode("{\"audio\":\"\(b64)\"}"), pcm, "length \(length), compact")
        }
    }

    func testOtherShapesGoThroughTheJSONPath() throws {
        XCTAssertEqual(try decode("{ \"audio\" : \"AAEC\" , \"seq\": 3 }"), [0, 1, 2])
        XCTAssertEqual(try decode("{\"seq\": 3, \"audio\": \"AAEC\"}"), [0, 1, 2])
        XCTAssertEqual(try decode("{\"audio\": \"AA\\/C\"}"), [0, 15, 194], "an escaped slash")
    }

    func testMalformedPayloadsAreClearErrors() {
        XCTAssertThrowsError(try decode("{\"audio\": \"AA*C\"}")) { XCTAssertEqual($0 as? AudioPayloadError, .invalidBase64(offset: 0)) }
        XCTAssertThrowsError(try decode("{\"audio\": \"AAE\"}")) { XCTAssertEqual($0 as? AudioPayloadError, .invalidBase64(offset: 3)) }
        XCTAssertThrowsError(try decode("{\"audio\": \"A=AA\"}"))
        XCTAssertThrowsError(try decode("{\"text\": \"hi\"}")) { XCTAssertEqual($0 as? AudioPayloadError, .notAudioJSON) }
        XCTAssertThrowsError(try decode("not json")) { XCTAssertEqual($0 as? AudioPayloadError, .notAudioJSON) }
        XCTAssertThrowsError(try decode("{\"audio\": 5}")) { XCTAssertEqual($0 as? AudioPayloadError, .notAudioJSON) }
    }
}
