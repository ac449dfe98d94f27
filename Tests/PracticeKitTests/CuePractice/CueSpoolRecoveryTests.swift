import AudioKernel
import Dispatch
import Foundation
@testable import PracticeKit
import PracticeProtocol
import PracticeSupport
import XCTest

/// What a crash, a kill or a failing disk can leave in the spools, and what the next start
/// makes of it: an answer or turn is the learner's work, so what cannot be sent is set aside
/// whole in `quarantine/` (never uploaded, never deleted) and named; scratch files of a
/// write that never finished are removed and named; what is whole is recovered. The same
/// rules hold for cue answers (CueSpool) and the conversation's turns (TurnSpool).
final class CueSpoolRecoveryTests: XCTestCase {
    private var root: String!
    private let queue = DispatchQueue(label: "test.cue-spool")
    private let speech: [Int16] = (0..<36_000).map { Int16(4_000 * sin(Double($0) * 0.05)) }

    override func setUp() { root = NSTemporaryDirectory() + "cue-spool-\(UUID().uuidString)" }
    override func tearDown() { try? FileManager.default.removeItem(atPath: root) }

    private func cueSpool() throws -> CueSpool { try queue.sync { try CueSpool(spoolDirectory: root, owner: queue) } }

    /// An answer spooled as the daemon spools it; its record and its audio's bytes.
    private func spooled(_ spool: CueSpool, cue: Int = 7) throws -> (SpooledAnswer, Data) {
        let answer = SpooledAnswer(id: UUID().uuidString.lowercased(), cueId: cue, profileId: 3, recordedAt: Date().timeIntervalSince1970, durationS: 1.5)
        let stored = try queue.sync { try spool.store(RecordedTurn(samples: speech, recording: 1), answer: answer, bitRate: 48_000) }
        return (stored, try Data(contentsOf: URL(fileURLWithPath: spool.audioPath(stored.id))))
    }

    private func recover(_ spool: CueSpool) -> (answers: [SpooledAnswer], setAside: [SpoolSetAside], removed: [String]) {
        queue.sync { spool.recover() }
    }

    func testAStoredAnswerKeepsItsAudiosSizeAndChecksum() throws {
        let spool = try cueSpool()
        let (stored, audio) = try spooled(spool)
        XCTAssertEqual(stored.bytes, audio.count)
        XCTAssertEqual(stored.crc32, CRC32.checksum(audio))
        XCTAssertEqual(try queue.sync { try spool.audio(stored) }, audio)
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926, "the IEEE CRC-32's check value")
    }

    /// A disk that lost the audio's tail (31,878 → 15,939 bytes in the outside check): set
    /// aside at the next start, not uploaded; the truncated file kept as it is.
    func testATruncatedAnswerIsSetAsideNotRecovered() throws {
        let (stored, audio) = try spooled(try cueSpool())
        let half = audio.prefix(audio.count / 2)
        try half.write(to: URL(fileURLWithPath: root + "/cues/\(stored.id).m4a"))
        let recovered = recover(try cueSpool())
        XCTAssertEqual(recovered.answers, [])
        XCTAssertEqual(recovered.setAside.map(\.id), [stored.id])
        XCTAssertEqual(recovered.setAside.first?.kind, .cueAnswer)
        XCTAssertTrue(recovered.setAside[0].reason.contains("\(half.count) bytes where its record has \(audio.count)"), recovered.setAside[0].reason)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: recovered.setAside[0].path + "/\(stored.id).m4a")), half)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: root + "/cues"), [], "nothing of it is left to upload")
    }

    /// A garbled record: both files set aside, the intact audio byte for byte (today's code
    /// deleted both, the audio included, silently).
    func testAGarbledRecordSetsAsideTheAnswerWithItsIntactAudio() throws {
        let spool = try cueSpool()
        let (stored, audio) = try spooled(spool)
        let (other, _) = try spooled(spool, cue: 8)
        try Data("{\"id\": garbled".utf8).write(to: URL(fileURLWithPath: root + "/cues/\(stored.id).json"))
        let recovered = recover(try cueSpool())
        XCTAssertEqual(recovered.answers.map(\.id), [other.id], "the whole answer is recovered")
        XCTAssertEqual(recovered.setAside.map(\.id), [stored.id])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: recovered.setAside[0].path + "/\(stored.id).m4a")), audio)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: recovered.setAside[0].path + "/\(stored.id).json")), Data("{\"id\": garbled".utf8))
        // Listed after the fact, from the note beside the files.
        let again = try cueSpool()
        XCTAssertEqual(queue.sync { again.setAside }, recovered.setAside)
    }

    /// A kill while the audio was written: its scratch files (`.assembling`, `.partial`) and
    /// the record written before it are removed, and named; audio without a record is set
    /// aside.
    func testScratchFilesAreRemovedAndNamedAndAudioWithoutARecordIsKept() throws {
        let spool = try cueSpool()
        let (whole, _) = try spooled(spool)
        let cut = "0f0e0d0c-0000-4000-8000-000000000001"
        let answer = SpooledAnswer(id: cut, cueId: 9, profileId: 3, recordedAt: 1, durationS: 1)
        try JSONEncoder().encode(answer).write(to: URL(fileURLWithPath: root + "/cues/\(cut).json"))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: root + "/cues/\(cut).m4a.assembling"))
        try Data([4, 5]).write(to: URL(fileURLWithPath: root + "/cues/\(cut).json.partial"))
        let orphan = "0f0e0d0c-0000-4000-8000-000000000002"
        try Data([6, 7, 8]).write(to: URL(fileURLWithPath: root + "/cues/\(orphan).m4a"))
        let recovered = recover(try cueSpool())
        XCTAssertEqual(recovered.answers.map(\.id), [whole.id])
        XCTAssertEqual(recovered.removed, ["\(cut).json", "\(cut).json.partial", "\(cut).m4a.assembling"])
        XCTAssertEqual(recovered.setAside.map(\.id), [orphan])
        XCTAssertEqual(recovered.setAside.first?.reason, "audio without a record")
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: root + "/cues")), ["\(whole.id).json", "\(whole.id).m4a"])
    }

    // MARK: - The conversation's turns, held to the same rules

    private func storedTurn(_ spool: TurnSpool) throws -> (SpooledTurn, [UInt8]) {
        let wav = try WAVEncoder.encode(speech, format: .speech)
        let turn = SpooledTurn(sessionID: "s-1", mode: .conversation, duration: 1.5, bytes: wav.count)
        try spool.store(turn, wav: wav)
        return (turn, wav)
    }

    func testATruncatedTurnIsSetAsideAndNeverLoaded() throws {
        let spool = try TurnSpool(directory: root)
        let (turn, wav) = try storedTurn(spool)
        let file = root + "/new/\(turn.id).turn"
        let whole = try Data(contentsOf: URL(fileURLWithPath: file))
        try whole.prefix(whole.count - wav.count / 2).write(to: URL(fileURLWithPath: file))
        XCTAssertThrowsError(try spool.load(turn.id)) { XCTAssertTrue(($0 as? SpoolError)?.isDamaged == true, "\($0)") }
        let recovered = try TurnSpool(directory: root).recover()
        XCTAssertEqual(recovered.turns, [])
        XCTAssertEqual(recovered.setAside.map(\.id), [turn.id])
        XCTAssertEqual(recovered.setAside.first?.kind, .turn)
        XCTAssertTrue(recovered.setAside[0].reason.contains("damaged"), recovered.setAside[0].reason)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: recovered.setAside[0].path + "/\(turn.id).turn")), whole.prefix(whole.count - wav.count / 2))
    }

    func testAFlippedByteInATurnIsFoundByItsChecksum() throws {
        let spool = try TurnSpool(directory: root)
        let (turn, _) = try storedTurn(spool)
        let file = root + "/new/\(turn.id).turn"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        bytes[bytes.count - 100] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: file))
        XCTAssertThrowsError(try spool.load(turn.id)) { XCTAssertTrue("\($0)".contains("CRC-32"), "\($0)") }
        XCTAssertEqual(try TurnSpool(directory: root).recover().setAside.map(\.id), [turn.id])
    }

    func testAGarbledTurnHeaderIsSetAsideNotLeftInPlace() throws {
        let spool = try TurnSpool(directory: root)
        let (turn, _) = try storedTurn(spool)
        let (other, _) = try storedTurn(spool)
        let file = root + "/new/\(turn.id).turn"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        bytes.replaceSubrange(0..<20, with: Data(repeating: 0x7B, count: 20))
        try bytes.write(to: URL(fileURLWithPath: file))
        let recovered = try TurnSpool(directory: root).recover()
        XCTAssertEqual(recovered.turns.map(\.id), [other.id])
        XCTAssertEqual(recovered.setAside.map(\.id), [turn.id])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: recovered.setAside[0].path + "/\(turn.id).turn")), bytes)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: root + "/new"), ["\(other.id).turn"])
    }

    // MARK: - Hostile files: a FIFO, a 4 GiB file

    /// `body` on a thread of its own, waited for at most 20 s: a spool that opened a FIFO
    /// would block there for ever.
    private func finishes<T>(_ body: @escaping () -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let handover = Handover<T>(body)
        Thread.detachNewThread {
            handover.result = handover.body()
            done.signal()
        }
        guard done.wait(timeout: .now() + 20) == .success else { return nil }
        return handover.result
    }

    /// The most memory this process has held, in bytes.
    private var peakResident: Int {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_maxrss * 1_024
    }

    func testAFIFOAndA4GiBFileInTheCueSpoolAreSetAsideUnread() throws {
        let spool = try cueSpool()
        let (whole, _) = try spooled(spool)
        // A FIFO where a record should be; a record whose audio is a FIFO; a record whose
        // audio grew to 4 GiB (sparse: no disk is used).
        let fifoRecord = "0f0e0d0c-0000-4000-8000-000000000003", fifoAudio = "0f0e0d0c-0000-4000-8000-000000000004"
        let huge = "0f0e0d0c-0000-4000-8000-000000000005"
        XCTAssertEqual(mkfifo(root + "/cues/\(fifoRecord).json", 0o600), 0)
        for id in [fifoAudio, huge] {
            let answer = SpooledAnswer(id: id, cueId: 9, profileId: 3, recordedAt: 2, durationS: 1, bytes: 1_000, crc32: 1)
            try JSONEncoder().encode(answer).write(to: URL(fileURLWithPath: root + "/cues/\(id).json"))
        }
        XCTAssertEqual(mkfifo(root + "/cues/\(fifoAudio).m4a", 0o600), 0)
        XCTAssertEqual(truncate(root + "/cues/\(huge).m4a", 0) == 0 || FileManager.default.createFile(atPath: root + "/cues/\(huge).m4a", contents: nil), true)
        XCTAssertEqual(truncate(root + "/cues/\(huge).m4a", 1 << 32), 0)
        let before = peakResident
        let reopened = try cueSpool()
        let recovered = try XCTUnwrap(finishes { self.queue.sync { reopened.recover() } }, "recovery blocked on a FIFO")
        XCTAssertEqual(recovered.answers.map(\.id), [whole.id])
        XCTAssertEqual(Set(recovered.setAside.map(\.id)), [fifoRecord, fifoAudio, huge])
        XCTAssertEqual(recovered.removed, [], "no record of theirs was taken for a cut-short write")
        XCTAssertTrue(recovered.setAside.contains { $0.id == huge && $0.reason.contains("4294967296 bytes where its record has 1000") }, "\(recovered.setAside)")
        XCTAssertLessThan(peakResident - before, 512 << 20, "the 4 GiB file was read")
    }

    func testAFIFOAndA4GiBFileInTheTurnSpoolAreSetAsideUnread() throws {
        let spool = try TurnSpool(directory: root)
        let (whole, _) = try storedTurn(spool)
        let (grown, _) = try storedTurn(spool)
        XCTAssertEqual(truncate(root + "/new/\(grown.id).turn", 1 << 32), 0)
        let fifo = "0f0e0d0c-0000-4000-8000-000000000006"
        XCTAssertEqual(mkfifo(root + "/new/\(fifo).turn", 0o600), 0)
        // Listing (spool.list, status) neither blocks nor reads them whole.
        let listed = try XCTUnwrap(finishes { spool.list() }, "listing blocked on a FIFO")
        XCTAssertEqual(listed.unreadable, ["\(fifo).turn"])
        XCTAssertThrowsError(try spool.load(grown.id)) { XCTAssertTrue(($0 as? SpoolError)?.isDamaged == true, "\($0)") }
        let before = peakResident
        let recovered = try XCTUnwrap(finishes { try? TurnSpool(directory: self.root).recover() }, "recovery blocked on a FIFO")
        XCTAssertEqual(recovered?.turns.map(\.id), [whole.id])
        XCTAssertEqual(Set(recovered?.setAside.map(\.id) ?? []), [grown.id, fifo])
        XCTAssertLessThan(peakResident - before, 512 << 20, "the 4 GiB turn was read")
    }
}

/// A closure and its result, handed to a thread and back once, under a semaphore.
private final class Handover<T>: @unchecked Sendable {
    let body: () -> T
    var result: T?
    init(_ body: @escaping () -> T) { self.body = body }
}
