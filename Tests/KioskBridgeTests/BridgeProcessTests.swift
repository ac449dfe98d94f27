import Foundation
import KioskBridge
import TestSupport
import XCTest

/// The shipped bridge as a process, over real TCP and a real Unix socket: a WebSocket client
/// the project did not write (PyPI's websockets), hostile frames and requests byte by byte,
/// and what it costs with a browser's idle connections open.
final class BridgeProcessTests: XCTestCase {
    static let python = "/opt/practiced-ci/websockets/bin/python3"

    /// websockets 15 (PyPI) through the bridge to the socket and back: the subprotocol, a
    /// line, a 200 KB message in 4 KB fragments, a ping, and a clean close.
    func testAPythonWebSocketClientTalksThroughTheBridge() throws {
        let rig = try BridgeRig()
        let script = """
        import json, sys
        from websockets.sync.client import connect
        url, token = sys.argv[1], sys.argv[2]
        out = {}
        with connect(url, subprotocols=["binary", "practiced.token." + token], max_size=None) as ws:
            out["subprotocol"] = ws.subprotocol
            ws.send(b'{"type":"hello"}\\n')
            out["line"] = ws.recv(timeout=10).decode()
            big = bytes(range(256)) * 800
            ws.send([big[i:i + 4096] for i in range(0, len(big), 4096)])
            got = b""
            while len(got) < len(big):
                got += ws.recv(timeout=10)
            out["big"] = got == big
            out["pong"] = ws.ping(b"are you there").wait(10)
            ws.close()
            out["close"] = ws.protocol.close_rcvd.code if ws.protocol.close_rcvd else None
        print(json.dumps(out))
        """
        let output = try runTool(Self.python, ["-c", script, "ws://127.0.0.1:\(rig.port)/websockify", rig.token], timeout: 60)
        let result = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], output)
        XCTAssertEqual(result["subprotocol"] as? String, "binary")
        XCTAssertEqual(result["line"] as? String, "{\"type\":\"hello\"}\n")
        XCTAssertEqual(result["big"] as? Bool, true, "200 KB in fragments, echoed whole")
        XCTAssertEqual(result["pong"] as? Bool, true, "the ping was answered")
        XCTAssertEqual(result["close"] as? Int, 1000, "the close was echoed")
        XCTAssertFalse(rig.log.contains(rig.token), "the bridge logged the token")
    }

    /// Each broken rule gets its close code and the end of the connection; a WebSocket opened
    /// before them keeps working all along.
    func testHostileFramesAreClosedWithTheirCodeAndOthersGoOn() throws {
        let rig = try BridgeRig()
        let good = try rig.openWebSocket()
        let frame = WebSocketSessionTests.frame
        let cases: [(String, [UInt8], UInt16)] = [
            ("unmasked", frame(2, Array("x\n".utf8), true, false, 0, [0, 0, 0, 0]), 1002),
            ("text that is not UTF-8", frame(1, [0xC3, 0x28], true, true, 0, [1, 2, 3, 4]), 1007),
            ("a 4 GiB frame, announced", [0x82, 0xFF, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4], 1009),
            ("reserved opcode 5", frame(5, [], true, true, 0, [1, 2, 3, 4]), 1002),
            ("a fragmented ping", frame(9, [], false, true, 0, [1, 2, 3, 4]), 1002),
        ]
        for (name, bytes, code) in cases {
            let hostile = try rig.openWebSocket()
            try hostile.send(bytes)
            XCTAssertEqual(try hostile.closeCode(), code, name)
            XCTAssertTrue(hostile.isClosed, "\(name): the connection ended")
            try good.send(frame(2, Array("still here \(name)\n".utf8), true, true, 0, [9, 8, 7, 6]))
            let echoed = try good.receive(until: { String(decoding: $0, as: UTF8.self).contains("still here \(name)") })
            XCTAssertTrue(String(decoding: echoed, as: UTF8.self).contains("still here \(name)"), name)
        }
        XCTAssertTrue(rig.bridge.isRunning)
    }

    /// The files to anyone, and nothing outside them; what is not a GET of a file, or not
    /// the token's WebSocket, is refused with its status and a line in the log.
    func testFilesAreServedAndEverythingElseIsRefused() throws {
        let rig = try BridgeRig()
        let index = try RawHTTP.exchange(rig.base, "GET", "/")
        XCTAssertEqual(index.status, 200)
        XCTAssertEqual(index.header("Content-Type"), "text/html; charset=utf-8")
        XCTAssertTrue(String(decoding: index.body, as: UTF8.self).contains("js/app.js"))
        XCTAssertEqual(try RawHTTP.exchange(rig.base, "GET", "/js/app.js").header("Content-Type"), "text/javascript; charset=utf-8",
                       "a module script needs a JavaScript type")
        let head = try RawHTTP.exchange(rig.base, "HEAD", "/index.html", until: { _ in true })
        XCTAssertEqual(head.status, 200)
        for path in ["/../secret.txt", "/%2e%2e/secret.txt", "/js/%2E%2E/%2E%2E/secret.txt", "/escape.txt", "/js", "/nothing.html",
                     "/index.html%00.js", "/%ZZ", "/%C3%28", "/fifo.html", "/zero.js"] {
            XCTAssertEqual(try RawHTTP.exchange(rig.base, "GET", path).status, 404, path)
        }
        XCTAssertEqual(try RawHTTP.exchange(rig.base, "POST", "/index.html", contentType: "text/plain", body: Array("x".utf8)).status, 413)
        XCTAssertEqual(try RawHTTP.exchange(rig.base, "DELETE", "/index.html").status, 405)
        XCTAssertEqual(try RawHTTP.exchange(rig.base, "GET", "/", headers: [("X-Filler", String(repeating: "a", count: 20_000))]).status, 431)
        let refusals: [(String, String, Int)] = [
            ("/websockify", "binary", 403), ("/websockify", "binary, practiced.token.\(rig.token.uppercased())", 403),
            ("/websockify?token=\(rig.token)", "binary", 403), ("/other", "binary, practiced.token.\(rig.token)", 404),
            ("/websockify", "practiced.token.\(rig.token)", 400),
        ]
        for (path, protocols, status) in refusals {
            XCTAssertEqual(try RawHTTP.exchange(rig.base, "GET", path, headers: rig.upgradeHeaders(protocols: protocols)).status, status, "\(path) \(protocols)")
        }
        var old = rig.upgradeHeaders(protocols: "binary, practiced.token.\(rig.token)")
        old[3] = ("Sec-WebSocket-Version", "8")
        XCTAssertEqual(try RawHTTP.exchange(rig.base, "GET", "/websockify", headers: old).status, 426)
        XCTAssertTrue(rig.log.contains("without this start's token"), rig.log)
        XCTAssertFalse(rig.log.contains(rig.token), "the bridge logged the token")
    }

    /// A browser's idle keep-alive connections cost the bridge a few KB each: one process, no
    /// child, a few MB in all; past its limit a connection is told 503 at once.
    func testOneProcessWithABrowsersIdleConnectionsAndALimit() throws {
        let rig = try BridgeRig(arguments: ["--max-connections", "8"])
        var idle: [RawSocket] = []
        for _ in 0..<8 {
            let socket = try RawSocket(port: rig.port)
            try socket.send(Array("GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
            _ = try socket.receive(until: { String(decoding: $0, as: UTF8.self).contains("</script>") })
            idle.append(socket)
        }
        let extra = try RawSocket(port: rig.port)
        let refused = try extra.receive(until: { _ in false })
        XCTAssertTrue(String(decoding: refused, as: UTF8.self).hasPrefix("HTTP/1.1 503"), String(decoding: refused, as: UTF8.self))
        let process = rig.process
        XCTAssertEqual(process.children, 0, "no process per connection")
        XCTAssertLessThan(process.rssKB, 12_000, "resident memory with 8 connections open")
        XCTAssertTrue(rig.log.contains("8 connections already open"), rig.log)
        idle.removeAll()
    }

    /// The daemon hanging up (it restarted) closes the page's WebSocket with 1001, "going
    /// away", so that the page reconnects.
    func testADaemonThatHangsUpClosesTheWebSocketWith1001() throws {
        let rig = try BridgeRig()
        let socket = try rig.openWebSocket()
        try socket.send(WebSocketSessionTests.frame(2, Array("bye\n".utf8)))
        XCTAssertEqual(try socket.closeCode(), 1001)
    }

    /// A page that stops reading while its daemon writes without end: the bridge holds at
    /// most its output limit for it and stops reading that socket; another page is served
    /// all the while.
    func testAPageThatStopsReadingHoldsBackOnlyItself() throws {
        let rig = try BridgeRig()
        let stuck = try rig.openWebSocket()
        try stuck.send(WebSocketSessionTests.frame(2, Array("flood\n".utf8)))
        let other = try rig.openWebSocket()
        for round in 0..<20 {
            try other.send(WebSocketSessionTests.frame(2, Array("round \(round)\n".utf8)))
            _ = try other.receive(until: { String(decoding: $0, as: UTF8.self).contains("round \(round)") })
        }
        XCTAssertLessThan(rig.process.rssKB, 20_000, "the bridge's memory with a stuck page and a flooding daemon")
        _ = stuck
    }

    /// SIGTERM (the unit's stop) ends it cleanly with its WebSockets open: status 0, said in
    /// the log. (Its handler once belonged to the main actor, whose thread waits in poll(2),
    /// and trapped: status 132.)
    func testSIGTERMEndsItCleanly() throws {
        let rig = try BridgeRig()
        let open = try rig.openWebSocket()
        XCTAssertEqual(rig.bridge.terminate(signal: SIGTERM, grace: 10), 0, rig.log)
        XCTAssertTrue(rig.log.contains("stopping: closing 1 connections"), rig.log)
        _ = open
    }

    /// A launch page that is a FIFO (reading it would wait for a writer) or /dev/zero (it never
    /// ends) is refused at once, by what it is, checked on the open descriptor before a byte is
    /// read. (Before, both were "cannot read the launch page", which did not say why.)
    func testALaunchPageThatIsNotAFileIsRefusedAtOnce() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("launch.html").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        for page in [fifo, "/dev/zero"] {
            let log = directory.appendingPathComponent("bridge.log").path
            let bridge = try ChildProcess(executable: ShippedBinaries.path(of: "practiced-kiosk-bridge"),
                                          arguments: ["--web", directory.path, "--unix-target", "/nonexistent.sock", "--token-file", page,
                                                      "--listen", "127.0.0.1:0"], environment: [:], stderrPath: log)
            XCTAssertEqual(bridge.waitForExit(timeout: 10), 66, "\(page): not refused in 10 s")
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            XCTAssertTrue(said.contains("\(page) is not a regular file"), said)
            try? FileManager.default.removeItem(atPath: log)
        }
    }
}
