#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The one place that retries a system call interrupted by a signal (`EINTR`); every call
/// site goes through it, so no loop forgets to. Public for PracticeKit and practicectl, whose
/// files (spool, metrics textfile, standard output) are written the same way.
public enum SystemCall {
    /// Calls `body` until it returns something other than -1 with `errno == EINTR`.
    ///
    /// - Returns: the call's non-negative result, or the `errno` it failed with.
    public static func retryingOnInterrupt<T: FixedWidthInteger>(_ body: () -> T) -> Result<T, Errno> {
        while true {
            let result = body()
            if result != -1 { return .success(result) }
            let code = errno
            if code != EINTR { return .failure(Errno(rawValue: code)) }
        }
    }

    /// Writes all of `bytes` to `fd`, continuing after short writes.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Void, Errno> {
        var offset = 0
        while offset < bytes.count {
            switch retryingOnInterrupt({ write(fd, bytes.baseAddress! + offset, bytes.count - offset) }) {
            case .success(let n): offset += n
            case .failure(let e): return .failure(e)
            }
        }
        return .success(())
    }

    /// Writes all of `bytes` to `fd` at `position`, without moving the file offset.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at position: Int) -> Result<Void, Errno> {
        var offset = 0
        while offset < bytes.count {
            let r = retryingOnInterrupt {
                pwrite(fd, bytes.baseAddress! + offset, bytes.count - offset, off_t(position + offset))
            }
            switch r {
            case .success(let n): offset += n
            case .failure(let e): return .failure(e)
            }
        }
        return .success(())
    }

    /// Writes `bytes` to `path` so that `path` never holds a part of them: into
    /// `PATH.partial` (synced to stable storage with `sync`), then renamed. On failure the
    /// scratch file is removed. Returns nil, or the error and the step that failed.
    public static func writeFileAtomically(_ bytes: UnsafeRawBufferPointer, to path: String, mode: mode_t = 0o644,
                                    sync: Bool) -> (Errno, operation: String)? {
        let partial = path + ".partial"
        let fd: Int32
        switch retryingOnInterrupt({ open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) }) {
        case .success(let opened): fd = opened
        case .failure(let errno): return (errno, "creating \(partial)")
        }
        var failure: (Errno, operation: String)?
        if case .failure(let errno) = writeAll(fd, bytes) {
            failure = (errno, "writing \(partial)")
        } else if sync && fsync(fd) != 0 {
            failure = (Errno.current, "syncing \(partial)")
        }
        close(fd)
        if failure == nil && rename(partial, path) != 0 { failure = (Errno.current, "renaming \(partial)") }
        if failure != nil { unlink(partial) }
        return failure
    }

    /// Reads a whole file into memory: at most `maximumBytes`, past which it fails with
    /// EFBIG (a device such as `/dev/zero`, or a stream that never ends, would otherwise be
    /// read until memory runs out).
    public static func readFile(atPath path: String, maximumBytes: Int = .max) -> Result<[UInt8], Errno> {
        let fd: Int32
        switch retryingOnInterrupt({ open(path, O_RDONLY | O_CLOEXEC) }) {
        case .success(let d): fd = d
        case .failure(let e): return .failure(e)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let r = chunk.withUnsafeMutableBytes { buffer in
                retryingOnInterrupt { read(fd, buffer.baseAddress!, buffer.count) }
            }
            switch r {
            case .success(0): return .success(bytes)
            case .success(let n):
                guard n <= maximumBytes - bytes.count else { return .failure(.fileTooLarge) }
                bytes.append(contentsOf: chunk[0..<n])
            case .failure(let e): return .failure(e)
            }
        }
    }
}
