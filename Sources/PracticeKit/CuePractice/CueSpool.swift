import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeProtocol
import PracticeSupport

/// What the spool knows of a recorded answer besides its audio, and how far its upload got.
public struct SpooledAnswer: Codable, Equatable, Sendable {
    public var id: String
    public var cueId: Int
    /// The profile (learner and language) the answer was recorded for.
    public var profileId: Int
    public var recordedAt: Double
    public var durationS: Double
    /// The audio file's size and CRC-32, as stored: the audio is checked against both before
    /// every upload. (Records of earlier releases have no checksum: their size is checked.)
    public var bytes: Int
    public var crc32: UInt32?
    /// Set once the PUT to this intent's URL succeeded: completion (idempotent) is what is
    /// left. An intent whose PUT did not succeed is never reused (its URL lives 900 s).
    public var uploadedIntentId: Int?

    public init(id: String, cueId: Int, profileId: Int, recordedAt: Double, durationS: Double, bytes: Int = 0, crc32: UInt32? = nil,
                uploadedIntentId: Int? = nil) {
        self.id = id
        self.cueId = cueId
        self.profileId = profileId
        self.recordedAt = recordedAt
        self.durationS = durationS
        self.bytes = bytes
        self.crc32 = crc32
        self.uploadedIntentId = uploadedIntentId
    }
}

/// Recorded cue answers kept until the backend has them: `<spool>/cues/<id>.json` (the
/// ``SpooledAnswer``) beside `<id>.m4a` (AAC-LC, exactly the bytes uploaded). The record is
/// written first and the audio second, each whole under a scratch name, synced and renamed,
/// then the record again with the audio's size and checksum: after a crash an answer has
/// both files (it was told spooled) or a record without audio (never told, removed at the
/// next start). Audio that no longer matches its record, a record that does not decode and
/// audio without a record are an answer's remains: they are set aside in `quarantine/`
/// (``SpoolQuarantine``), logged and told, never deleted and never uploaded.
///
/// Owned by one queue (cue practice's): every method must be called on it, which it checks.
public final class CueSpool {
    public let directory: String
    private let quarantine: SpoolQuarantine
    private let owner: DispatchQueue?
    /// The answers kept, by id: read at `recover()`, then kept up to date here.
    private var records: [String: SpooledAnswer] = [:]

    public init(spoolDirectory: String, owner: DispatchQueue? = nil) throws(SpoolError) {
        directory = FilePaths.join(spoolDirectory, "cues")
        var path = ""
        for part in directory.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) != 0 && errno != EEXIST { throw SpoolError(path: path, operation: "mkdir", errno: Errno.current) }
        }
        quarantine = try SpoolQuarantine(spoolDirectory: spoolDirectory, kind: .cueAnswer)
        self.owner = owner
    }

    private func checkOwner() {
        if let owner { dispatchPrecondition(condition: .onQueue(owner)) }
    }

    public func audioPath(_ id: String) -> String { FilePaths.join(directory, id + ".m4a") }
    private func recordPath(_ id: String) -> String { FilePaths.join(directory, id + ".json") }

    /// The answers kept, oldest first.
    public var answers: [SpooledAnswer] {
        checkOwner()
        return records.values.sorted { ($0.recordedAt, $0.id) < ($1.recordedAt, $1.id) }
    }

    /// What was set aside, now and in earlier runs.
    public var setAside: [SpoolSetAside] {
        checkOwner()
        return quarantine.list()
    }

    /// Keeps `turn` as AAC-LC at `bitRate` with its record; when this returns, the answer
    /// survives a crash. Returns the record with the file's size and checksum, as read back.
    public func store(_ turn: RecordedTurn, answer: SpooledAnswer, bitRate: Int) throws(SpoolError) -> SpooledAnswer {
        checkOwner()
        try write(answer)
        do {
            try turn.save(to: audioPath(answer.id), as: .aac(bitRate: bitRate), sync: true)
        } catch {
            unlink(recordPath(answer.id))
            throw SpoolError(path: audioPath(answer.id), operation: "encoding: \(error)", errno: Errno(rawValue: EIO))
        }
        var stored = answer
        switch SystemCall.readFile(atPath: audioPath(answer.id)) {
        case .success(let bytes):
            stored.bytes = bytes.count
            stored.crc32 = CRC32.checksum(bytes)
        case .failure(let errno):
            remove(answer.id)
            throw SpoolError(path: audioPath(answer.id), operation: "read", errno: errno)
        }
        try write(stored)
        SpoolQuarantine.sync(directory)
        records[stored.id] = stored
        return stored
    }

    /// Rewrites an answer's record (its upload moved on). The progress is kept in memory even
    /// when the disk refuses it: this run then completes the upload instead of sending it again.
    public func update(_ answer: SpooledAnswer) throws(SpoolError) {
        checkOwner()
        records[answer.id] = answer
        try write(answer)
    }

    /// The answer's audio, checked against its record's size and checksum: audio that does
    /// not match is never uploaded (``SpoolError/isDamaged``: set it aside).
    public func audio(_ answer: SpooledAnswer) throws(SpoolError) -> Data {
        checkOwner()
        let path = audioPath(answer.id)
        switch SpoolFile.kind(path) {
        case .missing: throw SpoolError(path: path, operation: "read", errno: Errno(rawValue: ENOENT))
        case .notRegular: throw SpoolError(path: path, operation: "damaged", errno: nil, detail: "not a regular file")
        case .regular(let size) where size != answer.bytes:
            throw SpoolError(path: path, operation: "damaged", errno: nil, detail: "\(size) bytes where its record has \(answer.bytes)")
        case .regular: break
        }
        switch SystemCall.readFile(atPath: path) {
        case .success(let bytes):
            if let damage = Self.damage(bytes, answer) { throw SpoolError(path: path, operation: "damaged", errno: nil, detail: damage) }
            return Data(bytes)
        case .failure(let errno):
            throw SpoolError(path: path, operation: "read", errno: errno)
        }
    }

    /// How `bytes` differ from what `answer` records, or nil when they match.
    private static func damage(_ bytes: [UInt8], _ answer: SpooledAnswer) -> String? {
        if bytes.count != answer.bytes { return "\(bytes.count) bytes where its record has \(answer.bytes)" }
        if let expected = answer.crc32, CRC32.checksum(bytes) != expected { return "its CRC-32 is not its record's" }
        return nil
    }

    /// Removes an answer (the backend has it, or it was discarded).
    public func remove(_ id: String) {
        checkOwner()
        unlink(audioPath(id))
        unlink(recordPath(id))
        SpoolQuarantine.sync(directory)
        records[id] = nil
    }

    /// Moves an answer's files into the quarantine folder, with why.
    @discardableResult
    public func setAside(_ id: String, reason: String) -> SpoolSetAside {
        checkOwner()
        records[id] = nil
        return quarantine.setAside(id: id, files: [recordPath(id), audioPath(id)], reason: reason)
    }

    /// What an earlier run left: the answers that are whole (oldest first); the remains
    /// set aside (a record that does not decode, audio that does not match its record or has
    /// none); the scratch files removed (a write a crash cut short, never told spooled).
    public func recover() -> (answers: [SpooledAnswer], setAside: [SpoolSetAside], removed: [String]) {
        checkOwner()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var setAside: [SpoolSetAside] = []
        var removed: [String] = []
        records = [:]
        for name in names {
            let path = FilePaths.join(directory, name)
            switch SpoolFile.kind(path) {
            case .missing: continue  // already moved aside with its record (the listing was taken before)
            case .notRegular:
                // An answer's file that is a FIFO or a device: the answer goes aside whole.
                let id = name.hasSuffix(".json") ? String(name.dropLast(5)) : name.hasSuffix(".m4a") ? String(name.dropLast(4)) : name
                let files = id == name ? [path] : [recordPath(id), audioPath(id)]
                setAside.append(quarantine.setAside(id: id, files: files, reason: "\(name) is not a regular file"))
                continue
            case .regular: break
            }
            // Scratch names: SystemCall's `.partial`, the MPEG-4 writer's `.assembling`.
            if name.hasSuffix(".partial") || name.hasSuffix(".assembling") {
                unlink(path)
                removed.append(name)
                continue
            }
            if name.hasSuffix(".m4a"), access(recordPath(String(name.dropLast(4))), F_OK) != 0 {
                setAside.append(quarantine.setAside(id: String(name.dropLast(4)), files: [path], reason: "audio without a record"))
                continue
            }
            guard name.hasSuffix(".json") else { continue }
            let id = String(name.dropLast(5))
            guard let size = SpoolFile.regularSize(path), size < 64 * 1024, let data = FileManager.default.contents(atPath: path),
                  let answer = try? JSONDecoder().decode(SpooledAnswer.self, from: data), answer.id == id else {
                setAside.append(quarantine.setAside(id: id, files: [path, audioPath(id)], reason: "its record cannot be read"))
                continue
            }
            guard SpoolFile.kind(audioPath(id)) != .missing else {
                // Written first, before the audio: an answer a crash cut short, never told spooled.
                unlink(path)
                removed.append(name)
                continue
            }
            do throws(SpoolError) {
                _ = try audio(answer)
            } catch {
                setAside.append(quarantine.setAside(id: id, files: [path, audioPath(id)], reason: "its audio is damaged: \(error.detail ?? "\(error)")"))
                continue
            }
            records[id] = answer
        }
        if !removed.isEmpty { SpoolQuarantine.sync(directory) }
        return (answers, setAside, removed.sorted())
    }

    private func write(_ answer: SpooledAnswer) throws(SpoolError) {
        let bytes: Data
        do { bytes = try JSONEncoder().encode(answer) } catch { throw SpoolError(path: recordPath(answer.id), operation: "encode", errno: Errno(rawValue: EINVAL)) }
        if let (errno, operation) = bytes.withUnsafeBytes({ SystemCall.writeFileAtomically($0, to: recordPath(answer.id), mode: 0o600, sync: true) }) {
            throw SpoolError(path: recordPath(answer.id), operation: operation, errno: errno)
        }
    }
}

extension CueSpoolEntry {
    /// The answer as `spool.list` shows it under cue practice.
    public init(_ answer: SpooledAnswer, state: State, lastError: String?) {
        self.init(answerId: answer.id, cueId: answer.cueId, profileId: answer.profileId, recordedAt: answer.recordedAt,
                  durationS: answer.durationS, bytes: answer.bytes, state: state, lastError: lastError)
    }
}
