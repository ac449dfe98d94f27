import AudioKernel
import FoundationEssentials
import Glibc
import PracticeNet
import PracticeSupport

/// `<state>/visit`: the id of the visit under way, so that a daemon stopped or crashed
/// mid-visit ends it at its next start instead of handing its learner to the next person.
/// It holds the visit's random id only, never the learner's.
struct VisitMarker: Sendable {
    let path: String
    private let logger: Logger

    init(stateDirectory: String, logger: Logger) {
        path = FilePaths.join(stateDirectory, "visit")
        self.logger = logger
    }

    /// The id an earlier run left, if any (an unreadable marker counts as a visit: its
    /// learner is forgotten all the same).
    func leftover() -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        // Read only a regular file: a FIFO put there would hold the start in open() for ever,
        // a link could point at /dev/zero. Anything else counts as a visit, and is removed.
        guard info.st_mode & S_IFMT == S_IFREG else { return "(not a regular file)" }
        guard let bytes = try? FileReader.read(path, upTo: 64), let text = String(validating: bytes, as: UTF8.self)?.trimmed(), !text.isEmpty else {
            return "(unreadable)"
        }
        return text
    }

    /// Synced before the visit goes on: a power cut mid-visit must leave it to be ended.
    func write(_ id: String) {
        try? FileManager.default.createDirectory(atPath: FilePaths.parent(of: path), withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o750])
        let bytes = Array((id + "\n").utf8)
        if let (errno, operation) = bytes.withUnsafeBytes({ SystemCall.writeFileAtomically($0, to: path, mode: 0o600, sync: true) }) {
            // The visit goes on; only a crash mid-visit would leave its learner to the next start.
            logger.warning("cannot keep the visit's marker \(path) (\(operation): \(errno)); a restart mid-visit would not end it")
        }
    }

    func clear() {
        if unlink(path) != 0 && errno != ENOENT { logger.error("cannot remove \(path): \(Errno.current)") }
    }
}
