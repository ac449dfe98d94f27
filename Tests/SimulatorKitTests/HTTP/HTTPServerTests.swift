import Foundation
import SimulatorKit
import XCTest

/// The simulator's HTTP server over a raw TCP socket: what URLSession never sends
/// (pipelining, chunked uploads, oversize and malformed requests) and keep-alive.
final class HTTPServerTests: XCTestCase {
    private var server: HTTPServer!

    override func setUpWithError() throws {
        server = HTTPServer { request, writer in
            switch request.target {
            case "/stream":
                writer.beginChunked(contentType: "text/event-stream")
                writer.writeChunk(Array("event: a\ndata: 1\n\n".utf8))
                writer.writeChunk(Array("event: b\ndata: 2\n\n".utf8))
                writer.endChunked()
            case "/drop":
                writer.beginChunked(contentType: "text/event-stream")
                writer.writeChunk(Array("event: a\n".utf8))
                writer.dropConnection()
            default:
                writer.respond(status: 200, contentType: "text/plain", body: Array("\(request.method) \(request.target) \(request.body.count)".utf8))
            }
        }
        server.maximumBodyBytes = 1_000
        try server.start()
    }

    override func tearDown() { server.stop() }

    /// Sends `bytes`, then reads until the server closes or `until` appears.
    private func exchange(_ bytes: String, until marker: String? = nil) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = server.port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(connected, 0)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)  // a hung server fails the test, not the run
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = Array(bytes.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let marker, String(decoding: received, as: UTF8.self).contains(marker) { break }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        return String(decoding: received, as: UTF8.self)
    }

    func testPipelinedRequestsAreAnsweredInOrderOnOneConnection() throws {
        let reply = try exchange("GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /c HTTP/1.1\r\nConnection: close\r\n\r\n")
        let bodies = ["GET /a 0", "POST /b 3", "GET /c 0"]
        var position = reply.startIndex
        for body in bodies {
            let found = try XCTUnwrap(reply.range(of: body, range: position..<reply.endIndex), "\(body) in \(reply)")
            position = found.upperBound
        }
        XCTAssertTrue(reply.contains("connection: close"))
    }

    func testChunkedRequestBodyIsJoined() throws {
        let reply = try exchange("POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n")
        XCTAssertTrue(reply.hasPrefix("HTTP/1.1 200 OK\r\n"), reply)
        XCTAssertTrue(reply.hasSuffix("POST /up 7"), reply)
    }

    func testOversizeBodyIs413AndMalformedRequestIs400() throws {
        let big = try exchange("POST /x HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + String(repeating: "a", count: 5000))
        XCTAssertTrue(big.hasPrefix("HTTP/1.1 413 "), big)
        let bad = try exchange("NOT HTTP AT ALL\r\n\r\n")
        XCTAssertTrue(bad.hasPrefix("HTTP/1.1 400 "), bad)
    }

    func testChunkedResponseIsFramedAndTerminated() throws {
        let reply = try exchange("GET /stream HTTP/1.1\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(reply.contains("transfer-encoding: chunked"))
        XCTAssertTrue(reply.contains("12\r\nevent: a\ndata: 1\n\n\r\n"), reply.debugDescription)
        XCTAssertTrue(reply.hasSuffix("0\r\n\r\n"))
    }

    func testDroppedConnectionEndsWithoutTheLastChunk() throws {
        let reply = try exchange("GET /drop HTTP/1.1\r\n\r\n")
        XCTAssertTrue(reply.contains("event: a"))
        XCTAssertFalse(reply.hasSuffix("0\r\n\r\n"))
    }
}
