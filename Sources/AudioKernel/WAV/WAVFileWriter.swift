#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a WAV file as samples arrive and fixes its sizes when closed.
///
/// Until ``close()`` the header carries the streaming sizes (0xFFFFFFFF), so a recording cut
/// short by a crash is still a valid file whose data runs to its end; `close` writes the
/// real sizes. One owner at a time: the writer is not shared between threads.
public final class WAVFileWriter {
    /// The format of the file.
    public let format: WAVFormat
    /// The path the file is written at.
    public let path: String
    /// Bytes of samples written so far.
    public private(set) var dataByteCount = 0

    private var fd: Int32

    /// Creates (or truncates) the file at `path` and writes a streaming header.
    ///
    /// - Parameter mode: the file's permission bits.
    public init(path: String, format: WAVFormat = .speech, mode: mode_t = 0o644) throws(WAVError) {
        self.format = format
        self.path = path
        let opened = SystemCall.retryingOnInterrupt { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) }
        switch opened {
        case .success(let d): fd = d
        case .failure(let e): throw .io(e, operation: "creating \(path)")
        }
        let header = WAVEncoder.header(format: format, dataByteCount: nil)
        if case .failure(let e) = header.withUnsafeBytes({ SystemCall.writeAll(fd, $0) }) {
            Glibc.close(fd)
            fd = -1
            throw .io(e, operation: "writing the header of \(path)")
        }
    }

    deinit {
        if fd >= 0 { try? close() }
    }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { fd < 0 }

    /// The duration written so far, in seconds.
    public var duration: Double { format.duration(ofSamples: dataByteCount / 2) }

    /// Appends `samples` to the file.
    public func write(_ samples: UnsafeBufferPointer<Int16>) throws(WAVError) {
        precondition(fd >= 0, "write after close")
        let bytes = samples.count * 2
        guard dataByteCount + bytes <= WAVEncoder.maxDataByteCount else {
            throw .tooLarge(byteCount: dataByteCount + bytes)
        }
        #if _endian(big)
        let swapped = samples.map { $0.littleEndian }
        let r = swapped.withUnsafeBytes { SystemCall.writeAll(fd, $0) }
        #else
        let r = SystemCall.writeAll(fd, UnsafeRawBufferPointer(samples))
        #endif
        if case .failure(let e) = r { throw .io(e, operation: "writing samples to \(path)") }
        dataByteCount += bytes
    }

    /// Appends `samples` to the file.
    public func write(_ samples: [Int16]) throws(WAVError) {
        let r = samples.withUnsafeBufferPointer { buffer in
            Result { () throws(WAVError) in try write(buffer) }
        }
        try r.get()
    }

    /// Writes the final sizes into the header, optionally flushes the file to stable storage,
    /// and closes it. Calling it again does nothing.
    public func close(sync: Bool = false) throws(WAVError) {
        guard fd >= 0 else { return }
        defer {
            Glibc.close(fd)
            fd = -1
        }
        let header = WAVEncoder.header(format: format, dataByteCount: dataByteCount)
        if case .failure(let e) = header.withUnsafeBytes({ SystemCall.writeAll(fd, $0, at: 0) }) {
            throw .io(e, operation: "writing the final header of \(path)")
        }
        if sync, case .failure(let e) = SystemCall.retryingOnInterrupt({ fsync(fd) }) {
            throw .io(e, operation: "syncing \(path)")
        }
    }
}
