import Foundation
import TestSupport
import XCTest

/// ``PulseAudioServer/retryingGraphXruns`` decides which take a PipeWire test asserts. Here
/// its evidence is written by hand: PipeWire's log (one "client too slow" line per stalled
/// take, as in a stall storm) and the test's own measurement of each take. No server runs.
final class GraphXrunRetryTests: XCTestCase {
    private var server: PulseAudioServer!

    override func setUpWithError() throws { server = try PulseAudioServer(kind: .pipewire) }
    override func tearDown() { try? FileManager.default.removeItem(at: server.directory) }

    /// Runs ten takes at most; `stalled(n)` says whether take n logs a stall, `hole(n)`
    /// whether its measurement finds damage. Returns the take kept and how many were made.
    private func retry(stalled: (Int) -> Bool, hole: (Int) -> Bool, loggedStallsSpoil: Bool = true,
                       seconds: Double = 240) throws -> (kept: Int, takes: Int) {
        let log = server.directory.appendingPathComponent("pipewire.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        var takes = 0
        let kept = try server.retryingGraphXruns(seconds: seconds, loggedStallsSpoil: loggedStallsSpoil,
                                                 spoiledOnPipeWire: { hole($0) ? "take \($0) measured a hole" : nil }) { () throws -> Int in
            takes += 1
            if stalled(takes) { try logStall(take: takes) }
            return takes
        }
        return (kept, takes)
    }

    /// A stall in PipeWire's log, as 0.3.65 writes it; the limiter's wait reads the time,
    /// and 0 s is long past.
    private func logStall(take: Int) throws {
        let handle = try FileHandle(forWritingTo: server.directory.appendingPathComponent("pipewire.log"))
        handle.seekToEndOfFile()
        handle.write(Data("[I][0.000000] pw.node      | [     impl-node.c: 1058 dump_states()] (mic\(take)-1) client too slow! rate:256/48000 pos:\(take) status:triggered\n".utf8))
        try handle.close()
    }

    /// CI's PipeWire step on cc44f1d: a stall logged in all ten takes of a 30 s test, and the
    /// tenth, the one a stall had reached (27.4 dB), was asserted. Now the last take that
    /// measured whole is.
    func testWhenEveryTakeLogsAStallTheLastTakeThatMeasuredWholeIsKept() throws {
        let result = try retry(stalled: { _ in true }, hole: { ![3, 7].contains($0) })
        XCTAssertEqual(result.takes, 10, "every take was spoiled by the log, so all ten were made")
        XCTAssertEqual(result.kept, 7)
    }

    func testWhenEveryTakeMeasuresAHoleTheLastIsKeptForItsAssertionsToFail() throws {
        let result = try retry(stalled: { $0 % 2 == 0 }, hole: { _ in true })
        XCTAssertEqual(result.takes, 10)
        XCTAssertEqual(result.kept, 10)
    }

    func testATakeNeitherLoggedNorMeasuredAsStalledEndsTheRetries() throws {
        let result = try retry(stalled: { $0 < 4 }, hole: { $0 == 2 || $0 == 4 })
        XCTAssertEqual(result.takes, 5)
        XCTAssertEqual(result.kept, 5)
    }

    func testWithoutAMeasurementTheLastLoggedTakeIsKept() throws {
        _ = FileManager.default.createFile(atPath: server.directory.appendingPathComponent("pipewire.log").path, contents: nil)
        var takes = 0
        let kept = try server.retryingGraphXruns { () throws -> Int in
            takes += 1
            try logStall(take: takes)
            return takes
        }
        XCTAssertEqual(kept, 10)
    }

    func testTheLogAloneDoesNotSpoilATakeWhenTheTestSaysSo() throws {
        let result = try retry(stalled: { _ in true }, hole: { $0 < 3 }, loggedStallsSpoil: false)
        XCTAssertEqual(result.takes, 3)
        XCTAssertEqual(result.kept, 3)
    }

    /// The takes' time is bounded as well as their number: with it used up, the take that
    /// ends past it is the last, and the rule for the last take still picks what is asserted.
    func testTakesStopWhenTheirTimeIsUsedUp() throws {
        let spent = try retry(stalled: { _ in true }, hole: { $0 != 1 }, seconds: 0)
        XCTAssertEqual(spent.takes, 1, "no time left: the first take is the last")
        XCTAssertEqual(spent.kept, 1)
        let ample = try retry(stalled: { _ in true }, hole: { $0 != 1 }, seconds: 3_600)
        XCTAssertEqual(ample.takes, 10, "with time left the ten takes are made")
        XCTAssertEqual(ample.kept, 1)
    }
}
