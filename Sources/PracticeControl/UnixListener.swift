import AudioKernel
internal import CAudioShim
import FoundationEssentials
import Glibc
import PracticeProtocol
import PracticeSupport

/// Why the control socket could not be set up.
public struct ControlSocketError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public var alreadyRunning = false
    public var description: String { message }
}

/// The control socket's listening descriptor: bound to a filesystem path by the daemon, or
/// inherited from systemd (socket activation).
public final class UnixListener: @unchecked Sendable {
    public let fd: Int32
    public let path: String
    /// Whether the daemon created the file (and so removes it on exit); systemd owns an
    /// activated socket's file.
    public let ownsPath: Bool

    private init(fd: Int32, path: String, ownsPath: Bool) {
        self.fd = fd
        self.path = path
        self.ownsPath = ownsPath
    }

    /// The socket systemd passed (`LISTEN_PID` is this process, `LISTEN_FDS` >= 1: fd 3), or
    /// nil. The variables are removed so that children do not inherit them.
    public static func activated(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ControlSocketError) -> UnixListener? {
        guard let pidText = environment["LISTEN_PID"], let pid = Int32(pidText), pid == getpid(),
              let countText = environment["LISTEN_FDS"], let count = Int(countText), count >= 1 else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        let fd: Int32 = 3  // SD_LISTEN_FDS_START
        var type: Int32 = 0
        var listening: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0, type == Int32(SOCK_STREAM.rawValue) else {
            throw ControlSocketError(message: "socket activation: fd 3 is not a stream socket")
        }
        length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening == 1 else {
            throw ControlSocketError(message: "socket activation: fd 3 is not listening")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return UnixListener(fd: fd, path: Self.boundPath(fd) ?? "(activated)", ownsPath: false)
    }

    /// Binds and listens on `path` with mode 0660 (and `group`, when given). A socket file
    /// left by a crashed daemon is replaced; a live daemon on it is an error
    /// (`alreadyRunning`), never hijacked; anything that is not a socket is left alone.
    public static func bind(path: String, group: UInt32?) throws(ControlSocketError) -> UnixListener {
        guard path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else {
            throw ControlSocketError(message: "socket path too long (\(path.utf8.count) bytes): \(path)")
        }
        let directory = FilePaths.parent(of: path)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        } catch {
            throw ControlSocketError(message: "cannot create \(directory): \(error)")
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFSOCK else {
                throw ControlSocketError(message: "\(path) exists and is not a socket; not touching it")
            }
            if Self.isAlive(path) {
                throw ControlSocketError(message: "a daemon is already running on \(path)", alreadyRunning: true)
            }
            unlink(path)  // stale: nobody listens
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw ControlSocketError(message: "socket: \(Errno(rawValue: errno).description)") }
        // Created with no access at all, then opened up to 0660: no window in which another
        // user could connect.
        let oldMask = umask(0o777)
        let bound = withAddress(path) { Glibc.bind(fd, $0, $1) }
        let bindError = errno
        umask(oldMask)
        guard bound == 0 else {
            Glibc.close(fd)
            throw ControlSocketError(message: "bind \(path): \(Errno(rawValue: bindError).description)")
        }
        if let group, chown(path, uid_t.max, group) != 0 {  // uid -1: keep the owner
            let code = errno
            Glibc.close(fd)
            unlink(path)
            throw ControlSocketError(message: "chown \(path) to group \(group): \(Errno(rawValue: code).description)")
        }
        guard chmod(path, 0o660) == 0, listen(fd, 64) == 0 else {
            let code = errno
            Glibc.close(fd)
            unlink(path)
            throw ControlSocketError(message: "listen on \(path): \(Errno(rawValue: code).description)")
        }
        return UnixListener(fd: fd, path: path, ownsPath: true)
    }

    /// Closes the socket and removes its file if the daemon made it.
    public func close() {
        Glibc.close(fd)
        if ownsPath { unlink(path) }
    }

    /// Whether something accepts connections on `path` (a running daemon).
    static func isAlive(_ path: String) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { Glibc.close(probe) }
        return withAddress(path) { connect(probe, $0, $1) } == 0
    }

    /// Calls `body` with a `sockaddr_un` for `path`.
    public static func withAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    private static func boundPath(_ fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard ok == 0 else { return nil }
        return withUnsafeBytes(of: &address.sun_path) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
    }
}

