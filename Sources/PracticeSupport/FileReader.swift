import AudioKernel
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file's first bytes with plain POSIX calls: regular files, /dev/null and pipes
/// alike (Foundation's FileHandle did this before; the daemon links only
/// FoundationEssentials, which has none). Bounded, so /dev/zero or a pipe that never ends
/// costs at most `limit` bytes.
package enum FileReader {
    /// Up to `limit` bytes from the start of `path` (fewer at its end).
    package static func read(_ path: String, upTo limit: Int) throws(SystemError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw Errno.current.failure("opening \(path)") }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: limit)
        var count = 0
        while count < limit {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, limit - count) }
            if n > 0 { count += n; continue }
            if n == 0 { break }
            if errno == EINTR { continue }
            throw Errno.current.failure("reading \(path)")
        }
        bytes.removeSubrange(count...)
        return bytes
    }
}
