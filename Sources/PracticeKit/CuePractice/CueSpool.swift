import AudioKernel
import FoundationEssentials
import Glibc

/// What the spool knows of a recorded answer besides its audio, and how far its upload got.
public struct SpooledAnswer: Codable, Equatable, Sendable {
    public var id: String
    public var cueId: Int
    /// The profile (learner and language) the answer was recorded for.
    public var profileId: Int
    public var recordedAt: Double
    public var durationS: Double
    public var bytes: Int
    /// Set once the PUT to this intent's URL succeeded: completion (idempotent) is what is
    /// left. An intent whose PUT did not succeed is never reused (its URL lives 900 s).
    public var uploadedIntentId: Int?
}

/// Recorded cue answers kept until the backend has them: `<spool>/cues/<id>.json` (the
/// ``SpooledAnswer``) beside `<id>.m4a` (AAC-LC, exactly the bytes uploaded). The record is
/// written first and the audio second, each whole under a scratch name, synced and renamed:
/// after a crash an answer has both files (it was told spooled) or a record without audio
/// (never told, removed at the next start).
///
/// Not thread-safe: cue practice's queue owns it.
public final class CueSpool {
    public let directory: String

    public init(spoolDirectory: String) throws(SpoolError) {
        directory = FilePaths.join(spoolDirectory, "cues")
        var path = ""
        for part in directory.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) != 0 && errno != EEXIST { throw SpoolError(path: path, operation: "mkdir", errno: Errno.current) }
        }
    }

    public func audioPath(_ id: String) -> String { FilePaths.join(directory, id + ".m4a") }
    private func recordPath(_ id: String) -> String { FilePaths.join(directory, id + ".json") }

    /// Keeps `turn` as AAC-LC at `bitRate` with its record; when this returns, the answer
    /// survives a crash. Returns the record with the file's size.
    public func store(_ turn: RecordedTurn, answer: SpooledAnswer, bitRate: Int) throws(SpoolError) -> SpooledAnswer {
        try write(answer)
        do {
            try turn.save(to: audioPath(answer.id), as: .aac(bitRate: bitRate), sync: true)
        } catch {
            unlink(recordPath(answer.id))
            throw SpoolError(path: audioPath(answer.id), operation: "encoding: \(error)", errno: Errno(rawValue: EIO))
        }
        var stored = answer
        var info = stat()
        stored.bytes = stat(audioPath(answer.id), &info) == 0 ? Int(info.st_size) : 0
        try write(stored)
        return stored
    }

    /// Rewrites an answer's record (its upload moved on).
    public func update(_ answer: SpooledAnswer) throws(SpoolError) { try write(answer) }

    /// The answer's audio.
    public func audio(_ id: String) throws(SpoolError) -> Data {
        switch SystemCall.readFile(atPath: audioPath(id)) {
        case .success(let bytes): return Data(bytes)
        case .failure(let errno): throw SpoolError(path: audioPath(id), operation: "read", errno: errno)
        }
    }

    /// Removes an answer (the backend has it, or it was discarded).
    public func remove(_ id: String) {
        unlink(audioPath(id))
        unlink(recordPath(id))
    }

    /// The answers kept, oldest first; records without audio (a crash mid-write) and
    /// scratch files are removed.
    public func recover() -> [SpooledAnswer] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var answers: [SpooledAnswer] = []
        for name in names {
            let path = FilePaths.join(directory, name)
            if name.hasSuffix(".partial") { unlink(path); continue }
            guard name.hasSuffix(".json") else { continue }
            let id = String(name.dropLast(5))
            guard let data = FileManager.default.contents(atPath: path), data.count < 64 * 1024,
                  let answer = try? JSONDecoder().decode(SpooledAnswer.self, from: data), answer.id == id,
                  FileManager.default.fileExists(atPath: audioPath(id)) else {
                remove(id)
                continue
            }
            answers.append(answer)
        }
        return answers.sorted { $0.recordedAt < $1.recordedAt }
    }

    private func write(_ answer: SpooledAnswer) throws(SpoolError) {
        let bytes: Data
        do { bytes = try JSONEncoder().encode(answer) } catch { throw SpoolError(path: recordPath(answer.id), operation: "encode", errno: Errno(rawValue: EINVAL)) }
        if let (errno, operation) = bytes.withUnsafeBytes({ SystemCall.writeFileAtomically($0, to: recordPath(answer.id), mode: 0o600, sync: true) }) {
            throw SpoolError(path: recordPath(answer.id), operation: operation, errno: errno)
        }
    }
}
