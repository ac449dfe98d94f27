import AudioKernel
import FoundationEssentials
import Glibc
import PracticeSupport

/// The signed-in learner's token pair, kept across restarts in `chatterbox-tokens.json` in
/// the state directory: mode 0600, written whole under a scratch name, synced, renamed, so a
/// power cut leaves the old pair or the new one. Replaced whenever the gateway sends a new
/// pair (`X-New-*`), removed on sign-out or when a refresh is refused.
///
/// Thread-safe. Tokens never leave this type and the client's headers: not in logs, events
/// or `status` (``ChatterboxTokens/description`` is redacted).
public final class ChatterboxTokenStore: @unchecked Sendable {
    /// A pair larger than this in the file is not read back (a token is about 240 bytes).
    static let maximumFileBytes = 64 * 1024
    public let path: String
    private let lock = Lock()
    private var tokens: ChatterboxTokens?
    private let logger: Logger

    /// Reads the kept pair, if any; a file that is not one is logged and ignored.
    public init(stateDirectory: String, logger: Logger = .disabled) {
        path = FilePaths.join(stateDirectory, "chatterbox-tokens.json")
        self.logger = logger
        guard let data = FileManager.default.contents(atPath: path) else { return }
        guard data.count <= Self.maximumFileBytes, let pair = try? JSONDecoder().decode(ChatterboxTokens.self, from: data),
              Self.isUsable(pair) else {
            logger.warning("\(path) holds no token pair; signed out")
            return
        }
        tokens = pair
    }

    public var current: ChatterboxTokens? { lock.withLock { tokens } }

    /// Keeps `pair` (memory at once, disk durably); a pair that cannot be kept on disk is
    /// still used until the daemon stops, and logged.
    public func replace(with pair: ChatterboxTokens) {
        let changed: Bool = lock.withLock {
            defer { tokens = pair }
            return tokens != pair
        }
        guard changed else { return }
        do {
            try FileManager.default.createDirectory(atPath: FilePaths.parent(of: path), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            let bytes = try JSONEncoder().encode(pair)
            if let (errno, operation) = bytes.withUnsafeBytes({ SystemCall.writeFileAtomically($0, to: path, mode: 0o600, sync: true) }) {
                logger.error("signed in, but the tokens cannot be kept for the next start: \(operation): \(errno)")
            }
        } catch {
            logger.error("signed in, but the tokens cannot be kept for the next start: \(error)")
        }
    }

    /// Forgets the pair (sign-out, a refused refresh).
    public func clear() {
        lock.withLock { tokens = nil }
        if unlink(path) != 0 && errno != ENOENT { logger.error("cannot remove \(path): \(Errno.current)") }
    }

    /// A pair the gateway sent: short enough and nothing that could break a header line.
    static func isUsable(_ pair: ChatterboxTokens) -> Bool {
        [pair.accessToken, pair.refreshToken].allSatisfy { token in
            !token.isEmpty && token.utf8.count <= 8 * 1024 && token.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        }
    }
}
