@testable import PracticeNet
import XCTest

/// The client's response parser: framings, interim answers, keep-alive, limits and bad
/// input, each fed in every possible split so that no state depends on how bytes arrive.
final class HTTPResponseParserTests: XCTestCase {
    private struct Parsed: Equatable {
        var head: HTTPResponseParser.Head?
        var body: [UInt8] = []
        var ended = false
        var consumed = 0
        var keepAlive = false
    }

    /// Feeds the bytes in two pieces split at `split`, then the close if asked.
    private func parse(_ text: String, split: Int? = nil, close: Bool = false, requestHasBody: Bool = true) throws -> Parsed {
        try parse(Array(text.utf8), split: split, close: close, requestHasBody: requestHasBody)
    }

    private func parse(_ bytes: [UInt8], split: Int? = nil, close: Bool = false, requestHasBody: Bool = true) throws -> Parsed {
        var parser = HTTPResponseParser(requestHasBody: requestHasBody)
        var parsed = Parsed()
        let pieces = split.map { [Array(bytes[..<$0]), Array(bytes[$0...])] } ?? [bytes]
        for piece in pieces where !parsed.ended {
            parsed.consumed += try piece.withUnsafeBytes { buffer in
                try parser.feed(buffer) { output in
                    switch output {
                    case .head(let head): parsed.head = head
                    case .body(let bytes): parsed.body += bytes
                    case .end: parsed.ended = true
                    }
                }
            }
        }
        if close && !parsed.ended {
            try parser.finishAtClose()
            parsed.ended = parser.isComplete
        }
        parsed.keepAlive = parser.keepAlive
        return parsed
    }

    /// The same result whatever the split.
    private func parseEverySplit(_ text: String, close: Bool = false, file: StaticString = #filePath, line: UInt = #line) throws -> Parsed {
        try parseEverySplit(Array(text.utf8), close: close, file: file, line: line)
    }

    private func parseEverySplit(_ bytes: [UInt8], close: Bool = false, file: StaticString = #filePath, line: UInt = #line) throws -> Parsed {
        let whole = try parse(bytes, close: close)
        for split in 1..<bytes.count {
            XCTAssertEqual(try parse(bytes, split: split, close: close), whole, "split at \(split)", file: file, line: line)
        }
        return whole
    }

    func testContentLengthBody() throws {
        let parsed = try parseEverySplit("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n[1,2,3]")
        XCTAssertEqual(parsed.head?.status, 200)
        XCTAssertEqual(parsed.head?.value("content-type"), "application/json", "names match case-insensitively")
        XCTAssertEqual(String(decoding: parsed.body, as: UTF8.self), "[1,2,3]")
        XCTAssertTrue(parsed.ended)
        XCTAssertTrue(parsed.keepAlive, "HTTP/1.1 keeps the connection unless told otherwise")
    }

    func testChunkedBodyWithExtensionsAndTrailers() throws {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nevent\r\n1\r\n:\r\nA\r\n audio\n\nxy\r\n0\r\nX-Trailer: 1\r\n\r\n"
        let parsed = try parseEverySplit(text)
        XCTAssertEqual(String(decoding: parsed.body, as: UTF8.self), "event: audio\n\nxy")
        XCTAssertTrue(parsed.ended)
        XCTAssertTrue(parsed.keepAlive)
        XCTAssertEqual(parsed.consumed, text.utf8.count)
    }

    func testBareLineFeedsAreTolerated() throws {
        let parsed = try parseEverySplit("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n")
        XCTAssertEqual(String(decoding: parsed.body, as: UTF8.self), "abc")
        XCTAssertTrue(parsed.ended)
    }

    func testBodyUntilCloseEndsAtTheCloseAndIsNotKept() throws {
        let text = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\n\n"
        let open = try parse(text)
        XCTAssertFalse(open.ended, "no framing: the body runs until the server closes")
        let parsed = try parseEverySplit(text, close: true)
        XCTAssertEqual(String(decoding: parsed.body, as: UTF8.self), "data: 1\n\n")
        XCTAssertTrue(parsed.ended)
        XCTAssertFalse(parsed.keepAlive)
    }

    func testInterimAnswersAreSkipped() throws {
        let parsed = try parseEverySplit("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}")
        XCTAssertEqual(parsed.head?.status, 201)
        XCTAssertEqual(parsed.body, Array("{}".utf8))
    }

    func testNoBodyFor204AndForHEAD() throws {
        XCTAssertTrue(try parseEverySplit("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n").ended)
        let head = try parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", requestHasBody: false)
        XCTAssertTrue(head.ended)
        XCTAssertEqual(head.body, [])
    }

    func testKeepAliveFollowsVersionAndConnectionField() throws {
        XCTAssertFalse(try parse("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n").keepAlive)
        XCTAssertFalse(try parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").keepAlive)
        XCTAssertTrue(try parse("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n").keepAlive)
        XCTAssertFalse(try parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n").keepAlive,
                       "both framings: chunked wins, the connection is not trusted again")
    }

    func testBytesAfterTheResponseAreLeftUnconsumed() throws {
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let parsed = try parse(response + "HTTP/1.1 200 OK\r\n")
        XCTAssertTrue(parsed.ended)
        XCTAssertEqual(parsed.consumed, response.utf8.count)
    }

    func testRepeatedHeaderFieldsAreJoinedAndFoldedLinesContinue() throws {
        let parsed = try parse("HTTP/1.1 200 OK\r\nVary: a\r\nX-Long: one\r\n  two\r\nvary: b\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(parsed.head?.value("Vary"), "a, b")
        XCTAssertEqual(parsed.head?.value("X-Long"), "one two")
        XCTAssertEqual(parsed.head?.value("Absent"), nil)
    }

    func testMalformedResponsesAreErrors() {
        let bad: [(String, String)] = [
            ("HTTP/2 200 OK\r\n\r\n", "bad status line"),
            ("HTTP/1.1 20 OK\r\n\r\n", "bad status line"),
            ("ICY 200 OK\r\n\r\n", "bad status line"),
            ("HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n", "bad header line"),
            ("HTTP/1.1 200 OK\r\nContent-Length : 3\r\n\r\n", "bad header name"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 3x\r\n\r\n", "bad Content-Length"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "bad Content-Length"),
            ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk-size line"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFF\r\n", "chunk size too large"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", "chunk data not followed by CRLF"),
        ]
        for (text, reason) in bad {
            XCTAssertThrowsError(try parse(text), text) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(text.debugDescription): \(error)")
            }
        }
    }

    func testLimitsStopAHostileServer() {
        let hugeHead = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: HTTPResponseParser.maximumHeadBytes) + "\r\n\r\n"
        XCTAssertThrowsError(try parse(hugeHead)) { XCTAssertTrue("\($0)".contains("response head longer than")) }
        let hugeLine = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + String(repeating: "e", count: 5000)
        XCTAssertThrowsError(try parse(hugeLine)) { XCTAssertTrue("\($0)".contains("chunk-size line longer than")) }
    }

    func testACloseCutsOffAnythingButAnUnframedBody() {
        let cut: [(String, String)] = [
            ("", "without answering"),
            ("HTTP/1.1 200 OK\r\nContent-Le", "in the middle of the response head"),
            ("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "7 bytes before the end of the body"),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "before the last chunk"),
        ]
        for (text, reason) in cut {
            XCTAssertThrowsError(try parse(text, close: true), text) { error in
                XCTAssertTrue("\(error)".contains(reason), "\(text.debugDescription): \(error)")
            }
        }
    }
}

extension HTTPResponseParserTests {
    /// The fuzz target's seeds and kept findings: each parses (or fails) the same whatever
    /// the split, without trapping.
    func testKeptFuzzInputsParseTheSameInEverySplit() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/http-fuzz")
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        XCTAssertGreaterThanOrEqual(files.count, 5)
        var complete = 0
        for url in files {
            let bytes = [UInt8](try Data(contentsOf: url))
            guard (try? parse(bytes, close: true)) != nil else { continue }
            XCTAssertTrue(try parseEverySplit(bytes, close: true).ended, url.lastPathComponent)
            complete += 1
        }
        XCTAssertGreaterThanOrEqual(complete, 5, "the seeds are well-formed responses")
    }
}
