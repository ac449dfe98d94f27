import Foundation

/// A stand-in for systemd's notification socket: a datagram socket at a path; the daemon
/// under test gets it as `NOTIFY_SOCKET` and its messages are read with a deadline.
public final class NotifyListener {
    public let path: String
    private let fd: Int32

    public init(path: String) throws {
        self.path = path
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, bound == 0 else { throw SpawnError(executable: "notify socket \(path)", code: errno) }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next message, waiting at most `timeout` seconds (poll(2)); nil at the deadline.
    public func next(timeout: Double) -> String? {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(timeout * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }

    /// Messages until one contains `text`; all of them, or nil at the deadline.
    public func wait(for text: String, timeout: Double) -> [String]? {
        let deadline = Date().addingTimeInterval(timeout)
        var seen: [String] = []
        while let message = next(timeout: max(0, deadline.timeIntervalSinceNow)) {
            seen.append(message)
            if message.contains(text) { return seen }
        }
        return nil
    }
}
