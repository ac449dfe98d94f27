import AudioKernel
import FoundationEssentials
import Glibc
import PracticeProtocol
import PracticeSupport

/// A WAV or MPEG-4 AAC (`.m4a`, `.mp4`) file a client named with `play`, opened the way a
/// daemon that serves untrusted local clients must open it. Which of the two it is comes from
/// its first bytes (an `ftyp` box), not from its name.
///
/// - Never blocks on what it opens: `O_NONBLOCK` (a FIFO without a writer opens at once),
///   then `fstat` on the descriptor: only a regular file is read, never a FIFO, a device
///   (`/dev/zero`), a socket or a directory.
/// - Who may play what (MPD's rule for local clients): a file under one of
///   `play.directories`, or one owned by the connecting peer's uid (`SO_PEERCRED`).
///   Anything else is `permission_denied` with one message that says nothing of the file,
///   not even whether it exists. The checks use the descriptor (its real path from
///   `/proc/self/fd`, its owner from `fstat`), so a symlink or a rename cannot swap files.
/// - Bounded: at most `play.max_bytes`; the samples are read in pieces as the player has
///   room (``read(into:at:)``), so a two-hour file plays in the same memory as a short one.
final class ClipFile {
    /// What the file holds, as read so far.
    enum Content {
        case wav(WAVLayout)
        /// AAC-LC, decoded as it is read.
        case mpeg4(MPEG4AudioDecoder)
    }

    let fd: Int32
    let content: Content
    /// The real path of what was opened.
    let path: String

    static let denied = "not allowed: a client may play files under play.directories, or files it owns"

    /// Opens and checks `path` for the peer `uid`. Runs on the file queue: it may block on
    /// a stalled filesystem, which costs only this request.
    init(path requested: String, peer uid: UInt32, directories: [String], maximumBytes: Int) throws(ControlError) {
        guard requested.hasPrefix("/"), !requested.contains("\0") else { throw ControlError(.badArguments, "'path' must be absolute") }
        let fd = open(requested, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        let allowedDirectories = directories.map(Self.resolved)
        // Whether the name lies in an allowed directory decides how much an error may say.
        let lexicallyAllowed = Self.isInside(requested, allowedDirectories)
        guard fd >= 0 else {
            let code = errno
            throw lexicallyAllowed ? ControlError(.fileError, "\(requested): \(String(cString: strerror(code)))")
                : ControlError(.permissionDenied, Self.denied)
        }
        var keep = false
        defer { if !keep { close(fd) } }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ControlError(.fileError, "\(requested): cannot stat") }
        let real = Self.realPath(of: fd) ?? requested
        let allowed = Self.isInside(real, allowedDirectories) || info.st_uid == uid
        guard allowed else { throw ControlError(.permissionDenied, Self.denied) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw ControlError(.fileError, "\(requested) is not a regular file (a FIFO, device, socket or directory is never read)")
        }
        guard Int(info.st_size) <= maximumBytes else {
            throw ControlError(.fileError, "\(requested) has \(info.st_size) bytes; play.max_bytes allows \(maximumBytes)")
        }
        // Reads block from here on (a regular file); the header is the first 64 KiB at most.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var header = [UInt8](repeating: 0, count: min(65_536, Int(info.st_size)))
        let count = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count >= 0 else { throw ControlError(.fileError, "\(requested): \(String(cString: strerror(errno)))") }
        let size = Int(info.st_size)
        if count >= 8, Array(header[4..<8]) == Array("ftyp".utf8) {
            do throws(MPEG4Error) {
                content = .mpeg4(try MPEG4AudioDecoder(file: try MPEG4AudioFile(descriptor: fd, path: real)))
            } catch {
                throw ControlError(.fileError, "\(requested): \(error)")
            }
        } else {
            let parsed = header.withUnsafeBytes { bytes in
                Result { () throws(WAVError) -> WAVLayout in try WAVDecoder.parse(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), fileSize: size) }
            }
            switch parsed {
            case .success(let layout): content = .wav(layout)
            case .failure(let error): throw ControlError(.fileError, "\(requested): \(error)")
            }
        }
        self.fd = fd
        path = real
        keep = true
    }

    deinit { close(fd) }

    /// The samples' format as they are read: the WAV's own, or PCM16 decoded from AAC.
    var format: WAVFormat {
        switch content {
        case .wav(let layout): return layout.format
        case .mpeg4(let decoder): return WAVFormat(sampleRate: decoder.sampleRate, channels: decoder.channels, sampleFormat: .s16)
        }
    }

    /// Frames the file presents.
    var frameCount: Int {
        switch content {
        case .wav(let layout): return layout.frameCount
        case .mpeg4(let decoder): return decoder.frameCount
        }
    }

    var duration: Double { Double(frameCount) / Double(format.sampleRate) }

    /// Reads up to `buffer.count` bytes of samples from `offset` (bytes into the data) of a WAV.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int, layout: WAVLayout) -> Result<Int, Errno> {
        let wanted = min(buffer.count, layout.dataByteCount - offset)
        guard wanted > 0 else { return .success(0) }
        while true {
            let n = pread(fd, buffer.baseAddress, wanted, off_t(layout.dataOffset + offset))
            if n >= 0 { return .success(n) }
            if errno != EINTR { return .failure(.current) }
        }
    }

    private static func realPath(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A directory with its symlinks resolved (as written when it does not exist).
    static func resolved(_ directory: String) -> String {
        guard let real = realpath(directory, nil) else { return directory }
        defer { free(real) }
        return String(cString: real)
    }

    static func isInside(_ path: String, _ directories: [String]) -> Bool {
        let components = FilePaths.normalized(path)
        return directories.contains { directory in
            let base = directory.hasSuffix("/") ? directory : directory + "/"
            return components.hasPrefix(base)
        }
    }
}
