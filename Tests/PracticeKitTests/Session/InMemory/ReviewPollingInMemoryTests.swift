import Foundation
@testable import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport
import XCTest

/// ``ReviewPolling`` alone, against a backend in memory.
final class ReviewPollingInMemoryTests: XCTestCase {
    private var context: SessionTestContext!
    private var backend: MemoryBackend!
    private var review: ReviewPolling!

    override func setUp() {
        context = SessionTestContext()
        context.settings.pollInterval = 0.02
        backend = MemoryBackend()
        let backend = backend!
        review = ReviewPolling(context: context, backend: { backend })
    }

    private func answer<C: ControlCommand>(_ command: C.Type, _ body: (CommandReply<C>) -> Void) -> Result<JSONValue, ControlError>? {
        let result = Awaitable<Result<JSONValue, ControlError>?>(nil)
        context.run { body(CommandReply<C> { answer in result.update { $0 = answer } }) }
        _ = result.wait(timeout: 5) { $0 != nil }
        return result.value
    }

    func testTheReviewIsPolledUntilItHasMarks() throws {
        backend.endTalkAnswer = .success(try ProtocolDecoder.decode(EndedTalk.self, from: ["session_id": "s1", "status": "reviewing"]))
        backend.reviews = [.success(MemoryBackend.review(status: "reviewing")), .success(MemoryBackend.review(status: "reviewing")),
                           .success(MemoryBackend.review(status: "reviewing", marks: 2))]
        let ended = try XCTUnwrap(answer(Command.SessionEnd.self) { review.endTalk($0) }).get()
        XCTAssertEqual(ended["mode"], "conversation")
        let ready = try XCTUnwrap(context.event("review.ready"))
        XCTAssertEqual(ready["segments"]?.arrayValue?.first?["ai_marks"]?.arrayValue?.count, 2)
        XCTAssertEqual(context.names.filter { $0 == "review.progress" }.count, 3)
        context.settle()
        XCTAssertEqual(context.moves, [.ending, .reviewing, .reviewed])
    }

    func testPollingGivesUpAfterErrorsInARowAndNamesTheWayOn() throws {
        backend.endTalkAnswer = .success(try ProtocolDecoder.decode(EndedTalk.self, from: ["session_id": "s1", "status": "reviewing"]))
        backend.reviews = [.failure(.http(status: 500, detail: "upstream"))]
        _ = answer(Command.SessionEnd.self) { review.endTalk($0) }
        let failed = try XCTUnwrap(context.event("review.failed"))
        XCTAssertEqual(failed["actions"], ["review.get", "review.finish", "session.close"])
        XCTAssertEqual(context.events.value.filter { $0.name == "review.progress" }.last?.data["errors_in_a_row"], 3)
        context.settle()
        XCTAssertEqual(context.stage, .reviewed)
    }

    func testAFinishTheServerHadAlreadyCompletedCompletesHere() throws {
        // `review.finish` is accepted once the review is read.
        context.run { context.stage = .reviewed }
        backend.endSessionAnswer = .failure(.http(status: 400, detail: "Session already completed"))
        backend.reviews = [.success(MemoryBackend.review(status: "completed", marks: 1, summary: true))]
        let finished = try XCTUnwrap(answer(Command.ReviewFinish.self) { review.finish($0) }).get()
        XCTAssertEqual(finished["note"], "already completed")
        let completed = try XCTUnwrap(context.event("session.completed"))
        XCTAssertEqual(completed["note"], "summary ready")
        XCTAssertEqual(completed["summary"]?["overall"], "ok")
        context.settle()
        XCTAssertEqual(context.stage, .completed)
    }

    func testAnAnswerForAClosedSessionIsDropped() throws {
        backend.endTalkAnswer = .success(try ProtocolDecoder.decode(EndedTalk.self, from: ["session_id": "s1", "status": "reviewing"]))
        let result = Awaitable<Result<JSONValue, ControlError>?>(nil)
        context.run {
            review.endTalk(CommandReply { answer in result.update { $0 = answer } })
            context.epoch += 1  // closed while the backend answers
        }
        XCTAssertTrue(result.wait(timeout: 5) { $0 != nil })
        XCTAssertThrowsError(try result.value!.get()) { XCTAssertEqual(($0 as? ControlError)?.code, .invalidState) }
        XCTAssertFalse(context.names.contains("session.ended"))
    }
}
