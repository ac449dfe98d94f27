import Foundation
import KioskBridge
import TestSupport
import XCTest

/// The shipped bridge (practiced-kiosk-bridge, release build) as the launcher starts it, in a
/// folder of its own: a small web root (with a symbolic link pointing out of it), a launch
/// page holding a token, and a stand-in for the daemon's socket (Python: it echoes what it
/// reads; `bye` makes it hang up, `flood` makes it write without end).
final class BridgeRig {
    let directory: URL
    let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    let bridge: ChildProcess
    private let daemon: ChildProcess
    let port: UInt16
    var logPath: String { directory.appendingPathComponent("bridge.log").path }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    var base: URL { URL(string: "http://127.0.0.1:\(port)")! }

    static let echo = """
    import socket, sys, threading
    server = socket.socket(socket.AF_UNIX)
    server.bind(sys.argv[1])
    server.listen(64)
    def serve(connection):
        while True:
            data = connection.recv(65536)
            if not data:
                return
            if data.startswith(b'bye'):
                connection.close()
                return
            if data.startswith(b'flood'):
                try:
                    while True:
                        connection.sendall(b'x' * 65536)
                except OSError:
                    return
            connection.sendall(data)
    while True:
        connection, _ = server.accept()
        threading.Thread(target=serve, args=(connection,), daemon=True).start()
    """

    init(arguments: [String] = []) throws {
        directory = try makeTemporaryDirectory()
        let web = directory.appendingPathComponent("web")
        try FileManager.default.createDirectory(at: web.appendingPathComponent("js"), withIntermediateDirectories: true)
        try Data("<!doctype html><title>kiosk</title><script type=module src=js/app.js></script>\n".utf8).write(to: web.appendingPathComponent("index.html"))
        try Data("export const kiosk = 1;\n".utf8).write(to: web.appendingPathComponent("js/app.js"))
        try Data("not for the web\n".utf8).write(to: directory.appendingPathComponent("secret.txt"))
        try FileManager.default.createSymbolicLink(atPath: web.appendingPathComponent("escape.txt").path, withDestinationPath: "../secret.txt")
        // Files that are not files: a FIFO (opening it for reading would wait for a writer) and
        // /dev/zero behind a name of the folder's own.
        guard mkfifo(web.appendingPathComponent("fifo.html").path, 0o644) == 0 else { throw Failure(description: "mkfifo: \(errno)") }
        try FileManager.default.createSymbolicLink(atPath: web.appendingPathComponent("zero.js").path, withDestinationPath: "/dev/zero")
        let launch = directory.appendingPathComponent("launch.html")
        try Data("<script>location.replace(\"http://127.0.0.1:0/index.html#token=\(token)\")</script>\n".utf8).write(to: launch)
        let socketPath = directory.appendingPathComponent("control.sock").path
        let script = directory.appendingPathComponent("echo.py")
        try Data(Self.echo.utf8).write(to: script)
        daemon = try ChildProcess(executable: "/usr/bin/python3", arguments: [script.path, socketPath], environment: ["PATH": "/usr/bin:/bin"],
                                  stderrPath: directory.appendingPathComponent("echo.log").path)
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socketPath) {
            guard Date() < deadline else { throw Failure(description: "the echo socket never appeared") }
            usleep(10_000)  // polling a path: no event to wait on, bounded by the deadline
        }
        bridge = try ChildProcess(executable: ShippedBinaries.path(of: "practiced-kiosk-bridge"),
                                  arguments: ["--web", web.path, "--unix-target", socketPath, "--token-file", launch.path,
                                              "--listen", "127.0.0.1:0"] + arguments,
                                  environment: [:], stderrPath: directory.appendingPathComponent("bridge.log").path)
        var found: UInt16?
        while found == nil {
            guard Date() < deadline, bridge.isRunning else { throw Failure(description: "the bridge did not start: \((try? String(contentsOfFile: directory.appendingPathComponent("bridge.log").path, encoding: .utf8)) ?? "")") }
            found = ((try? String(contentsOfFile: directory.appendingPathComponent("bridge.log").path, encoding: .utf8)) ?? "")
                .firstMatch(of: /listening on 127\.0\.0\.1:([0-9]+)/).flatMap { UInt16($0.1) }
            if found == nil { usleep(10_000) }
        }
        port = found!
    }

    deinit {
        bridge.terminate(signal: SIGTERM)
        daemon.terminate(signal: SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// The handshake's headers, with `protocols` offered.
    func upgradeHeaders(protocols: String) -> [(String, String)] {
        [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
         ("Sec-WebSocket-Version", "13"), ("Sec-WebSocket-Protocol", protocols)]
    }

    /// A raw TCP connection that has opened the WebSocket with the token.
    func openWebSocket() throws -> RawSocket {
        let socket = try RawSocket(port: port)
        var request = "GET /websockify HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in upgradeHeaders(protocols: "binary, \(BridgeToken.prefix)\(token)") { request += "\(name): \(value)\r\n" }
        try socket.send(Array((request + "\r\n").utf8))
        let head = try socket.receive(until: { String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") })
        let text = String(decoding: head, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 101"), text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") else {
            throw Failure(description: "no upgrade: \(text)")
        }
        socket.pending = Array(head[(head.firstRange(of: Array("\r\n\r\n".utf8))!.upperBound)...])
        return socket
    }

    /// The bridge's resident memory (kB) and its threads and children.
    var process: (rssKB: Int, threads: Int, children: Int) {
        let status = (try? String(contentsOfFile: "/proc/\(bridge.pid)/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first?.trimmingCharacters(in: .whitespaces) ?? "") } ?? -1
        }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(bridge.pid)/task")) ?? []
        let children = tasks.reduce(0) { count, task in
            count + ((try? String(contentsOfFile: "/proc/\(bridge.pid)/task/\(task)/children", encoding: .utf8)) ?? "").split(separator: " ").count
        }
        return (field("VmRSS"), tasks.count, children)
    }
}

/// A blocking TCP client with deadlines, for bytes no library would send.
final class RawSocket {
    let fd: Int32
    var pending: [UInt8] = []

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw BridgeRig.Failure(description: "connect: \(errno)") }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw BridgeRig.Failure(description: "send: \(errno)") }
            offset += n
        }
    }

    /// Reads until `done` holds for what has come (or the peer closes, or 10 s pass).
    func receive(until done: ([UInt8]) -> Bool, timeout: Double = 10) throws -> [UInt8] {
        var bytes = pending
        pending = []
        let deadline = Date().addingTimeInterval(timeout)
        while !done(bytes) {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw BridgeRig.Failure(description: "nothing more in \(timeout) s after \(bytes.count) bytes") }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(remaining * 1000) + 1) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { isClosed = true; return bytes }
            bytes += buffer[..<n]
        }
        return bytes
    }

    /// Whether the peer closed the connection (seen by ``receive(until:timeout:)``).
    private(set) var isClosed = false

    /// The status code of the close frame the bridge sent, reading to the connection's end.
    func closeCode() throws -> UInt16? {
        let bytes = try receive(until: { _ in false }, timeout: 10)
        guard let start = bytes.firstIndex(of: 0x88), bytes.count >= start + 4 else { return nil }
        return UInt16(bytes[start + 2]) << 8 | UInt16(bytes[start + 3])
    }
}
