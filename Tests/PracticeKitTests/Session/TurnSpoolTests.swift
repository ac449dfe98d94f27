import AudioKernel
import Foundation
@testable import PracticeKit
@testable import PracticeProtocol
import PracticeSupport
import XCTest

final class TurnSpoolTests: XCTestCase {
    var directory: String!

    override func setUp() { directory = NSTemporaryDirectory() + "spool-\(UUID().uuidString)" }
    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    func testAStoredTurnReadsBackByteForByteAndLeavesOnlyWhenRemoved() throws {
        let spool = try TurnSpool(directory: directory)
        let wav = try WAVEncoder.encode((0..<2_400).map { Int16(truncatingIfNeeded: $0 * 7) }, format: .speech)
        let turn = SpooledTurn(sessionID: "s-1", mode: .conversation, duration: 0.1, bytes: wav.count)
        try spool.store(turn, wav: wav)
        XCTAssertTrue(spool.contains(turn.id))
        let loaded = try spool.load(turn.id)
        var stored = turn
        stored.crc32 = CRC32.checksum(wav)
        XCTAssertEqual(loaded.turn, stored, "the record keeps the WAV's size and CRC-32")
        XCTAssertEqual(Array(loaded.wav), wav)
        XCTAssertEqual(spool.list().turns, [stored])
        XCTAssertEqual(spool.usage.turns, 1)
        // Nothing is left half-written in tmp/.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/tmp"), [])
        try spool.remove(turn.id)
        XCTAssertFalse(spool.contains(turn.id))
        XCTAssertEqual(spool.list().turns, [])
        XCTAssertNoThrow(try spool.remove(turn.id), "removing twice is not an error")
    }

    func testTurnsSurviveReopeningAndLeftoversOfACrashAreDropped() throws {
        let first = try TurnSpool(directory: directory)
        let older = SpooledTurn(sessionID: "s", mode: .review, recordedAt: 100, duration: 1, bytes: 44)
        let newer = SpooledTurn(sessionID: "s", mode: .review, recordedAt: 200, duration: 1, bytes: 44)
        try first.store(newer, wav: [UInt8](repeating: 1, count: 44))
        try first.store(older, wav: [UInt8](repeating: 2, count: 44))
        // A crash in the middle of a write leaves a file in tmp/ (never told spooled: removed,
        // and said); garbage in new/ is set aside in quarantine/, never deleted.
        _ = FileManager.default.createFile(atPath: directory + "/tmp/half.turn", contents: Data([1, 2, 3]))
        _ = FileManager.default.createFile(atPath: directory + "/new/garbage.turn", contents: Data("not a turn".utf8))
        let reopened = try TurnSpool(directory: directory)
        let (turns, setAside, removed) = reopened.recover()
        XCTAssertEqual(turns.map(\.id), [older.id, newer.id], "oldest first")
        XCTAssertEqual(setAside.map(\.id), ["garbage"])
        XCTAssertEqual(removed, ["tmp/half.turn"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/tmp/half.turn"))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: setAside[0].path + "/garbage.turn")), Data("not a turn".utf8), "kept whole")
        XCTAssertEqual(reopened.setAside, setAside, "listed from its note after the fact")
        XCTAssertThrowsError(try reopened.load("garbage"))
    }

    func testIdsFromClientsCannotNameOtherFiles() throws {
        let spool = try TurnSpool(directory: directory)
        for id in ["../x", "", "a/b", String(repeating: "a", count: 65), "x.turn"] {
            XCTAssertThrowsError(try spool.load(id), id)
            XCTAssertThrowsError(try spool.remove(id), id)
            XCTAssertFalse(spool.contains(id))
        }
    }

    func testAnUnwritableSpoolIsAClearError() {
        XCTAssertThrowsError(try TurnSpool(directory: "/proc/no-spool-here")) { error in
            XCTAssertTrue("\(error)".contains("mkdir"), "\(error)")
        }
    }

    func testOfflineCacheKeepsTheLastAnswerPerUserWithItsAge() {
        let cache = OfflineCache(stateDirectory: directory)
        XCTAssertNil(cache.load(name: "topics", user: "u1"))
        cache.store(["a": 1], name: "topics", user: "u1")
        cache.store(["b": 2], name: "topics", user: "../u2")
        XCTAssertEqual(cache.load(name: "topics", user: "u1")?.value, ["a": 1])
        XCTAssertLessThan(cache.load(name: "topics", user: "u1")?.age ?? 99, 5)
        XCTAssertEqual(cache.load(name: "topics", user: "../u2")?.value, ["b": 2])
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory + "/cache/___u2/topics.json"))
    }
}

final class SessionStageTests: XCTestCase {
    func testEveryStageIsReachableFromIdleAndLeadsBackToIdle() {
        var reached: Set<SessionStage> = [.idle]
        var frontier: [SessionStage] = [.idle]
        while let stage = frontier.popLast() {
            for next in SessionStage.transitions[stage] ?? [] where !reached.contains(next) {
                reached.insert(next)
                frontier.append(next)
            }
        }
        XCTAssertEqual(reached.union([.failed]), Set(SessionStage.allCases))
        for stage in SessionStage.allCases {
            XCTAssertTrue(stage.canMove(to: .idle), "\(stage) cannot be closed")
            XCTAssertTrue(stage.canMove(to: .failed))
        }
        XCTAssertFalse(SessionStage.idle.canMove(to: .replying))
        XCTAssertFalse(SessionStage.reviewing.canMove(to: .recording))
    }

    func testCommandsAreCheckedAgainstTheStage() {
        XCTAssertTrue(Command.SessionStart.isAccepted(in: .idle))
        XCTAssertFalse(Command.SessionStart.isAccepted(in: .ready))
        XCTAssertTrue(Command.TurnStart.isAccepted(in: .replying), "barge-in")
        XCTAssertFalse(Command.TurnStart.isAccepted(in: .uploading), "turns never overlap")
        XCTAssertFalse(Command.CorrectionAsk.isAccepted(in: .reviewing))
        XCTAssertTrue(Command.CorrectionAsk.isAccepted(in: .completed))
        XCTAssertTrue(Command.SpoolList.isAccepted(in: .finishing))
        XCTAssertTrue(Command.Topics.isAccepted(in: .finishing), "the learner's data is there in every stage")
        XCTAssertEqual(Command.ReviewFinish.stages, [.reviewed])
    }
}
