#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A POSIX error number, as a typed error with the C library's text.
public struct Errno: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `EINTR`: a signal interrupted the call.
    public static let interrupted = Errno(rawValue: EINTR)
    /// `EAGAIN`: the call would block.
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    /// A bounded read went past its bound (``SystemCall/readFile(atPath:maximumBytes:)``).
    public static let fileTooLarge = Errno(rawValue: EFBIG)
    /// `ENOENT`: no such file or directory.
    public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// `ENODEV`: no such device.
    public static let noSuchDevice = Errno(rawValue: ENODEV)
    /// `EPIPE`: broken pipe (for PCMs: an underrun or overrun).
    public static let brokenPipe = Errno(rawValue: EPIPE)

    /// The current thread's `errno`.
    public static var current: Errno { Errno(rawValue: errno) }

    /// `strerror` text followed by the symbolic number, e.g. "No such file or directory (errno 2)".
    public var description: String { "\(String(cString: strerror(rawValue))) (errno \(rawValue))" }
}

/// A failed system call on a named thing: what was being done, and the `errno` it failed with.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    public let operation: String
    public let errno: Errno

    public init(_ operation: String, errno: Errno) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "\(operation): \(errno)" }
}

extension Errno {
    /// This error number as the failure of `operation`, e.g. "creating /var/lib/x.tmp".
    public func failure(_ operation: String) -> SystemError { SystemError(operation, errno: self) }
}
