import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Certificates for TLS tests, made by Debian's `openssl` command: a CA, a server
/// certificate it signs for `localhost` and 127.0.0.1, one it signs for another host, and
/// one signed by nobody the client trusts.
public final class TestCertificates: @unchecked Sendable {
    public let directory: URL
    public var caFile: String { path("ca.pem") }

    public enum Server: String, Sendable {
        /// Signed by the test CA, for `localhost` and 127.0.0.1.
        case good
        /// Signed by the test CA, for `backend.other.example` only.
        case wrongHost = "wrong-host"
        /// For `localhost` and 127.0.0.1, self-signed: no CA vouches for it.
        case untrusted
    }

    public init() throws {
        directory = try makeTemporaryDirectory()
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try runTool("openssl", ["req", "-x509"] + ec + ["-keyout", path("ca.key"), "-out", caFile, "-days", "2",
                                                          "-subj", "/CN=practiced test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                                                          "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try sign(.good, names: "DNS:localhost,IP:127.0.0.1")
        try sign(.wrongHost, names: "DNS:backend.other.example")
        try runTool("openssl", ["req", "-x509"] + ec + ["-keyout", path("untrusted.key"), "-out", path("untrusted.pem"), "-days", "2",
                                                          "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
    }

    private func sign(_ server: Server, names: String) throws {
        let name = server.rawValue
        try runTool("openssl", ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", path("\(name).key"),
                                "-out", path("\(name).csr"), "-subj", "/CN=\(name)"])
        try "subjectAltName=\(names)\nextendedKeyUsage=serverAuth\n".write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
        try runTool("openssl", ["x509", "-req", "-in", path("\(name).csr"), "-CA", caFile, "-CAkey", path("ca.key"), "-CAcreateserial",
                                "-days", "2", "-extfile", path("\(name).ext"), "-out", path("\(name).pem")])
    }

    public func certificate(_ server: Server) -> (cert: String, key: String) { (path("\(server.rawValue).pem"), path("\(server.rawValue).key")) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: directory) }
}

/// Debian's `stunnel4` terminating TLS on a loopback port in front of a plain HTTP server
/// (practice-sim), as a TLS-terminating proxy fronts TalkCo's backend.
public final class TLSTunnel: @unchecked Sendable {
    public let port: UInt16
    private let process: ChildProcess
    private let directory: URL

    public init(to targetPort: UInt16, certificates: TestCertificates, serving server: TestCertificates.Server = .good) throws {
        directory = try makeTemporaryDirectory()
        port = try Self.freePort()
        let (cert, key) = certificates.certificate(server)
        let configuration = """
            foreground = yes
            pid =
            output = \(directory.appendingPathComponent("stunnel.log").path)
            debug = 4
            [backend]
            accept = 127.0.0.1:\(port)
            connect = 127.0.0.1:\(targetPort)
            cert = \(cert)
            key = \(key)
            """
        let file = directory.appendingPathComponent("stunnel.conf").path
        try configuration.write(toFile: file, atomically: true, encoding: .utf8)
        process = try ChildProcess(executable: "/usr/bin/stunnel4", arguments: [file], environment: ProcessInfo.processInfo.environment)
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(port) {
            guard process.isRunning, Date() < deadline else {
                throw ToolError(command: "stunnel4 \(file)", status: -1, stderr: (try? String(contentsOfFile: directory.appendingPathComponent("stunnel.log").path, encoding: .utf8)) ?? "")
            }
            usleep(20_000)  // polling the tunnel's readiness, bounded by the deadline above
        }
    }

    /// `https://host:port` of the tunnel.
    public func url(host: String = "127.0.0.1") -> URL { URL(string: "https://\(host):\(port)")! }

    deinit {
        // SIGKILL: stunnel waits on its connections' threads after a SIGTERM.
        process.terminate(signal: SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }

    /// A port nothing listens on now (bound to port 0, read back, closed).
    static func freePort() throws -> UInt16 {
        let (fd, port) = try LoopbackSocket.bound()
        close(fd)
        return port
    }

    static func accepts(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
