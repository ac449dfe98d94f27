import Foundation
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// The client against the real server's recorded answers: one test per file of
/// `shared/talkco-traces`, each replayed byte for byte over real TCP by
/// ``TraceReplayServer``. Each checks the typed outcome the client makes of it (decoded
/// models, errors, reply events and outcomes, audio bytes equal to the recorded audio) and,
/// where the client can make it, that its request is the recorded one.
final class TraceReplayTests: XCTestCase {
    // MARK: - Helpers

    /// Runs one REST call against a server that answers with `name`'s recorded bytes.
    private func rest<T: Sendable>(_ name: String, timeScale: Double = 0,
                                   _ call: @Sendable (BackendClient) async throws(BackendError) -> T) async throws -> (Result<T, BackendError>, Trace, TraceReplayServer) {
        let trace = try Trace.load(name)
        let server = try TraceReplayServer(timeScale: timeScale)
        server.queue(trace)
        let client = BackendClient(configuration: SimulatorHarness.configuration(server.baseURL) { $0.retry = .none })
        let result: Result<T, BackendError>
        do throws(BackendError) { result = .success(try await call(client)) } catch { result = .failure(error) }
        assertRequest(server, matches: trace)
        return (result, trace, server)
    }

    /// A REST call that must decode.
    private func decoded<T: Sendable>(_ name: String, _ call: @Sendable (BackendClient) async throws(BackendError) -> T,
                                      file: StaticString = #filePath, line: UInt = #line) async throws -> (T, Trace) {
        let (result, trace, _) = try await rest(name, call)
        switch result {
        case .success(let value): return (value, trace)
        case .failure(let error):
            XCTFail("\(name): \(error)", file: file, line: line)
            throw error
        }
    }

    /// A REST call that must fail with `expected`.
    private func refused(_ name: String, _ expected: BackendError, _ call: @Sendable (BackendClient) async throws(BackendError) -> some Sendable,
                         file: StaticString = #filePath, line: UInt = #line) async throws {
        let (result, _, _) = try await rest(name, call)
        switch result {
        case .success(let value): XCTFail("\(name) decoded as \(value)", file: file, line: line)
        case .failure(let error): XCTAssertEqual(error, expected, file: file, line: line)
        }
    }

    enum StreamCall { case start, text(String), audio }

    struct Replayed {
        var trace: Trace
        var recorder: ReplyRecorder
        var result: Result<ReplySummary, BackendError>
        var server: TraceReplayServer
        var summary: ReplySummary? { try? result.get() }
        /// The reply's events without the client's own (acceptance, upload progress, retries).
        var serverEvents: [String] { recorder.names.filter { !["accepted", "progress", "retrying"].contains($0) } }
    }

    /// Replays a stream trace through the client's matching call (its session id taken from
    /// the recorded path).
    private func stream(_ name: String, timeScale: Double = 0.1, retry: RetryPolicy = .none,
                        configure: (inout BackendConfiguration) -> Void = { _ in }, cancelAfterAudioEvents: Int? = nil) throws -> Replayed {
        let trace = try Trace.load(name)
        let server = try TraceReplayServer(timeScale: timeScale)
        server.queue(trace)
        let client = BackendClient(configuration: SimulatorHarness.configuration(server.baseURL) {
            $0.retry = retry
            configure(&$0)
        })
        let session = trace.path.split(separator: "/")[1]
        let recorder = ReplyRecorder()
        let reply: ReplyStream
        if trace.path.hasSuffix("/start") {
            reply = client.startGreeting(sessionID: String(session), onEvent: recorder.handler)
        } else if trace.path.hasSuffix("/chat/text") {
            let text = try XCTUnwrap(Trace.parse(Array((trace.requestBody ?? "").utf8))?["text"]?.stringValue)
            reply = client.sendText(sessionID: String(session), text: text, onEvent: recorder.handler)
        } else {
            // The recorded WAV is not stored; a PCM16 24 kHz mono WAV of the recorded size is.
            let samples = ((trace.requestBody.flatMap { Self.recordedWAVBytes($0) } ?? 180_816) - 44) / 2
            let wav = SimulatorHarness.wav(samples: (0..<samples).map { Int16(truncatingIfNeeded: ($0 % 48) * 400 - 9_600) })
            reply = client.sendTurn(sessionID: String(session), wav: wav, idempotencyKey: "trace-\(name)", onEvent: recorder.handler)
        }
        if let count = cancelAfterAudioEvents {
            XCTAssertTrue(recorder.waitForAudioEvents(count), "\(name): fewer than \(count) audio events")
            reply.cancel()
        }
        let result = try XCTUnwrap(reply.wait(timeout: 60), "\(name): no outcome")
        assertRequest(server, matches: trace)
        return Replayed(trace: trace, recorder: recorder, result: result, server: server)
    }

    /// `… 180816 bytes` in the recorded upload's description.
    private static func recordedWAVBytes(_ note: String) -> Int? {
        note.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .punctuationCharacters)) }.first { $0 > 1_000 }
    }

    /// A whole stream: every event in the recorded order, the recorded audio to the byte,
    /// the texts, `done`, and the outcome.
    private func assertWhole(_ replayed: Replayed, _ outcome: ReplyOutcome, request: ReplyOutcome.Request,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let trace = replayed.trace
        let summary = try XCTUnwrap(replayed.summary, "\(trace.name): \(replayed.result)", file: file, line: line)
        XCTAssertEqual(replayed.serverEvents, trace.eventNames, "events out of the recorded order", file: file, line: line)
        XCTAssertEqual(replayed.recorder.audio, trace.audio, "audio bytes differ from the recorded audio", file: file, line: line)
        XCTAssertEqual(summary.audioBytes, trace.audio.count, file: file, line: line)
        XCTAssertEqual(summary.transcript, trace.text(of: "transcript"), file: file, line: line)
        XCTAssertEqual(summary.responseText, trace.text(of: "response"), file: file, line: line)
        XCTAssertEqual(summary.end, .done, file: file, line: line)
        XCTAssertEqual(summary.malformedEvents, 0, file: file, line: line)
        XCTAssertEqual(Set(summary.timings.keys), Set(trace.events.filter { $0.name == "timing" }.compactMap { $0.json?["step"]?.stringValue }),
                       file: file, line: line)
        XCTAssertEqual(ReplyOutcome(summary, for: request), outcome, file: file, line: line)
    }

    /// The client's request has the recorded method, path, Content-Type and JSON body.
    private func assertRequest(_ server: TraceReplayServer, matches trace: Trace, file: StaticString = #filePath, line: UInt = #line) {
        guard let sent = server.requests.first else { return XCTFail("\(trace.name): no request reached the server", file: file, line: line) }
        XCTAssertEqual(sent.method, trace.method, file: file, line: line)
        XCTAssertEqual(sent.path, trace.path, file: file, line: line)
        if let type = trace.requestContentType {
            let sentType = sent.header("Content-Type") ?? ""
            XCTAssertEqual(sentType.split(separator: ";").first.map(String.init), type.split(separator: ";").first.map(String.init), file: file, line: line)
        }
        if let body = trace.requestBody, Trace.parse(Array(body.utf8)) != nil, !Self.untypedRequests.contains(String(trace.name.prefix(2))) {
            XCTAssertEqual(sent.json, Trace.parse(Array(body.utf8)), "request body differs from the recorded one", file: file, line: line)
        }
    }

    /// Recorded requests the typed client cannot send by design (a missing topic_id is sent
    /// as null, an unknown mode or a number as user_name cannot be built): only their
    /// answers are checked.
    private static let untypedRequests: Set<String> = ["39", "41", "42"]

    // MARK: - 01–03: topics, a session, the greeting

    func test01GetTopics() async throws {
        let (topics, trace) = try await decoded("01") { client async throws(BackendError) in try await client.topics() }
        XCTAssertEqual(topics.map(\.id), ["daily_life", "travel", "workplace", "food_dining", "entertainment", "current_events"])
        XCTAssertEqual(topics.count, trace.json?.arrayValue?.count)
        XCTAssertEqual(topics[1].labelZh, "旅遊")  // raw UTF-8 in REST answers
        XCTAssertTrue(topics.allSatisfy { !$0.promptHint.isEmpty })
    }

    func test02CreateSessionConversation() async throws {
        let (created, trace) = try await decoded("02") { client async throws(BackendError) in
            try await client.createSession(.init(userId: "630478590", userName: "Mei", topicId: "daily_life", mode: .conversation))
        }
        XCTAssertEqual(created.sessionId, trace.json?["session_id"]?.stringValue)
        XCTAssertEqual(created.createdAt, "2026-11-23T11:35:29.120723+00:00")
    }

    func test03StartGreeting() throws {
        let replayed = try stream("03")
        try assertWhole(replayed, .answered, request: .greeting)
        XCTAssertNil(replayed.summary?.transcript, "a greeting has no transcript")
    }

    // MARK: - 04–16: turns and every empty answer

    func test04ChatAudioSpeech() throws {
        let replayed = try stream("04")
        try assertWhole(replayed, .answered, request: .audioTurn)
        XCTAssertTrue(ReplyOutcome.isSaved(try XCTUnwrap(replayed.summary)))
        XCTAssertEqual(replayed.server.requests.first?.header("Idempotency-Key"), "trace-04")
    }

    func test05ChatAudioSilenceIsAnEmptyTranscript() throws {
        let replayed = try stream("05")
        // The server speaks "Sorry, I didn't catch that…", but the turn is empty and not saved.
        try assertWhole(replayed, .emptyTranscript, request: .audioTurn)
        XCTAssertFalse(ReplyOutcome.isSaved(try XCTUnwrap(replayed.summary)))
    }

    func test06ChatAudio50msIsTooShort() throws {
        let replayed = try stream("06")
        try assertWhole(replayed, .tooShort, request: .audioTurn)
        XCTAssertEqual(replayed.serverEvents, ["timing", "done"])
    }

    func test07ChatText() throws {
        let replayed = try stream("07")
        try assertWhole(replayed, .answered, request: .textTurn)
        XCTAssertTrue(ReplyOutcome.isSaved(try XCTUnwrap(replayed.summary)))
    }

    func test08ChatTextWhitespaceIs400() throws {
        let replayed = try stream("08")
        XCTAssertEqual(replayed.result, .failure(.http(status: 400, detail: "Empty text")))
        XCTAssertEqual(replayed.server.requests.count, 1, "a 400 is not sent again")
    }

    func test09OverlapFirstTurnIsAnswered() throws {
        try assertWhole(try stream("09"), .answered, request: .textTurn)
    }

    func test10OverlapSecondTurnHasNoAudio() throws {
        let replayed = try stream("10")
        try assertWhole(replayed, .noAudio, request: .textTurn)
        XCTAssertFalse(ReplyOutcome.isSaved(try XCTUnwrap(replayed.summary)))
    }

    func test11BargeInHungUpStream() throws {
        // The recording client hung up after three audio events; so does this one.
        let replayed = try stream("11", cancelAfterAudioEvents: 3)
        let summary = try XCTUnwrap(replayed.summary)
        XCTAssertEqual(summary.end, .cancelled)
        XCTAssertEqual(replayed.serverEvents, ["transcript", "audio", "audio", "audio"])
        XCTAssertEqual(replayed.recorder.audio, replayed.trace.audio)
        XCTAssertFalse(replayed.trace.isWhole)
    }

    func test12BargeInNextTurnHasNoAudio() throws {
        try assertWhole(try stream("12"), .noAudio, request: .textTurn)
    }

    func test13NewsFunctionCallHasNoAudio() throws {
        let replayed = try stream("13")
        try assertWhole(replayed, .noAudio, request: .textTurn)
        XCTAssertEqual(replayed.summary?.timings["total"], 0.162)
    }

    func test14LateTranscriptIsAnswered() throws {
        let replayed = try stream("14")
        try assertWhole(replayed, .answered, request: .audioTurn)
        XCTAssertEqual(Array(replayed.serverEvents.prefix(4)), ["audio", "audio", "audio", "transcript"])
    }

    func test15NoTranscriptIsItsOwnOutcome() throws {
        let replayed = try stream("15")
        try assertWhole(replayed, .noTranscript, request: .audioTurn)
        XCTAssertFalse(ReplyOutcome.isSaved(try XCTUnwrap(replayed.summary)))
    }

    func test16SecondStartHangsThenEndsWithoutAGreeting() throws {
        // 30 s of silence at 1/50 of the recorded time: the idle deadline must outlast it.
        let replayed = try stream("16", timeScale: 0.02)
        try assertWhole(replayed, .noAudio, request: .greeting)
        XCTAssertEqual(replayed.summary?.timings["total"], 30.002)
    }

    // MARK: - 17–28: ending, review, corrections, summary

    func test17DeleteSession() async throws {
        let (ended, _) = try await decoded("17") { client async throws(BackendError) in try await client.endTalk(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2") }
        XCTAssertEqual(ended.status, .reviewing)
        XCTAssertEqual(ended.mode, .conversation)
    }

    func test18ReviewReviewing() async throws {
        let (review, _) = try await decoded("18") { client async throws(BackendError) in try await client.review(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2") }
        XCTAssertEqual(review.status, .reviewing)
        XCTAssertEqual(review.segments.map(\.turnIndex), [0, 1, 2, 3])
        XCTAssertEqual(review.segments.map(\.id), [19, 20, 21, 22])
        XCTAssertFalse(review.hasMarks)
        XCTAssertNil(review.summary)
    }

    func test19ReviewReviewed() async throws {
        let (review, _) = try await decoded("19") { client async throws(BackendError) in try await client.review(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2") }
        XCTAssertEqual(review.status, .reviewed)
        XCTAssertEqual(review.segments.map(\.aiMarks.count), [1, 1, 1, 1])
        XCTAssertEqual(review.segments[0].aiMarks[0].issueTypes, [.grammar])
        XCTAssertFalse(review.segments[0].aiMarks[0].explanation.isEmpty)
    }

    func test20CorrectionCarriesItsSegment() async throws {
        let (correction, _) = try await decoded("20") { client async throws(BackendError) in
            try await client.requestCorrection(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2", .init(segmentId: 19, userMessage: "這句怎麼說比較自然？"))
        }
        XCTAssertEqual(correction.id, 4)
        XCTAssertEqual(correction.segmentId, 19)
        XCTAssertEqual(correction.createdAt, "2026-11-23T11:36:17.842665+00:00")
    }

    /// Defect 1: inside the review a correction has no `segment_id`.
    func test21ReviewWithCorrectionDecodes() async throws {
        let (review, trace) = try await decoded("21") { client async throws(BackendError) in try await client.review(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2") }
        let corrections = review.segments[0].corrections
        XCTAssertEqual(corrections.count, 1)
        XCTAssertEqual(corrections.first?.id, 4)
        XCTAssertEqual(corrections.first?.createdAt, "2026-11-23T11:36:17.842665+00:00")
        XCTAssertNil(trace.json?["segments"]?.arrayValue?.first?["corrections"]?.arrayValue?.first?["segment_id"], "the trace changed")
        // What the daemon passes on keeps the recorded keys.
        XCTAssertEqual(ProtocolEncoder.encode(review)["segments"]?.arrayValue?.first?["corrections"], trace.json?["segments"]?.arrayValue?.first?["corrections"])
    }

    func test22CorrectionUnknownSegmentIs404() async throws {
        try await refused("22", .http(status: 404, detail: "Segment not found in this session")) { client async throws(BackendError) in
            try await client.requestCorrection(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2", .init(segmentId: 999999999, userMessage: "這句怎麼說比較自然？"))
        }
    }

    func test23CorrectionOnALiveSessionIs400() async throws {
        let trace = try Trace.load("23")
        let session = String(trace.path.split(separator: "/")[1])
        let body = try XCTUnwrap(Trace.parse(Array((trace.requestBody ?? "").utf8)))
        let segment = try XCTUnwrap(body["segment_id"]?.intValue), message = try XCTUnwrap(body["user_message"]?.stringValue)
        try await refused("23", .http(status: 400, detail: "Session is not in review state")) { client async throws(BackendError) in
            try await client.requestCorrection(sessionID: session, .init(segmentId: segment, userMessage: message))
        }
    }

    func test24EndSessionAnswersWithoutMode() async throws {
        let (ended, trace) = try await decoded("24") { client async throws(BackendError) in try await client.endSession(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2") }
        XCTAssertEqual(ended.status, .completing)
        XCTAssertNil(trace.json?["mode"])
    }

    func test25ReviewCompleting() async throws {
        let (review, _) = try await decoded("25") { client async throws(BackendError) in try await client.review(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2") }
        XCTAssertEqual(review.status, .completing)
        XCTAssertNil(review.summary)
        XCTAssertEqual(review.segments[0].corrections.count, 1)
    }

    func test26ReviewCompletingWithSummaryIsStillCompleting() async throws {
        let (review, _) = try await decoded("26") { client async throws(BackendError) in try await client.review(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2") }
        XCTAssertEqual(review.status, .completing, "poll until the status changes, not until a field appears")
        XCTAssertNotNil(review.summary)
    }

    func test27ReviewCompleted() async throws {
        let (review, trace) = try await decoded("27") { client async throws(BackendError) in try await client.review(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2") }
        XCTAssertEqual(review.status, .completed)
        let summary = try XCTUnwrap(review.summary)
        XCTAssertFalse(summary.strengths.isEmpty)
        XCTAssertFalse(summary.overall.isEmpty)
        XCTAssertEqual(ProtocolEncoder.encode(summary), trace.json?["summary"], "the summary passed on differs from the server's")
    }

    func test28EndAgainIs400AlreadyCompleted() async throws {
        try await refused("28", .http(status: 400, detail: "Session already completed")) { client async throws(BackendError) in
            try await client.endSession(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2")
        }
    }

    // MARK: - 29–33: the profile

    /// Defect 6: null fields pass through as null.
    func test29ProfileOfANewUserKeepsItsNulls() async throws {
        let (profile, trace) = try await decoded("29") { client async throws(BackendError) in try await client.profile(userID: "353836119") }
        XCTAssertNil(profile.userName)
        XCTAssertNil(profile.level)
        XCTAssertNil(profile.learningGoal)
        XCTAssertEqual(profile.profileData.progressNotes, "")
        let passedOn = ProtocolEncoder.encode(profile)
        for key in ["user_name", "level", "learning_goal"] { XCTAssertEqual(passedOn[key], .null, "\(key) was dropped") }
        XCTAssertEqual(passedOn, trace.json, "the profile passed on differs from the server's")
    }

    func test30ProfileAfterASession() async throws {
        let (profile, trace) = try await decoded("30") { client async throws(BackendError) in try await client.profile(userID: "630478590") }
        XCTAssertEqual(profile.userName, "Mei")
        XCTAssertNil(profile.level)
        XCTAssertEqual(profile.profileData.weakPoints["grammar"]?.first?.examples.count, 2)
        XCTAssertEqual(ProtocolEncoder.encode(profile), trace.json)
    }

    func test31Evaluate() async throws {
        let (profile, _) = try await decoded("31") { client async throws(BackendError) in try await client.evaluate(userID: "630478590") }
        XCTAssertEqual(profile.level, "B1")
    }

    func test32LearningGoalSetIsTrimmed() async throws {
        let (profile, _) = try await decoded("32") { client async throws(BackendError) in
            try await client.setLearningGoal(userID: "630478590", goal: "  Speak up in meetings  ")
        }
        XCTAssertEqual(profile.learningGoal, "Speak up in meetings")
    }

    func test33LearningGoalNullClearsIt() async throws {
        let (profile, trace) = try await decoded("33") { client async throws(BackendError) in try await client.setLearningGoal(userID: "630478590", goal: nil) }
        XCTAssertNil(profile.learningGoal)
        XCTAssertEqual(ProtocolEncoder.encode(profile)["learning_goal"], .null)
        XCTAssertEqual(trace.requestBody, "{\"learning_goal\": null}")
    }

    // MARK: - 34–38: review mode

    func test34CreateSessionReviewMode() async throws {
        let (created, _) = try await decoded("34") { client async throws(BackendError) in
            try await client.createSession(.init(userId: "630478590", userName: "Mei", topicId: nil, mode: .review))
        }
        XCTAssertEqual(created.sessionId, "7a493f25-c9e8-4f4a-be10-1cd4f5a752e2")
    }

    func test35ReviewModeGreeting() throws {
        try assertWhole(try stream("35"), .answered, request: .greeting)
    }

    func test36ReviewModeChatText() throws {
        try assertWhole(try stream("36"), .answered, request: .textTurn)
    }

    func test37ReviewModeDeleteEnds() async throws {
        let (ended, _) = try await decoded("37") { client async throws(BackendError) in try await client.endTalk(sessionID: "7a493f25-c9e8-4f4a-be10-1cd4f5a752e2") }
        XCTAssertEqual(ended.status, .ended)
        XCTAssertEqual(ended.mode, .review)
    }

    func test38ReviewModeReview() async throws {
        let (review, _) = try await decoded("38") { client async throws(BackendError) in try await client.review(sessionID: "7a493f25-c9e8-4f4a-be10-1cd4f5a752e2") }
        XCTAssertEqual(review.status, .ended)
        XCTAssertEqual(review.segments.count, 1)
        XCTAssertFalse(review.hasMarks)
        XCTAssertNil(review.summary)
    }

    // MARK: - 39–44: refusals

    func test39CreateSessionWithoutTopicIs400() async throws {
        try await refused("39", .http(status: 400, detail: "topic_id is required for conversation mode")) { client async throws(BackendError) in
            try await client.createSession(.init(userId: "630478590", userName: "Mei", topicId: nil, mode: .conversation))
        }
    }

    func test40CreateSessionUnknownTopicIs400() async throws {
        try await refused("40", .http(status: 400, detail: "Unknown topic_id: space_travel")) { client async throws(BackendError) in
            try await client.createSession(.init(userId: "630478590", userName: "Mei", topicId: "space_travel", mode: .conversation))
        }
    }

    func test41CreateSessionBadModeIs400() async throws {
        try await refused("41", .http(status: 400, detail: "Invalid mode: x")) { client async throws(BackendError) in
            try await client.createSession(.init(userId: "630478590", userName: "Mei", topicId: "daily_life", mode: .conversation))
        }
    }

    func test42CreateSessionValidationIs422WithAList() async throws {
        try await refused("42", .validation(messages: ["body.user_id: Field required", "body.user_name: Input should be a valid string"])) { client async throws(BackendError) in
            try await client.createSession(.init(userId: "", topicId: "daily_life", mode: .conversation))
        }
    }

    func test43ReviewUnknownSessionIs404SessionGone() async throws {
        let (result, _, _) = try await rest("43") { client async throws(BackendError) in try await client.review(sessionID: "d8a5077e-2469-4f09-a60d-51d689e63863") }
        XCTAssertEqual(result.map { _ in 0 }, .failure(.http(status: 404, detail: "Session not found")))
        if case .failure(let error) = result { XCTAssertTrue(error.isSessionGone) }
    }

    /// Defect 5: a 500 is an answer (backend_error with its status), not an outage.
    func test44CorrectionUpstreamFailsIs500PlainText() async throws {
        let (result, trace, _) = try await rest("44") { client async throws(BackendError) in
            try await client.requestCorrection(sessionID: "8074418d-b3a9-4639-bb71-697456bcdbc2", .init(segmentId: 19, userMessage: "可以再解釋一次嗎？"))
        }
        XCTAssertEqual(trace.contentType, "text/plain; charset=utf-8")
        guard case .failure(let error) = result else { return XCTFail("decoded a 500") }
        XCTAssertEqual(error, .http(status: 500, detail: "Internal Server Error"))
        let reported = ControlError(error)
        XCTAssertEqual(reported.code, .backendError)
        XCTAssertEqual(reported.status, 500)
        XCTAssertTrue(reported.retryable)
    }

    // MARK: - 45–53: an upstream slow, refusing, gone

    func test45CreateSessionWithASlowUpstream() async throws {
        let (created, _) = try await decoded("45") { client async throws(BackendError) in
            try await client.createSession(.init(userId: "630478590", userName: "Mei", topicId: "daily_life", mode: .conversation))
        }
        XCTAssertEqual(created.sessionId, "cdae1295-e886-4509-8f3c-d702906bf4fa")
    }

    func test46ChatTextStillConnectingIs503AndRetried() throws {
        var retry = RetryPolicy()
        retry.maxAttempts = 3
        retry.initialDelay = 0.01
        retry.maxDelay = 0.02
        let replayed = try stream("46", retry: retry)
        XCTAssertEqual(replayed.result, .failure(.http(status: 503, detail: "Session still connecting, try again shortly")))
        XCTAssertEqual(replayed.server.requests.count, 3, "503 is the one stream answer sent again")
        XCTAssertEqual(replayed.recorder.events.filter { if case .retrying(_, 503) = $0 { return true } else { return false } }.count, 2)
    }

    /// A turn's upload answered 503 is handed back at once, with its key: the turn's
    /// delivery owns its retries (one loop, with jitter; TurnDeliveryInMemoryTests), so the
    /// stream sends it once whatever the client's retry policy.
    func test47ChatAudioStillConnectingIs503AndHandedToTheDelivery() throws {
        var retry = RetryPolicy()
        retry.maxAttempts = 2
        retry.initialDelay = 0.01
        let replayed = try stream("47", retry: retry)
        XCTAssertEqual(replayed.result, .failure(.http(status: 503, detail: "Session still connecting, try again shortly")))
        XCTAssertEqual(replayed.server.requests.count, 1)
        XCTAssertEqual(replayed.server.requests.first?.header("Idempotency-Key"), "trace-47", "the turn's key")
    }

    func test48CreateSessionWhileUpstreamRefuses() async throws {
        let (created, _) = try await decoded("48") { client async throws(BackendError) in
            try await client.createSession(.init(userId: "630478590", userName: "Mei", topicId: "daily_life", mode: .conversation))
        }
        XCTAssertEqual(created.sessionId, "0fba7aa0-f328-4756-8819-c0acc995adec")
    }

    func test49StartUpstreamRefusesIs504AfterFifteenSeconds() throws {
        let replayed = try stream("49", timeScale: 0.02)
        XCTAssertEqual(replayed.result, .failure(.http(status: 504, detail: "Session connection timed out")))
        XCTAssertEqual(replayed.server.requests.count, 1, "a 504 is not retried")
    }

    func test50ChatTextAfter504Is404() throws {
        let replayed = try stream("50")
        XCTAssertEqual(replayed.result, .failure(.http(status: 404, detail: "Session not found")))
    }

    func test51StartAfter504Is404() throws {
        let replayed = try stream("51")
        XCTAssertEqual(replayed.result, .failure(.http(status: 404, detail: "Session not found")))
    }

    func test52DeleteAfter504Is404() async throws {
        try await refused("52", .http(status: 404, detail: "Session not found")) { client async throws(BackendError) in
            try await client.endTalk(sessionID: "0fba7aa0-f328-4756-8819-c0acc995adec")
        }
    }

    func test53ReviewAfter504StillReadsActive() async throws {
        let (review, _) = try await decoded("53") { client async throws(BackendError) in try await client.review(sessionID: "0fba7aa0-f328-4756-8819-c0acc995adec") }
        XCTAssertEqual(review.status, .active)
        XCTAssertTrue(review.segments.isEmpty)
        XCTAssertNil(review.summary)
    }

    // MARK: - 54: text as the server escapes it

    func test54NonASCIITextComesBackStrippedAndEscaped() throws {
        let replayed = try stream("54")
        try assertWhole(replayed, .answered, request: .textTurn)
        XCTAssertEqual(replayed.summary?.transcript, "我很喜歡 travel")
        XCTAssertTrue(String(decoding: replayed.trace.events[0].data, as: UTF8.self).contains("\\u6211"), "the server escapes non-ASCII in SSE data")
    }

    /// Every file of the folder has its test here (a new trace needs one).
    func testEveryTraceFileHasATest() throws {
        let names = Trace.all
        XCTAssertEqual(names.count, 54, "traces in \(Trace.directory)")
        // Linux's XCTest has no runtime list of methods: the source says what is tested.
        let source = try String(contentsOfFile: #filePath, encoding: .utf8)
        for name in names { XCTAssertTrue(source.contains("func test\(name.prefix(2))"), "no test for \(name)") }
    }
}
