import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PracticeKit
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// The REST half of the client against practice-sim over real TCP: every endpoint, the
/// review lifecycle, the contract's error answers and the faults that touch REST calls.
final class BackendClientTests: XCTestCase {
    func testTopicsDecodeFromSnakeCase() async throws {
        let sim = try SimulatorHarness()
        let topics = try await sim.client().topics()
        XCTAssertEqual(topics.map(\.id), ["daily_life", "travel", "workplace", "food_dining", "entertainment", "current_events"])
        XCTAssertEqual(topics[1].labelEn, "Travel")
        XCTAssertEqual(topics[1].labelZh, "旅遊")
        XCTAssertFalse(topics[1].promptHint.isEmpty)
    }

    func testCreateSessionInBothModesAndTheContractsRefusals() async throws {
        let sim = try SimulatorHarness()
        let client = sim.client()
        let created = try await client.createSession(.init(userId: "u1", userName: "Mei", topicId: "travel", mode: .conversation))
        XCTAssertEqual(created.sessionId.count, 36, "a uuid4")
        XCTAssertTrue(created.createdAt.hasPrefix("20"), created.createdAt)
        _ = try await client.createSession(.init(userId: "u1", topicId: nil, mode: .review))

        await assertThrows(.http(status: 400, detail: "topic_id is required for conversation mode")) {
            _ = try await client.createSession(.init(userId: "u1", topicId: nil, mode: .conversation))
        }
        await assertThrows(.http(status: 400, detail: "Unknown topic_id: mars")) {
            _ = try await client.createSession(.init(userId: "u1", topicId: "mars", mode: .conversation))
        }
        XCTAssertEqual(sim.requests("POST", containing: "/sessions").count, 4, "400s are not retried")
    }

    func testUnknownSessionIs404SessionGone() async throws {
        let sim = try SimulatorHarness()
        do {
            _ = try await sim.client().review(sessionID: "no-such-session")
            XCTFail("expected 404")
        } catch {
            XCTAssertEqual(error, .http(status: 404, detail: "Session not found"))
            XCTAssertTrue(error.isSessionGone)
        }
    }

    func testConversationReviewLifecycleWithMarksCorrectionsAndSummary() async throws {
        let sim = try SimulatorHarness()
        let client = sim.client()
        let id = try await client.createSession(.init(userId: "u2", topicId: "daily_life", mode: .conversation)).sessionId
        // Corrections are refused on a live session.
        await assertThrows(.http(status: 400, detail: "Session is not in review state")) {
            _ = try await client.requestCorrection(sessionID: id, .init(segmentId: 1, userMessage: "x"))
        }
        for text in ["I go to market yesterday", "I am working here since three years"] {
            let summary = try await client.sendText(sessionID: id, text: text, onEvent: { _ in }).outcome()
            XCTAssertEqual(summary.transcript, text)
            XCTAssertTrue(summary.hasAudio)
        }
        let ended = try await client.endTalk(sessionID: id)
        XCTAssertEqual(ended.status, .reviewing)
        XCTAssertEqual(ended.mode, .conversation)

        // Poll on the status: the marks come together with `reviewed` (traces 18–19).
        var polls: [Review] = []
        repeat {
            polls.append(try await client.review(sessionID: id))
        } while polls.last!.status == .reviewing && polls.count < 10
        XCTAssertEqual(polls.last?.status, .reviewed)
        XCTAssertFalse(polls.contains { $0.status == .reviewing && $0.hasMarks }, "marks came before the status changed")
        XCTAssertTrue(polls.last!.hasMarks)
        XCTAssertFalse(polls[0].hasMarks, "no marks on the first poll")
        let review = polls.last!
        XCTAssertEqual(review.segments.map(\.turnIndex), [0, 1])
        XCTAssertEqual(review.segments[0].userText, "I go to market yesterday")
        XCTAssertFalse(review.segments[0].aiMarks[0].issueTypes.isEmpty)

        let correction = try await client.requestCorrection(sessionID: id, .init(segmentId: review.segments[1].id, userMessage: "How do I say it?"))
        XCTAssertEqual(correction.segmentId, review.segments[1].id)
        XCTAssertEqual(correction.userMessage, "How do I say it?")
        await assertThrows(.http(status: 404, detail: "Segment not found in this session")) {
            _ = try await client.requestCorrection(sessionID: id, .init(segmentId: 999, userMessage: "x"))
        }

        let value1 = try await client.endSession(sessionID: id).status
        XCTAssertEqual(value1, .completing)
        var final = try await client.review(sessionID: id)
        var completionPolls = 1
        while final.status == .completing && completionPolls < 10 {
            final = try await client.review(sessionID: id)
            completionPolls += 1
        }
        XCTAssertEqual(final.status, .completed)
        XCTAssertNotNil(final.summary)
        XCTAssertEqual(final.summary?.weaknesses.naturalness, nil)
        XCTAssertEqual(final.segments[1].corrections.count, 1, "the correction is kept on its segment")
        await assertThrows(.http(status: 400, detail: "Session already completed")) { _ = try await client.endSession(sessionID: id) }
    }

    func testSessionWithoutSegmentsCompletesAtOnceAndReviewModeEnds() async throws {
        let sim = try SimulatorHarness()
        let client = sim.client()
        let empty = try await client.createSession(.init(userId: "u3", topicId: "travel", mode: .conversation)).sessionId
        let value2 = try await client.endTalk(sessionID: empty).status
        XCTAssertEqual(value2, .reviewing)
        let value3 = try await client.endSession(sessionID: empty).status
        XCTAssertEqual(value3, .completed)

        let review = try await client.createSession(.init(userId: "u3", topicId: nil, mode: .review)).sessionId
        let ended = try await client.endTalk(sessionID: review)
        XCTAssertEqual(ended.status, .ended)
        XCTAssertEqual(ended.mode, .review)
        let after = try await client.review(sessionID: review)
        XCTAssertEqual(after.status, .ended)
        XCTAssertFalse(after.hasMarks)
        XCTAssertNil(after.summary)
    }

    func testReviewModelFailureStillReachesReviewedAndCompletedWithNullSummary() async throws {
        let sim = try SimulatorHarness { $0.faults.reviewFails = true; $0.faults.correctionFails = true }
        let client = sim.client()
        let id = try await client.createSession(.init(userId: "u4", topicId: "travel", mode: .conversation)).sessionId
        _ = try await client.sendText(sessionID: id, text: "hello there", onEvent: { _ in }).outcome()
        _ = try await client.endTalk(sessionID: id)
        var review = try await client.review(sessionID: id)
        for _ in 0..<10 where review.status == .reviewing { review = try await client.review(sessionID: id) }
        XCTAssertEqual(review.status, .reviewed)
        XCTAssertFalse(review.hasMarks)
        // The correction model fails: 500 with a text/plain body.
        await assertThrows(.http(status: 500, detail: "Internal Server Error")) {
            _ = try await client.requestCorrection(sessionID: id, .init(segmentId: review.segments[0].id, userMessage: "?"))
        }
        XCTAssertEqual(sim.requests("POST", containing: "/corrections").count, 1, "a POST 500 is not retried")
        _ = try await client.endSession(sessionID: id)
        for _ in 0..<10 where review.status != .completed { review = try await client.review(sessionID: id) }
        XCTAssertEqual(review.status, .completed)
        XCTAssertNil(review.summary)
    }

    func testProfileEvaluateLearningGoalAndNeedsReview() async throws {
        let sim = try SimulatorHarness()
        let client = sim.client()
        let fresh = try await client.profile(userID: "learner-7")
        XCTAssertEqual(fresh.userId, "learner-7")
        XCTAssertNil(fresh.level)
        XCTAssertFalse(fresh.needsReview)
        // A new profile: every dimension present and empty, no notes yet (trace 29).
        XCTAssertEqual(fresh.profileData.weakPoints, ["grammar": [], "naturalness": [], "sentence_structure": []])
        XCTAssertTrue(fresh.profileData.quickReview.isEmpty)
        XCTAssertEqual(fresh.profileData.progressNotes, "")

        // Talk until some pattern has three examples; needs_review must follow the data.
        var profile = fresh
        for _ in 0..<8 where !profile.needsReview {
            let id = try await client.createSession(.init(userId: "learner-7", userName: "Lin", topicId: "travel", mode: .conversation)).sessionId
            for text in ["one", "two", "three"] { _ = try await client.sendText(sessionID: id, text: text, onEvent: { _ in }).outcome() }
            _ = try await client.endTalk(sessionID: id)
            for _ in 0..<3 { _ = try await client.review(sessionID: id) }
            profile = try await client.profile(userID: "learner-7")
        }
        XCTAssertTrue(profile.needsReview)
        XCTAssertTrue(profile.profileData.weakPoints.values.joined().contains { $0.examples.count >= 3 })
        // The profile was made by GET before any session: its name stays null (trace 29).
        XCTAssertNil(profile.userName)

        let evaluated = try await client.evaluate(userID: "learner-7")
        XCTAssertNotNil(evaluated.level)
        let value4 = try await client.setLearningGoal(userID: "learner-7", goal: "job interviews").learningGoal
        XCTAssertEqual(value4, "job interviews")
        let value5 = try await client.setLearningGoal(userID: "learner-7", goal: nil).learningGoal
        XCTAssertNil(value5)
    }

    func testValidationErrorsAre422WithMessages() async throws {
        let sim = try SimulatorHarness()
        // A body without user_id, sent by hand: the client's own models cannot produce it.
        var request = URLRequest(url: sim.baseURL.appendingPathComponent("sessions"))
        request.httpMethod = "POST"
        request.httpBody = Data("{\"topic_id\": \"travel\"}".utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 422)
        XCTAssertTrue(String(decoding: data, as: UTF8.self).contains("\"loc\":[\"body\",\"user_id\"]"))
    }

    // MARK: - Faults on REST calls

    func testGETIsRetriedThrough503And500() async throws {
        let sim = try SimulatorHarness { $0.faults.failCount = 3; $0.faults.failStatus = 503 }
        let value6 = try await sim.client().topics().count
        XCTAssertEqual(value6, 6)
        XCTAssertEqual(sim.requests("GET", containing: "/topics").map { $0["status"]?.intValue }, [503, 503, 503, 200])

        sim.simulator.faults = { var f = SimulatorFaults(); f.failCount = 2; f.failStatus = 500; return f }()
        let value7 = try await sim.client().topics().count
        XCTAssertEqual(value7, 6, "an idempotent GET survives 500s")
    }

    func testPOSTIsRetriedOn503ButNotOn500() async throws {
        let sim = try SimulatorHarness { $0.faults.failCount = 2; $0.faults.failStatus = 503 }
        let client = sim.client()
        _ = try await client.createSession(.init(userId: "u", topicId: "travel", mode: .conversation))
        XCTAssertEqual(sim.requests("POST", containing: "/sessions").map { $0["status"]?.intValue }, [503, 503, 200])

        sim.simulator.faults = { var f = SimulatorFaults(); f.failCount = 1; f.failStatus = 500; return f }()
        await assertThrows(.http(status: 500, detail: "Internal Server Error")) {
            _ = try await client.createSession(.init(userId: "u", topicId: "travel", mode: .conversation))
        }
        XCTAssertEqual(sim.requests("POST", containing: "/sessions").count, 4)
    }

    func testRetriesGiveUpAfterMaxAttemptsWithTheLastError() async throws {
        let sim = try SimulatorHarness { $0.faults.failCount = 100; $0.faults.failStatus = 503 }
        let client = sim.client { $0.retry.maxAttempts = 3 }
        await assertThrows(.http(status: 503, detail: "Session still connecting, try again shortly")) { _ = try await client.topics() }
        XCTAssertEqual(sim.requests("GET", containing: "/topics").count, 3)
    }

    func testAddedLatencyIsWaitedForAndTheDeadlineCutsACallOff() async throws {
        let sim = try SimulatorHarness { $0.faults.latencyMs = 300 }
        let start = Date()
        _ = try await sim.client().topics()
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.3)

        sim.simulator.faults = { var f = SimulatorFaults(); f.latencyMs = 3_000; return f }()
        let impatient = sim.client { $0.requestTimeout = 0.3; $0.retry = .none }
        let cutOff = Date()
        await assertThrows(.timedOut(seconds: 0.3)) { _ = try await impatient.topics() }
        XCTAssertLessThan(Date().timeIntervalSince(cutOff), 2.5, "the deadline, not the server, ended the call")
    }

    func testConnectionRefusedIsATransportErrorThatSentNothingAndIsRetried() async throws {
        let client = BackendClient(configuration: SimulatorHarness.configuration(try SimulatorHarness.closedPortURL()) { $0.retry.maxAttempts = 3 })
        let start = Date()
        do {
            _ = try await client.createSession(.init(userId: "u", topicId: "travel", mode: .conversation))
            XCTFail("expected a transport error")
        } catch {
            guard case .transport(_, _, let sentNothing) = error else { return XCTFail("got \(error)") }
            XCTAssertTrue(sentNothing)
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
    }

    func testCancellingTheCallingTaskCancelsTheRequest() async throws {
        let sim = try SimulatorHarness { $0.faults.latencyMs = 5_000 }
        let client = sim.client()
        let task = Task.detached { try await client.topics() }
        // Cancel once the request is on the wire (the server has it).
        XCTAssertTrue(sim.arrived.wait(timeout: 5) { $0 == 1 })
        let start = Date()
        task.cancel()
        let result = await task.result
        XCTAssertEqual(result.error as? BackendError, .cancelled)
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
    }

    // MARK: -

    private func assertThrows(_ expected: BackendError, file: StaticString = #filePath, line: UInt = #line,
                              _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("expected \(expected)", file: file, line: line)
        } catch {
            XCTAssertEqual(error as? BackendError, expected, file: file, line: line)
        }
    }
}

extension Result {
    var error: Failure? { if case .failure(let e) = self { return e } else { return nil } }
}
