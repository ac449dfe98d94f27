import AudioKernel
import FoundationEssentials
import Glibc

/// The daemon's side of sd_notify(3), written out: datagrams to `$NOTIFY_SOCKET` (a path,
/// or `@name` in the abstract namespace). `READY=1` once serving, `STATUS=…` for
/// `systemctl status`, `WATCHDOG=1` at half of `$WATCHDOG_USEC`, `RELOADING=1` and
/// `STOPPING=1`. Without `NOTIFY_SOCKET` every call does nothing.
public final class SystemdNotifier: @unchecked Sendable {
    private let address: String?
    /// The datagram socket every message goes out on, made once at start: at a low
    /// descriptor limit, clients waiting on an activated socket can take every descriptor
    /// the moment accepting begins, and a socket made per message then failed (EMFILE), so
    /// READY=1 never came (DaemonLifecycleTests, under load) and WATCHDOG=1 would not either.
    private let fd: Int32
    /// How often to send `WATCHDOG=1`, when systemd asked for it (for this process).
    public let watchdogInterval: Double?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        address = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        if let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0,
           environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == getpid() }) ?? true {
            watchdogInterval = Double(usec) / 1e6 / 2
        } else {
            watchdogInterval = nil
        }
        fd = address == nil ? -1 : socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        // Children must not notify in the daemon's name.
        unsetenv("NOTIFY_SOCKET")
        unsetenv("WATCHDOG_USEC")
        unsetenv("WATCHDOG_PID")
    }

    deinit { if fd >= 0 { close(fd) } }

    public var isEnabled: Bool { address != nil }

    public func ready(status: String) { send("READY=1\nSTATUS=\(status)\nMAINPID=\(getpid())") }
    public func status(_ text: String) { send("STATUS=\(text)") }
    public func watchdog() { send("WATCHDOG=1") }
    public func reloading() {
        // systemd 253+ wants the monotonic time with RELOADING=1 (Type=notify-reload).
        send("RELOADING=1\nMONOTONIC_USEC=\(Monotonic.now() / 1_000)")
    }
    public func stopping() { send("STOPPING=1") }

    /// Sends one datagram; failures are ignored (systemd may be gone; the daemon goes on).
    @discardableResult
    public func send(_ message: String) -> Bool {
        guard let address, fd >= 0 else { return false }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        var path = Array(address.utf8)
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: socketAddress.sun_path)
        guard path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: path) }
        // An abstract address's length counts its bytes exactly (no terminating NUL).
        let length = MemoryLayout<sa_family_t>.size + path.count + (abstract ? 0 : 1)
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, socklen_t(length)) }
            }
        }
        return sent == bytes.count
    }
}
