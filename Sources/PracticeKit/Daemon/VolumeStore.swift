import AudioKernel
import FoundationEssentials
import Glibc
import PracticeNet
import PracticeSupport

/// The speaker's volume kept across restarts: `volume` in the state directory, one line with
/// the gain, written under a temporary name, synced, then renamed, so a crash or a power cut
/// leaves the old value or the new one, never half of one.
///
/// The level a client set wins over `audio.volume` at start (the kiosk's staff turned it
/// down; a restart must not turn it up again); a reload that changes `audio.volume` applies
/// the new value and keeps it, as a `volume.set` would.
struct VolumeStore {
    let path: String

    init(stateDirectory: String) {
        path = FilePaths.join(stateDirectory, "volume")
    }

    /// The kept level, or nil when none was kept or the file is not a level (logged by the caller).
    func load() -> Double? {
        guard let data = FileManager.default.contents(atPath: path), data.count < 64,
              let text = String(data: data, encoding: .utf8)?.trimmed(),
              let level = Double(text), (0...1).contains(level) else { return nil }
        return level
    }

    /// Keeps `level` durably.
    func save(_ level: Double) throws {
        let directory = FilePaths.parent(of: path)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o750])
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard fd >= 0 else { throw Errno.current.failure("creating \(temporary)") }
        let line = Array("\(level)\n".utf8)
        let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == line.count, synced, rename(temporary, path) == 0 else {
            let failure = Errno.current.failure("writing \(path)")
            unlink(temporary)
            throw failure
        }
        // The rename itself is made durable by syncing the directory.
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
    }
}
