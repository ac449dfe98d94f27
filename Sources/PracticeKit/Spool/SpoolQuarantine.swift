import AudioKernel
import FoundationEssentials
import Glibc
import PracticeProtocol
import PracticeSupport

/// The spool's `quarantine/` folder: where a turn or cue answer goes that cannot be sent
/// (its record does not decode, its audio is missing or no longer matches its record) and
/// must not be deleted either, since it may be a learner's work. Each one gets a folder of
/// its own, `quarantine/<id>-<time>/`, holding its files as they were and `set-aside.json`
/// (the ``SpoolSetAside``: what, why, when); nothing in it is ever read back as a turn.
///
/// Not thread-safe: the spool that owns it is used from one queue.
struct SpoolQuarantine {
    let directory: String
    let kind: SpoolSetAside.Kind

    init(spoolDirectory: String, kind: SpoolSetAside.Kind) throws(SpoolError) {
        directory = FilePaths.join(spoolDirectory, "quarantine")
        self.kind = kind
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw SpoolError(path: directory, operation: "mkdir", errno: Errno.current) }
    }

    /// Moves `files` (those that exist) into a folder of their own with a note of why, and
    /// returns what was set aside. A file that cannot be moved is left where it is (and
    /// named in the reason): nothing is deleted here.
    func setAside(id: String, files: [String], reason: String, now: Double = Date().timeIntervalSince1970) -> SpoolSetAside {
        let safe = String(id.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") ? $0 : "_" }.prefix(100))
        var folder = FilePaths.join(directory, "\(safe)-\(Int(now * 1000))")
        var suffix = 1
        while mkdir(folder, 0o700) != 0 {
            guard errno == EEXIST, suffix < 100 else {
                return SpoolSetAside(kind: kind, id: id, reason: "\(reason); it could not be moved aside (\(Errno.current)) and was left in place",
                                     path: "", setAsideAt: now)
            }
            folder = FilePaths.join(directory, "\(safe)-\(Int(now * 1000))-\(suffix)")
            suffix += 1
        }
        var left: [String] = []
        var sources: Set<String> = []
        for file in files where access(file, F_OK) == 0 {
            let name = String(file.split(separator: "/").last ?? "")
            if rename(file, FilePaths.join(folder, name)) != 0 { left.append("\(file): \(Errno.current)") } else { sources.insert(FilePaths.parent(of: file)) }
        }
        let entry = SpoolSetAside(kind: kind, id: id, reason: left.isEmpty ? reason : "\(reason); not moved: \(left.joined(separator: ", "))",
                                  path: folder, setAsideAt: now)
        if let note = try? JSONEncoder().encode(entry) {
            _ = note.withUnsafeBytes { SystemCall.writeFileAtomically($0, to: FilePaths.join(folder, "set-aside.json"), mode: 0o600, sync: true) }
        }
        // The renames are durable once both folders are synced.
        for path in sources.union([folder, directory]) { Self.sync(path) }
        return entry
    }

    /// What was set aside, of this kind, oldest first.
    func list() -> [SpoolSetAside] {
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return folders.compactMap { folder -> SpoolSetAside? in
            let note = FilePaths.join(FilePaths.join(directory, folder), "set-aside.json")
            guard let size = SpoolFile.regularSize(note), size < 64 * 1024, let data = FileManager.default.contents(atPath: note),
                  let entry = try? JSONDecoder().decode(SpoolSetAside.self, from: data), entry.kind == kind else { return nil }
            return entry
        }.sorted { ($0.setAsideAt, $0.id) < ($1.setAsideAt, $1.id) }
    }

    static func sync(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}

extension SpoolSetAside {
    /// Something set aside is never silent: logged as an error, counted by kind, told.
    func report(logger: Logger, metrics: Metrics, publish: (any ProtocolEvent) -> Void) {
        logger.error("spool: \(kind == .turn ? "turn" : "cue answer") \(id) set aside in \(path): \(reason)")
        metrics.increment(.spoolSetAside, kind.rawValue)
        publish(Event.SpoolItemSetAside(self))
    }
}
