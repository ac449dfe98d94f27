import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// The learner UI's files, served from one folder: GET and HEAD of a regular file inside it,
/// `/` as `index.html`. A target that leaves the folder (`..`, an encoded one, a symbolic
/// link out of it), names a folder, a device or a FIFO, or holds a NUL is not found; nothing
/// is listed.
public struct StaticFiles: Sendable {
    public let root: String
    /// The largest file served (the UI's largest is a few tens of KB).
    public static let maximumFileBytes = 4 * 1024 * 1024

    static let contentTypes: [String: String] = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "mjs": "text/javascript; charset=utf-8",
        "css": "text/css; charset=utf-8", "svg": "image/svg+xml", "png": "image/png", "json": "application/json",
        "woff2": "font/woff2", "ico": "image/x-icon", "txt": "text/plain; charset=utf-8",
    ]

    /// `root` resolved (symbolic links followed): the folder every served file must be in.
    public struct Missing: Error {}

    public init(root: String) throws(Missing) {
        guard let resolved = realpath(root, nil) else { throw Missing() }
        self.root = String(cString: resolved)
        free(resolved)
    }

    /// The response to a GET or HEAD of `target` (its query ignored): whole, to be written
    /// as it is.
    public func response(method: String, target: String, keepAlive: Bool) -> (status: Int, bytes: [UInt8]) {
        guard method == "GET" || method == "HEAD" else { return (405, HTTPResponse.error(405, allow: "GET, HEAD")) }
        guard let path = resolve(target) else { return (404, HTTPResponse.error(404)) }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard fd >= 0 else { return (404, HTTPResponse.error(404)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return (404, HTTPResponse.error(404)) }
        guard info.st_size <= Self.maximumFileBytes else { return (500, HTTPResponse.error(500)) }
        var body = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < body.count {
            let n = body.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + filled, $0.count - filled, off_t(filled)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return (500, HTTPResponse.error(500)) }
            filled += n
        }
        let type = Self.contentTypes[String(path.split(separator: ".").last ?? "").lowercased()] ?? "application/octet-stream"
        // No caching: a kiosk updated by its package shows the new UI at the next load.
        let head = HTTPResponse.head(200, extra: [
            ("Content-Type", type), ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff"),
            ("Connection", keepAlive ? "keep-alive" : "close"),
        ], length: body.count)
        return (200, method == "HEAD" ? head : head + body)
    }

    /// The file `target` names inside the root, or nil.
    func resolve(_ target: String) -> String? {
        var path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        path = path.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard let decoded = Self.percentDecoded(String(path)), decoded.first == "/", !decoded.contains("\0") else { return nil }
        let parts = decoded.split(separator: "/")
        guard !parts.contains(where: { $0 == ".." || $0 == "." }) else { return nil }
        let relative = parts.isEmpty ? "index.html" : parts.joined(separator: "/")
        let candidate = root + "/" + relative
        // Symbolic links are followed only to places inside the root.
        guard let resolved = realpath(candidate, nil) else { return nil }
        defer { free(resolved) }
        let real = String(cString: resolved)
        guard real.hasPrefix(root + "/") else { return nil }
        return real
    }

    /// `%XX` decoded; nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
