#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An MPEG-4 audio file open for reading: its AAC track (``MPEG4Demuxer``), and its frames
/// read one at a time from the file, so that memory holds the sample table only.
public final class MPEG4AudioFile {
    public let path: String
    public let track: MPEG4AudioTrack
    private let fd: Int32

    /// Opens `path` and reads its box tree. A FIFO, a device or a directory is refused
    /// before anything is read from it.
    public convenience init(path: String) throws(MPEG4Error) {
        let fd: Int32
        switch SystemCall.retryingOnInterrupt({ open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }) {
        case .success(let opened): fd = opened
        case .failure(let errno): throw .io(errno, operation: "opening \(path)")
        }
        try self.init(owning: fd, path: path)
    }

    /// Reads the box tree from `descriptor`, a regular file a caller opened and checked
    /// (the daemon's `play` checks who may read what on the descriptor itself). The file keeps
    /// a duplicate of it; the caller's stays the caller's to close.
    public convenience init(descriptor: Int32, path: String) throws(MPEG4Error) {
        let fd = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard fd >= 0 else { throw .io(Errno.current, operation: "duplicating the descriptor of \(path)") }
        try self.init(owning: fd, path: path)
    }

    /// Takes `fd` (closed here on failure, in `deinit` otherwise), refuses anything but a
    /// regular file, and reads the box tree through it.
    private init(owning fd: Int32, path: String) throws(MPEG4Error) {
        self.path = path
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(fd)
            throw .io(Errno(rawValue: EINVAL), operation: "\(path) is not a regular file")
        }
        let size = Int(status.st_size)
        do {
            track = try MPEG4Demuxer.parse(fileSize: size) { (offset: Int, count: Int) throws(MPEG4Error) -> [UInt8] in
                try Self.read(fd, at: offset, count: min(count, size - offset), path: path)
            }
        } catch {
            Glibc.close(fd)
            throw error
        }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// Frame `index`'s bytes, into `buffer` (resized to the frame, its capacity kept).
    public func readFrame(_ index: Int, into buffer: inout [UInt8]) throws(MPEG4Error) {
        let frame = track.frames[index]
        buffer = try Self.read(fd, at: frame.offset, count: frame.size, path: path, reusing: buffer)
        guard buffer.count == frame.size else { throw .badSampleTable("frame \(index) is cut off by the end of \(path)") }
    }

    private static func read(_ fd: Int32, at offset: Int, count: Int, path: String, reusing: [UInt8] = []) throws(MPEG4Error) -> [UInt8] {
        var bytes = reusing
        bytes.removeAll(keepingCapacity: true)
        guard count > 0 else { return bytes }
        var failure: Errno?
        bytes.append(contentsOf: repeatElement(0, count: count))
        var filled = 0
        bytes.withUnsafeMutableBytes { buffer in
            while filled < count {
                switch SystemCall.retryingOnInterrupt({ pread(fd, buffer.baseAddress! + filled, count - filled, off_t(offset + filled)) }) {
                case .success(0): return
                case .success(let n): filled += n
                case .failure(let errno):
                    failure = errno
                    return
                }
            }
        }
        if let failure { throw .io(failure, operation: "reading \(path)") }
        bytes.removeLast(count - filled)
        return bytes
    }
}
