import Foundation
@testable import SpeechModels
import XCTest

/// The two lanes of a stage: lane 0 on the caller's thread, lane 1 on the team's own, both
/// done when `run` returns, stage after stage.
final class LaneTeamTests: XCTestCase {
    /// Each lane adds its stage's number to its own total and notes the thread it ran on, in
    /// memory of its own (no array both lanes modify: the sanitizer would see its header).
    private final class Tally: LaneWork, @unchecked Sendable {
        var stage = 0
        let lanes = UnsafeMutablePointer<(total: Int, thread: pthread_t?, moved: Bool)>.allocate(capacity: 2)
        init() { lanes.initialize(repeating: (0, nil, false), count: 2) }
        deinit { lanes.deallocate() }
        var totals: [Int] { [lanes[0].total, lanes[1].total] }
        var threads: [pthread_t?] { [lanes[0].thread, lanes[1].thread] }
        var otherThread: Bool { lanes[0].moved || lanes[1].moved }

        func performLane(_ index: Int) {
            let me = pthread_self()
            lanes[index].total += stage
            if let seen = lanes[index].thread, pthread_equal(seen, me) == 0 { lanes[index].moved = true }
            lanes[index].thread = me
        }
    }

    func testBothLanesOfEveryStageAreDoneWhenRunReturns() throws {
        let team = LaneTeam()
        defer { team.stop() }
        let tally = Tally()
        for stage in 1...2_000 {
            tally.stage = stage
            team.run(tally)
            // Lane 1's total for this stage is in when run returns: no stage is left behind.
            XCTAssertEqual(tally.totals[1], stage * (stage + 1) / 2)
            if tally.totals[1] != stage * (stage + 1) / 2 { break }
        }
        XCTAssertEqual(tally.totals[0], 2_000 * 2_001 / 2)
        XCTAssertFalse(tally.otherThread, "each lane stays on one thread")
        let caller = pthread_self()
        XCTAssertNotEqual(pthread_equal(try XCTUnwrap(tally.threads[0]), caller), 0, "lane 0 runs on the caller's thread")
        XCTAssertEqual(pthread_equal(try XCTUnwrap(tally.threads[1]), caller), 0, "lane 1 runs on the team's thread")
    }

    /// A stopped team (as one whose thread could not be made) does both lanes on the caller.
    func testAStoppedTeamDoesBothLanesOnTheCaller() throws {
        let team = LaneTeam()
        team.stop()
        let tally = Tally()
        tally.stage = 5
        team.run(tally)
        XCTAssertEqual(tally.totals, [5, 5])
        let caller = pthread_self()
        XCTAssertNotEqual(pthread_equal(try XCTUnwrap(tally.threads[1]), caller), 0)
    }
}
