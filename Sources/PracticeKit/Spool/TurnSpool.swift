import AudioKernel
import FoundationEssentials
import Glibc
import PracticeProtocol
import PracticeSupport

/// What the spool knows about a turn besides its audio. Written once, with the audio, in
/// the turn's file: the file is complete or absent, never half a turn.
public struct SpooledTurn: Codable, Equatable, Sendable {
    /// The turn's id; also its `Idempotency-Key`, so a resent turn is recognisable.
    public var id: String
    /// The backend session the turn belongs to.
    public var sessionID: String
    public var mode: SessionMode
    /// Seconds since 1970 when the turn was recorded.
    public var recordedAt: Double
    /// The audio's duration in seconds.
    public var duration: Double
    /// The WAV's size in bytes and its CRC-32 (set by ``TurnSpool/store(_:wav:)``; turns
    /// spooled by earlier releases have none: their size is checked).
    public var bytes: Int
    public var crc32: UInt32?

    public init(id: String = UUID().uuidString.lowercased(), sessionID: String, mode: SessionMode, recordedAt: Double = Date().timeIntervalSince1970,
                duration: Double, bytes: Int) {
        self.id = id
        self.sessionID = sessionID
        self.mode = mode
        self.recordedAt = recordedAt
        self.duration = duration
        self.bytes = bytes
    }

    enum CodingKeys: String, CodingKey {
        case id, mode, duration, bytes, crc32
        case sessionID = "session_id"
        case recordedAt = "recorded_at"
    }
}

/// Recorded turns kept on disk until the backend has answered them, in the way of a
/// maildir: a turn is written to `tmp/`, fsynced, renamed into `new/` and the directory
/// fsynced, so that after a crash or power cut a turn in `new/` is whole, and a turn
/// in `tmp/` (never acknowledged to anyone) is dropped at the next start.
///
/// One file per turn, `new/<id>.turn`: a first line `practiced-turn 1 <json>` with the
/// ``SpooledTurn`` fields (the WAV's size and CRC-32 among them), then the WAV bytes
/// exactly as they are uploaded. A turn file whose WAV no longer matches its header, or
/// whose header cannot be read, is set aside in `quarantine/` (``SpoolQuarantine``) at
/// start or before it would be sent again: never sent, never deleted.
///
/// The session's queue owns it; ``store(_:wav:)`` alone also runs on the delivery's writer
/// queue, beside the session's reads: it touches only its own turn's files and the fixed
/// paths (``recover()``'s leftovers are read and cleared at start, before any turn).
public final class TurnSpool: @unchecked Sendable {
    public let directory: String
    private var tmp: String { directory + "/tmp" }
    private var new: String { directory + "/new" }
    private static let magic = "practiced-turn 1 "
    private let quarantine: SpoolQuarantine
    /// Scratch files of an earlier run (a turn a crash cut short, never told spooled),
    /// removed when the spool opened; ``recover()`` reports them.
    private var leftovers: [String] = []

    /// Opens (and creates, with its parents) the spool; leftovers in `tmp/` from a crash
    /// are removed.
    public init(directory: String) throws(SpoolError) {
        self.directory = directory
        var parents: [String] = []
        var parent = FilePaths.parent(of: directory)
        while !parent.isEmpty, parent != "/", !FileManager.default.fileExists(atPath: parent) {
            parents.insert(parent, at: 0)
            parent = FilePaths.parent(of: parent)
        }
        for path in parents + [directory, directory + "/tmp", directory + "/new"] {
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw SpoolError(path: path, operation: "mkdir", errno: Errno.current)
            }
        }
        quarantine = try SpoolQuarantine(spoolDirectory: directory, kind: .turn)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] {
            unlink("\(tmp)/\(name)")
            leftovers.append("tmp/\(name)")
        }
    }

    /// Writes a turn durably; when this returns, the turn survives a crash.
    public func store(_ turn: SpooledTurn, wav: [UInt8]) throws(SpoolError) {
        var turn = turn
        turn.bytes = wav.count
        turn.crc32 = CRC32.checksum(wav)
        let header = (try? JSONEncoder().encode(turn)).map { Self.magic + String(decoding: $0, as: UTF8.self) + "\n" } ?? ""
        let temporary = "\(tmp)/\(turn.id).turn"
        let final = "\(new)/\(turn.id).turn"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SpoolError(path: temporary, operation: "open", errno: Errno.current) }
        var failure: SpoolError?
        if !Self.writeAll(fd, Array(header.utf8)) || !Self.writeAll(fd, wav) {
            failure = SpoolError(path: temporary, operation: "write", errno: Errno.current)
        } else if fsync(fd) != 0 {
            failure = SpoolError(path: temporary, operation: "fsync", errno: Errno.current)
        }
        close(fd)
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, final) == 0 else {
            let error = SpoolError(path: final, operation: "rename", errno: Errno.current)
            unlink(temporary)
            throw error
        }
        try syncDirectory(new)
    }

    /// The turns waiting, oldest first. Files that cannot be read are skipped (and named
    /// in `unreadable`), never deleted: a person may want them.
    public func list() -> (turns: [SpooledTurn], unreadable: [String]) {
        var turns: [SpooledTurn] = []
        var unreadable: [String] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: new)) ?? [] where name.hasSuffix(".turn") {
            if let (turn, _) = try? header(of: "\(new)/\(name)") { turns.append(turn) } else { unreadable.append(name) }
        }
        return (turns.sorted { ($0.recordedAt, $0.id) < ($1.recordedAt, $1.id) }, unreadable.sorted())
    }

    /// A turn's metadata and WAV bytes, the WAV checked against the header's size and
    /// checksum (``SpoolError/isDamaged`` when they differ: set it aside, never send it).
    /// The file's size is checked against the header before the rest is read.
    public func load(_ id: String) throws(SpoolError) -> (turn: SpooledTurn, wav: Data) {
        let path = try path(of: id)
        let (turn, headerBytes) = try header(of: path)
        if let size = SpoolFile.regularSize(path), size != headerBytes + turn.bytes {
            throw SpoolError(path: path, operation: "damaged", errno: nil, detail: "\(size - headerBytes) bytes of WAV where its record has \(turn.bytes)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SpoolError(path: path, operation: "read", errno: Errno(rawValue: ENOENT))
        }
        let wav = data[(data.startIndex + headerBytes)...]
        if let damage = Self.damage(wav, turn) { throw SpoolError(path: path, operation: "damaged", errno: nil, detail: damage) }
        return (turn, wav)
    }

    /// How `wav` differs from what `turn` records, or nil when it matches.
    private static func damage(_ wav: Data, _ turn: SpooledTurn) -> String? {
        if wav.count != turn.bytes { return "\(wav.count) bytes of WAV where its record has \(turn.bytes)" }
        if let expected = turn.crc32, CRC32.checksum(wav) != expected { return "its CRC-32 is not its record's" }
        return nil
    }

    /// What an earlier run left: the whole turns (oldest first), the files set aside (a
    /// header that cannot be read, a WAV that does not match it) and the scratch files
    /// removed. Every turn file is read whole once, to check it.
    public func recover() -> (turns: [SpooledTurn], setAside: [SpoolSetAside], removed: [String]) {
        var setAside: [SpoolSetAside] = []
        var turns: [SpooledTurn] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: new)) ?? [] {
            let path = "\(new)/\(name)"
            guard name.hasSuffix(".turn") else {
                setAside.append(quarantine.setAside(id: name, files: [path], reason: "not a turn file"))
                continue
            }
            let id = String(name.dropLast(5))
            do throws(SpoolError) {
                turns.append(try load(id).turn)
            } catch {
                let reason = error.isDamaged ? "its audio is damaged: \(error.detail ?? "")" : "it cannot be read (\(error))"
                setAside.append(quarantine.setAside(id: id, files: [path], reason: reason))
            }
        }
        let removed = leftovers
        leftovers = []
        return (turns.sorted { ($0.recordedAt, $0.id) < ($1.recordedAt, $1.id) }, setAside, removed)
    }

    /// Moves a turn's file into the quarantine folder, with why.
    @discardableResult
    public func setAside(_ id: String, reason: String) -> SpoolSetAside {
        quarantine.setAside(id: id, files: [(try? path(of: id)) ?? "\(new)/\(id).turn"], reason: reason)
    }

    /// What was set aside, now and in earlier runs.
    public var setAside: [SpoolSetAside] { quarantine.list() }

    public func contains(_ id: String) -> Bool { (try? path(of: id)).map { access($0, F_OK) == 0 } ?? false }

    /// Removes a turn (the backend answered it, or the UI discarded it); durable like
    /// `store`. Removing a turn that is not there is not an error.
    public func remove(_ id: String) throws(SpoolError) {
        let path = try path(of: id)
        if unlink(path) != 0 && errno != ENOENT { throw SpoolError(path: path, operation: "unlink", errno: Errno.current) }
        try syncDirectory(new)
    }

    /// Turns waiting and their size in bytes.
    public var usage: (turns: Int, bytes: Int) {
        var bytes = 0, turns = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: new)) ?? [] where name.hasSuffix(".turn") {
            var info = stat()
            if stat("\(new)/\(name)", &info) == 0 {
                bytes += Int(info.st_size)
                turns += 1
            }
        }
        return (turns, bytes)
    }

    // MARK: - Plumbing

    /// Ids come from clients (`spool.retry`): only the characters a generated id has.
    private func path(of id: String) throws(SpoolError) -> String {
        guard !id.isEmpty, id.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw SpoolError(path: id, operation: "name", errno: nil)
        }
        return "\(new)/\(id).turn"
    }

    /// A turn file's header and its length in bytes, newline included: read from a regular
    /// file only (a FIFO would never answer), 4 KiB at most.
    private func header(of path: String) throws(SpoolError) -> (turn: SpooledTurn, bytes: Int) {
        switch SpoolFile.kind(path) {
        case .missing: throw SpoolError(path: path, operation: "read", errno: Errno(rawValue: ENOENT))
        case .notRegular: throw SpoolError(path: path, operation: "damaged", errno: nil, detail: "not a regular file")
        case .regular: break
        }
        let head: Data
        do { head = Data(try FileReader.read(path, upTo: 4096)) } catch { throw SpoolError(path: path, operation: "open", errno: error.errno) }
        guard let newline = head.firstIndex(of: 0x0A), let turn = Self.decodeHeader(head[head.startIndex..<newline]) else {
            throw SpoolError(path: path, operation: "parse", errno: nil)
        }
        return (turn, newline - head.startIndex + 1)
    }

    private static func decodeHeader(_ line: Data) -> SpooledTurn? {
        let magic = Data(Self.magic.utf8)
        guard line.starts(with: magic) else { return nil }
        return try? JSONDecoder().decode(SpooledTurn.self, from: line.dropFirst(magic.count))
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        if case .success = bytes.withUnsafeBytes({ SystemCall.writeAll(fd, $0) }) { return true }
        return false
    }

    /// A rename or unlink is durable only once its directory is synced.
    private func syncDirectory(_ path: String) throws(SpoolError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SpoolError(path: path, operation: "open", errno: Errno.current) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw SpoolError(path: path, operation: "fsync", errno: Errno.current) }
    }
}

/// A spool operation that failed.
public struct SpoolError: Error, Equatable, CustomStringConvertible {
    public var path: String
    public var operation: String
    public var errno: Errno?
    /// What is wrong with a damaged file (operation `damaged`).
    public var detail: String?

    public init(path: String, operation: String, errno: Errno?, detail: String? = nil) {
        self.path = path
        self.operation = operation
        self.errno = errno
        self.detail = detail
    }

    /// The file is there but no longer what its record says: set it aside, never send it.
    public var isDamaged: Bool { operation == "damaged" }

    public var description: String {
        switch operation {
        case "name": return "'\(path)' is not a turn id"
        case "parse": return "\(path) is not a spooled turn"
        case "damaged": return "\(path) is damaged: \(detail ?? "it does not match its record")"
        default: return "spool: \(operation) \(path): \(errno?.description ?? "failed")"
        }
    }
}

extension SpoolEntry {
    /// The turn as `spool.list` and `spool.recovered` show it.
    public init(_ turn: SpooledTurn, sending: Bool) {
        self.init(id: turn.id, sessionId: turn.sessionID, mode: turn.mode, recordedAt: turn.recordedAt, duration: turn.duration,
                  bytes: turn.bytes, state: sending ? .sending : .pending)
    }
}
