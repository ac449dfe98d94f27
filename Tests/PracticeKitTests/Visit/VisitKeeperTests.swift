import AudioKernel
import Dispatch
import Foundation
@testable import PracticeKit
import PracticeProtocol
import PracticeSupport
import TestSupport
import XCTest

/// The visit's rules on the test's clock: a minute of idleness, the warning and the reset run
/// at once, in the order the test decides. The flow is stood in for by the hooks: whether it
/// is busy, and when it has finished ending (the test calls `done` itself).
final class VisitKeeperTests: XCTestCase {
    private let clock = TestClock()
    private let busy = Locked(false)
    private let events = Locked<[String]>([])
    private let begun = Locked<[VisitIdentity]>([])
    private let ends = Locked<[(reason: VisitEndReason, done: @Sendable () -> Void)]>([])
    private let metrics = Metrics()
    private var state: URL!

    override func setUpWithError() throws {
        state = try makeTemporaryDirectory()
        addTeardownBlock { [state] in try? FileManager.default.removeItem(at: state!) }
    }

    private func keeper(warning: Int = 60, reset: Int = 20, identity: VisitIdentity = .shared) -> VisitKeeper {
        clock.manual()
        let (busy, events, begun, ends) = (busy, events, begun, ends)
        return VisitKeeper(settings: .init(identity: identity, warningSeconds: warning, resetSeconds: reset), stateDirectory: state.path,
                           clock: clock, metrics: metrics, logger: Logger(category: "test", sink: DiscardLogSink()),
                           hooks: .init(busy: { busy.withLock { $0 } }, begin: { identity in begun.withLock { $0.append(identity) } },
                                        end: { reason, _, done in ends.withLock { $0.append((reason, done)) } },
                                        publish: { event in events.withLock { $0.append(type(of: event).name) } }))
    }

    private func touch(_ keeper: VisitKeeper) throws -> VisitState {
        var result: Result<VisitState, ControlError>!
        keeper.queue.sync { result = Result { () throws(ControlError) in try keeper.touch() } }
        return try result.get()
    }

    /// What the keeper's queue has done by now (noticed() is asynchronous).
    private func settle(_ keeper: VisitKeeper) { keeper.queue.sync {} }

    private var marker: String { state.appendingPathComponent("visit").path }

    func testATouchBeginsOneVisitWithItsIdentityAndMarksIt() throws {
        let keeper = keeper()
        XCTAssertEqual(keeper.state.phase, VisitPhase.none)
        let first = try touch(keeper)
        XCTAssertEqual(first.phase, .active)
        XCTAssertEqual(first.identity, .shared)
        let again = try touch(keeper)
        XCTAssertEqual(again.visitId, first.visitId, "a second touch keeps the visit")
        XCTAssertEqual(begun.withLock { $0 }, [.shared])
        XCTAssertEqual(events.withLock { $0 }, ["visit.started"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker))
        XCTAssertEqual(metrics.gauge(.visitActive), 1)
    }

    func testReadingBeginsNoVisitButPractisingDoes() {
        let keeper = keeper()
        keeper.noticed(begins: false)
        settle(keeper)
        XCTAssertEqual(keeper.state.phase, VisitPhase.none, "a UI reading topics on the attract screen is nobody's visit")
        keeper.noticed(begins: true)
        settle(keeper)
        XCTAssertEqual(keeper.state.phase, .active)
    }

    func testIdlenessIsWarnedThenEndsTheVisitAndForgetsItsLearnerOnceTheFlowIsDone() throws {
        let keeper = keeper()
        let visit = try touch(keeper)
        clock.advance(by: 59.9)
        XCTAssertEqual(keeper.state.phase, .active)
        clock.advance(by: 0.1)
        XCTAssertEqual(keeper.state.phase, .warning)
        XCTAssertEqual(keeper.state.secondsLeft, 20)
        XCTAssertEqual(events.withLock { $0 }.last, "kiosk.idle_warning")
        clock.advance(by: 19.9)
        XCTAssertTrue(ends.withLock { $0 }.isEmpty)
        clock.advance(by: 0.1)
        let end = try XCTUnwrap(ends.withLock { $0 }.first)
        XCTAssertEqual(end.reason, .idle)
        XCTAssertEqual(keeper.state.phase, .ending, "not ended until the flow has delivered what was in flight")
        XCTAssertThrowsError(try touch(keeper), "nothing begins while the last visit ends") { error in
            XCTAssertEqual((error as? ControlError)?.retryable, true)
        }
        end.done()
        settle(keeper)
        XCTAssertEqual(keeper.state.phase, VisitPhase.none)
        XCTAssertEqual(events.withLock { $0 }, ["visit.started", "kiosk.idle_warning", "visit.ended"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker))
        XCTAssertEqual(metrics.counter(.visits, "idle"), 1)
        XCTAssertEqual(metrics.counter(.idleWarnings, "reset"), 1)
        let next = try touch(keeper)
        XCTAssertNotEqual(next.visitId, visit.visitId, "the next learner's visit is a new one")
        XCTAssertEqual(begun.withLock { $0 }.count, 2)
    }

    func testATouchOrSpeechWithdrawsTheWarningAndStartsTheClockAgain() throws {
        let keeper = keeper()
        _ = try touch(keeper)
        clock.advance(by: 60)
        XCTAssertEqual(keeper.state.phase, .warning)
        clock.advance(by: 19.999)
        keeper.noticed(begins: false)  // speech heard a moment before the reset
        settle(keeper)
        XCTAssertEqual(keeper.state.phase, .active)
        XCTAssertEqual(events.withLock { $0 }.last, "visit.resumed")
        XCTAssertEqual(metrics.counter(.idleWarnings, "resumed"), 1)
        clock.advance(by: 59)
        XCTAssertEqual(keeper.state.phase, .active, "a full minute again from the speech")
        clock.advance(by: 1)
        XCTAssertEqual(keeper.state.phase, .warning)
        XCTAssertTrue(ends.withLock { $0 }.isEmpty)
    }

    /// The touch and the reset's deadline at the same instant: the keeper's one queue orders
    /// them, and either way the outcome is whole (never a warning left over a visit that ended).
    func testATouchExactlyAtTheResetFindsTheVisitEnding() throws {
        let keeper = keeper()
        _ = try touch(keeper)
        clock.advance(by: 80)
        XCTAssertEqual(ends.withLock { $0 }.count, 1, "the deadline ran first")
        XCTAssertThrowsError(try touch(keeper))
        XCTAssertEqual(keeper.state.phase, .ending)
        ends.withLock { $0 }[0].done()
        settle(keeper)
        XCTAssertEqual(try touch(keeper).phase, .active, "once ended, the touch is the next learner's")
    }

    func testSomethingInFlightHoldsTheIdleClock() throws {
        let keeper = keeper()
        _ = try touch(keeper)
        busy.withLock { $0 = true }  // a review being generated for ten minutes
        clock.advance(by: 600)
        XCTAssertEqual(keeper.state.phase, .active)
        busy.withLock { $0 = false }
        clock.advance(by: 59)
        XCTAssertEqual(keeper.state.phase, .active, "idle counts from the last check that found it busy")
        clock.advance(by: 2)
        XCTAssertEqual(keeper.state.phase, .warning)
    }

    func testNoIdleResetWhenTheWarningIsOff() throws {
        let keeper = keeper(warning: 0)
        _ = try touch(keeper)
        clock.advance(by: 86_400)
        XCTAssertEqual(keeper.state.phase, .active)
        XCTAssertTrue(ends.withLock { $0 }.isEmpty)
        XCTAssertEqual(keeper.queue.sync { keeper.end(.done) }.phase, .ending, "\"I'm done\" still ends it")
    }

    func testIAmDoneEndsAndWithoutAVisitChangesNothing() throws {
        let keeper = keeper()
        XCTAssertEqual(keeper.queue.sync { keeper.end(.done) }.phase, VisitPhase.none)
        XCTAssertTrue(ends.withLock { $0 }.isEmpty)
        _ = try touch(keeper)
        XCTAssertEqual(keeper.queue.sync { keeper.end(.done) }.phase, .ending)
        XCTAssertEqual(keeper.queue.sync { keeper.end(.signout) }.phase, .ending, "a second end is the same end")
        XCTAssertEqual(ends.withLock { $0 }.map(\.reason), [.done])
    }

    func testAFlowThatNeverFinishesEndingIsNotWaitedForEver() throws {
        let keeper = keeper()
        _ = try touch(keeper)
        keeper.queue.sync { _ = keeper.end(.done) }
        clock.advance(by: VisitKeeper.endingLimitSeconds)
        settle(keeper)
        XCTAssertEqual(keeper.state.phase, VisitPhase.none)
        ends.withLock { $0 }[0].done()  // late: counted once
        settle(keeper)
        XCTAssertEqual(metrics.counter(.visits, "done"), 1)
    }

    func testAVisitLeftUnderWayByAStoppedDaemonEndsAtTheNextStart() throws {
        let first = keeper()
        _ = try touch(first)
        XCTAssertTrue(FileManager.default.fileExists(atPath: marker))
        let next = keeper()
        XCTAssertTrue(next.endLeftover())
        XCTAssertEqual(metrics.counter(.visits, "restart"), 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: marker))
        XCTAssertFalse(next.endLeftover(), "ended once")
    }

    /// A marker that is not a regular file (a FIFO, a link to /dev/zero) is never read (the
    /// start would wait in open() for ever, or read without end): it counts as a visit left
    /// under way, and is removed.
    func testAMarkerThatIsAFIFOOrALinkIsRemovedUnread() throws {
        for make in [{ (path: String) in mkfifo(path, 0o600) }, { (path: String) in symlink("/dev/zero", path) }] {
            XCTAssertEqual(make(marker), 0)
            XCTAssertTrue(keeper().endLeftover())
            var info = stat()
            XCTAssertNotEqual(lstat(marker, &info), 0, "the marker was left")
        }
        XCTAssertEqual(metrics.counter(.visits, "restart"), 2)
    }

    func testAReloadMidVisitChangesTheNextVisitsIdentityOnly() throws {
        let keeper = keeper(identity: .shared)
        _ = try touch(keeper)
        keeper.update(.init(identity: .personal, warningSeconds: 30, resetSeconds: 10))
        settle(keeper)
        XCTAssertEqual(keeper.state.identity, .shared)
        clock.advance(by: 30)
        XCTAssertEqual(keeper.state.phase, .warning, "the new idle time applies at once")
        keeper.queue.sync { _ = keeper.end(.done) }
        ends.withLock { $0 }[0].done()
        settle(keeper)
        XCTAssertEqual(try touch(keeper).identity, .personal)
    }
}
