#if canImport(Glibc)
import Glibc
#endif

/// This start's secret (256 random bits as 64 hex digits): a WebSocket is relayed to the
/// daemon only when it offers `practiced.token.<token>` among its subprotocols. It is read
/// from the launch page (mode 0600, written by the launcher at each start), the one file that
/// holds it, and compared in constant time; nothing offered is ever logged.
public struct BridgeToken: Sendable {
    public static let prefix = "practiced.token."
    private let token: [UInt8]

    public enum Failure: Error, CustomStringConvertible {
        case unreadable(String), notARegularFile(String), noToken(String)
        public var description: String {
            switch self {
            case .unreadable(let path): "cannot read the launch page \(path)"
            case .notARegularFile(let path): "the launch page \(path) is not a regular file of at most 64 KB"
            case .noToken(let path): "no token in the launch page \(path)"
            }
        }
    }

    public init(hex: String) throws(Failure) {
        let bytes = Array(hex.utf8)
        guard bytes.count == 64, bytes.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw .noToken("(given)")
        }
        token = bytes
    }

    /// The token after `#token=` in the launch page's text.
    public init(launchPage text: String, path: String) throws(Failure) {
        guard let range = text.firstRange(of: "#token=") else { throw .noToken(path) }
        let hex = String(text[range.upperBound...].prefix(64))
        do { try self.init(hex: hex) } catch { throw .noToken(path) }
    }

    /// The token in the launch page at `path`: a regular file of at most 64 KB, checked on the
    /// open descriptor before a byte is read (a FIFO would block the start for ever, /dev/zero
    /// never end).
    public init(launchPageAt path: String) throws(Failure) {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= 64 * 1024 else { throw .notARegularFile(path) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n >= 0 else { throw .unreadable(path) }
        try self.init(launchPage: String(decoding: bytes[..<n], as: UTF8.self), path: path)
    }

    /// Exactly one offered subprotocol carries a token, and it is this one.
    public func isAdmitted(offered: [String]) -> Bool {
        let tokens = offered.filter { $0.hasPrefix(Self.prefix) }.map { Array($0.utf8.dropFirst(Self.prefix.utf8.count)) }
        guard tokens.count == 1 else { return false }
        let candidate = tokens[0]
        // Constant time in the token's content: every byte is compared whatever differs first.
        var difference = UInt8(candidate.count == token.count ? 0 : 1)
        for i in 0..<token.count { difference |= token[i] ^ (i < candidate.count ? candidate[i] : 0) }
        return difference == 0
    }
}
