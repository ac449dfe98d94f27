import Foundation
@testable import PracticeKit
import PracticeNet
import XCTest

/// The daemon links FoundationEssentials only; what it took from Foundation's NSString
/// bridge it now does itself. Foundation (which the tests still link) is the reference each
/// replacement is checked against.
final class FoundationReplacementTests: XCTestCase {
    func testPathSegmentsArePercentEscapedAsFoundationDid() {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#")
        let segments = ["plain-id_1.2~x", "a/b", "q?x#f", "sp ace", "100%", "ünï€😀", "semi;colon", "a+b=c&d@e:f!$'()*,", "\u{0}\u{7f}", ""]
        for segment in segments {
            XCTAssertEqual(BackendClient.escape(segment), segment.addingPercentEncoding(withAllowedCharacters: allowed), "escaping \(segment.debugDescription)")
        }
    }

    func testTextIsTrimmedAndComparedAsFoundationDid() {
        for text in ["  key = value \t", "\n\tx\r\n", "   ", "", "a b"] {
            XCTAssertEqual(text.trimmed(), text.trimmingCharacters(in: .whitespacesAndNewlines), text.debugDescription)
            XCTAssertEqual(text.trimmed(newlines: false), text.trimmingCharacters(in: .whitespaces), text.debugDescription)
        }
        XCTAssertTrue("Content-Type".equalsIgnoringASCIICase("content-TYPE"))
        XCTAssertTrue("chunked".equalsIgnoringASCIICase("CHUNKED"))
        XCTAssertFalse("chunked".equalsIgnoringASCIICase("chunkee"))
        XCTAssertFalse("a[".equalsIgnoringASCIICase("a{"), "only letters fold: '[' is not '{'")
        XCTAssertFalse("ab".equalsIgnoringASCIICase("abc"))
    }
}
