import Glibc

/// What the spools may read: a regular file, sized by `lstat` before a byte of it is read.
/// A FIFO named like a turn would block its reader (and the queue) for ever, a device or
/// a 4 GiB file would fill memory; such a file is set aside, never opened.
enum SpoolFile {
    enum Kind: Equatable {
        case missing
        case notRegular
        case regular(size: Int)
    }

    static func kind(_ path: String) -> Kind {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .missing }
        return info.st_mode & S_IFMT == S_IFREG ? .regular(size: Int(info.st_size)) : .notRegular
    }

    /// The file's size when it is a regular file.
    static func regularSize(_ path: String) -> Int? {
        if case .regular(let size) = kind(path) { return size }
        return nil
    }
}
