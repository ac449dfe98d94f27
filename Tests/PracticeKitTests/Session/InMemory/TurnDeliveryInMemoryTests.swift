import Foundation
@testable import PracticeKit
import TestSupport
import XCTest

/// ``TurnDelivery`` alone: a real spool in a temporary directory, the rest in memory.
final class TurnDeliveryInMemoryTests: XCTestCase {
    private var directory: URL!
    private var context: SessionTestContext!
    private var delivery: TurnDelivery!
    private var uploads: [TurnUpload] = []

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("delivery-\(UUID().uuidString)")
        context = SessionTestContext()
        context.settings.turnRetryInitialDelay = 0.05
        context.settings.turnRetryMaxDelay = 0.1
        context.settings.turnRetrySeconds = 0.4
        delivery = TurnDelivery(context: context, spoolDirectory: directory.path)
        uploads = []
        delivery.upload = { [unowned self] kind in
            if case .turn(let upload) = kind { uploads.append(upload) }
        }
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private func take() -> String {
        context.run {
            context.stage = .recording
            delivery.take(wav: [UInt8](repeating: 7, count: 48_044), duration: 1, of: context.active!, endedAt: 1)
        }
        return context.run { uploads.last!.id }
    }

    func testATurnIsSpooledBeforeItsUploadAndLeavesTheSpoolWhenAccepted() {
        let id = take()
        XCTAssertEqual(context.names, ["turn.spooled"])
        XCTAssertEqual(context.stage, .uploading)
        XCTAssertEqual(uploads.map(\.attempt), [1])
        XCTAssertEqual(uploads.first?.wav.count, 48_044)
        XCTAssertEqual(context.run { delivery.entries().map(\.state) }, [.sending], "in the spool while it is sent")
        context.run { delivery.accepted(id) }
        XCTAssertEqual(context.run { delivery.entries().count }, 0)
        XCTAssertEqual(context.acceptedTurns, 1)
        XCTAssertEqual(context.event("turn.accepted")?["attempt"], 1)
    }

    func testAnUnansweredUploadIsSentAgainWithTheSameIDThenLeftPending() {
        let id = take()
        context.run { delivery.failed(.http(status: 503, detail: "still connecting")) }
        XCTAssertEqual(context.event("turn.retrying")?["attempt"], 2)
        XCTAssertTrue(context.events.wait(timeout: 5) { _ in self.context.run { self.uploads.count } == 2 }, "sent again after the backoff")
        XCTAssertEqual(context.run { uploads.map(\.id) }, [id, id], "the same turn, so the same idempotency key")
        // Failing until the retry window closes: kept in the spool, reported pending.
        for _ in 0..<10 where context.run({ delivery.current != nil }) {
            let count = context.run { uploads.count }
            context.run { delivery.failed(.transport(code: 111, message: "refused", sentNothing: true)) }
            _ = context.events.wait(timeout: 2) { _ in self.context.run { self.uploads.count > count || self.delivery.current == nil } }
        }
        let pending = context.event("turn.pending")
        XCTAssertEqual(pending?["reason"], "undelivered")
        XCTAssertEqual(context.stage, .ready)
        XCTAssertEqual(context.run { delivery.entries().map(\.id) }, [id], "an undelivered turn stays in the spool")
    }

    func testARefusedTurnLeavesTheSpoolAndASessionGoneFailsTheSession() {
        _ = take()
        context.run { delivery.failed(.http(status: 400, detail: "bad audio")) }
        XCTAssertNotNil(context.event("turn.rejected"))
        XCTAssertEqual(context.run { delivery.entries().count }, 0)
        XCTAssertEqual(context.stage, .ready)

        let kept = take()
        context.run { delivery.failed(.http(status: 404, detail: "Session not found")) }
        XCTAssertEqual(context.event("turn.pending")?["reason"], "session_gone")
        XCTAssertEqual(context.failures, ["session_gone"])
        XCTAssertEqual(context.run { delivery.entries().map(\.id) }, [kept])
    }

    func testSpoolCommandsRefuseWhatTheyCannotDo() throws {
        let id = take()
        XCTAssertThrowsError(try context.run { try delivery.discard(id) }) { XCTAssertEqual(($0 as? ControlError)?.code, .invalidState) }
        XCTAssertThrowsError(try context.run { try delivery.discard("../../etc/passwd") }) { XCTAssertEqual(($0 as? ControlError)?.code, .badArguments) }
        context.run { delivery.abandon() }
        try context.run { try delivery.discard(id) }
        XCTAssertEqual(context.event("spool.discarded")?["turn_id"], .string(id))
    }

    func testATurnFromAnEarlierRunResumesItsSession() throws {
        let id = take()
        context.run {
            delivery.abandon()
            context.active = nil
            context.stage = .idle
        }
        try context.run { try delivery.retry(id) }
        XCTAssertEqual(context.active?.id, "s1")
        XCTAssertEqual(context.event("session.resumed")?["session_id"], "s1")
        XCTAssertEqual(context.run { uploads.last?.id }, id)
        XCTAssertEqual(context.run { uploads.last?.recordedAt }, nil, "a resent turn has no end-of-turn time")
    }
}
