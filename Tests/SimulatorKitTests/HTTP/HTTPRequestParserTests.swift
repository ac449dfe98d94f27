import SimulatorKit
import XCTest

final class HTTPRequestParserTests: XCTestCase {
    /// Parses `input` whole, one byte at a time, and split in two at every position.
    func assertParses(_ input: String, _ expected: [HTTPRequest], file: StaticString = #filePath, line: UInt = #line) throws {
        let bytes = Array(input.utf8)
        var whole = HTTPRequestParser()
        XCTAssertEqual(try whole.feed(bytes), expected, "whole", file: file, line: line)
        var bytewise = HTTPRequestParser()
        var got: [HTTPRequest] = []
        for b in bytes { got += try bytewise.feed([b]) }
        XCTAssertEqual(got, expected, "byte by byte", file: file, line: line)
        for split in 0...bytes.count {
            var parser = HTTPRequestParser()
            let requests = try parser.feed(Array(bytes[..<split])) + parser.feed(Array(bytes[split...]))
            XCTAssertEqual(requests, expected, "split at \(split)", file: file, line: line)
        }
    }

    func assertRefused(_ input: String, status: Int, file: StaticString = #filePath, line: UInt = #line) {
        var parser = HTTPRequestParser()
        parser.maximumHeaderBytes = 256
        parser.maximumBodyBytes = 64
        XCTAssertThrowsError(try parser.feed(Array(input.utf8)), file: file, line: line) { error in
            XCTAssertEqual((error as? HTTPParseError)?.status, status, "\(error)", file: file, line: line)
        }
        // The parser stays failed: the connection is answered and closed.
        XCTAssertThrowsError(try parser.feed(Array("GET / HTTP/1.1\r\n\r\n".utf8)), file: file, line: line)
    }

    func testPipelinedRequestsWithContentLengthAndNoBody() throws {
        let json = "{\"user_id\":\"1\"}"
        try assertParses("POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)GET /topics HTTP/1.1\r\nHost: x\r\n\r\n", [
            HTTPRequest(method: "POST", target: "/sessions", headers: [("Host", "x"), ("Content-Length", "\(json.utf8.count)")], body: Array(json.utf8)),
            HTTPRequest(method: "GET", target: "/topics", headers: [("Host", "x")]),
        ])
    }

    func testChunkedBodyWithExtensionsAndTrailers() throws {
        try assertParses("POST /sessions/1/chat HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: y\r\n\r\n", [
            HTTPRequest(method: "POST", target: "/sessions/1/chat", headers: [("Transfer-Encoding", "chunked")], body: Array("hello world".utf8)),
        ])
    }

    func testBareLFLineEndsAndKeepAliveRules() throws {
        var parser = HTTPRequestParser()
        let requests = try parser.feed(Array("GET /a HTTP/1.1\nConnection: close\n\nGET /b HTTP/1.0\n\nGET /c HTTP/1.0\nConnection: keep-alive\n\n".utf8))
        XCTAssertEqual(requests.map(\.target), ["/a", "/b", "/c"])
        XCTAssertEqual(requests.map(\.keepAlive), [false, false, true])
        XCTAssertTrue(HTTPRequest(method: "GET", target: "/").keepAlive)
    }

    func testBadRequestsAreRefusedWithTheRightStatus() {
        assertRefused("GARBAGE\r\n\r\n", status: 400)
        assertRefused("get / HTTP/1.1\r\n\r\n", status: 400)
        assertRefused("GET / HTTP/2.0\r\n\r\n", status: 505)
        assertRefused("GET / HTTP/1.1\r\nNo colon here\r\n\r\n", status: 400)
        assertRefused("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", status: 400)
        assertRefused("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", status: 400)
        assertRefused("POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n", status: 413)
        assertRefused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n", status: 413)
        assertRefused("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501)
        assertRefused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", status: 400)
        assertRefused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", status: 400)
        assertRefused("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 300) + "\r\n\r\n", status: 431)
    }
}
