import Foundation
import PracticeKit
import PracticeProtocol
import PracticeSupport
import SimulatorKit
import TestSupport
import XCTest

/// The three reply streams against practice-sim over real TCP: the typed events in order,
/// the audio bytes exactly as the server had them, and every fault of the contract.
final class ReplyStreamTests: XCTestCase {
    private func session(_ client: BackendClient, mode: SessionMode = .conversation) async throws -> String {
        try await client.createSession(.init(userId: "tester", topicId: mode == .conversation ? "travel" : nil, mode: mode)).sessionId
    }

    func testGreetingStreamsTheWholePhraseThenResponseTimingDone() async throws {
        let sim = try SimulatorHarness()
        let client = sim.client()
        let id = try await session(client)
        let recorder = ReplyRecorder()
        let summary = try await client.startGreeting(sessionID: id, onEvent: recorder.handler).outcome()
        XCTAssertEqual(summary.end, .done)
        XCTAssertNil(summary.transcript, "the greeting has no transcript")
        XCTAssertEqual(recorder.audio, SimulatorHarness.speech.greeting.pcm, "every PCM byte, in order")
        XCTAssertEqual(summary.responseText, SimulatorHarness.speech.greeting.text)
        XCTAssertEqual(Array(recorder.names.drop { $0 == "accepted" || $0 == "audio" }), ["response", "timing", "timing", "done"])
        XCTAssertGreaterThan(summary.audioEvents, 3)
        XCTAssertNotNil(summary.timings["first_audio"])
        XCTAssertNotNil(summary.timings["total"])
        XCTAssertEqual(summary.attempts, 1)
    }

    func testAudioIsPacedAtTheRequestedMultipleOfRealTime() async throws {
        let sim = try SimulatorHarness { $0.pace = 4; $0.firstAudioMs = 150 }
        let client = sim.client()
        let id = try await session(client)
        let start = Date()
        let summary = try await client.startGreeting(sessionID: id, onEvent: { _ in }).outcome()
        let elapsed = Date().timeIntervalSince(start)
        let seconds = Double(SimulatorHarness.speech.greeting.pcm.count) / 48_000
        // The last chunk leaves when the audio before it has played at 4x: at least the
        // phrase minus its last chunk (under 0.5 s) over four.
        XCTAssertGreaterThan(elapsed, (seconds - 0.5) / 4, "paced, not dumped")
        XCTAssertLessThan(elapsed, seconds / 4 + 2)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(summary.firstAudioDelay), 0.15, "first audio after the server's delay")
    }

    func testSpokenTurnIsUploadedAsMultipartWithKeyAndProgress() async throws {
        let sim = try SimulatorHarness()
        let client = sim.client()
        let id = try await session(client)
        let wav = try SimulatorHarness.wav("learner-1")
        let recorder = ReplyRecorder()
        let summary = try await client.sendTurn(sessionID: id, wav: wav, idempotencyKey: "turn-0001", onEvent: recorder.handler).outcome()
        XCTAssertEqual(summary.end, .done)
        XCTAssertEqual(summary.transcript?.isEmpty, false)
        XCTAssertFalse(summary.isVoid)
        XCTAssertEqual(recorder.audio, SimulatorHarness.speech.replies[0].pcm)
        let upload = try XCTUnwrap(sim.requests("POST", containing: "/chat").last)
        XCTAssertEqual(upload["idempotency_key"]?.stringValue, "turn-0001")
        XCTAssertEqual(upload["upload_bytes"]?.intValue, wav.count, "the WAV arrives byte for byte")
        XCTAssertEqual(upload["heard_speech"], .bool(true))
        // Upload progress ends at the multipart body's size, before the reply's first event.
        let progress = recorder.events.compactMap { if case .uploadProgress(let sent, let total) = $0 { return (sent, total) } else { return nil } }
        let last = try XCTUnwrap(progress.last, "no upload progress reported")
        XCTAssertEqual(last.0, last.1)
        XCTAssertGreaterThan(last.0, Int64(wav.count))
        XCTAssertLessThan(recorder.names.lastIndex(of: "progress")!, recorder.names.firstIndex(of: "accepted")!)
    }

    func testSilentTurnIsVoidAndTooShortTurnHasNoTranscript() async throws {
        let sim = try SimulatorHarness()
        let client = sim.client()
        let id = try await session(client)
        let quiet = (0..<24_000).map { Int16(truncatingIfNeeded: ($0 * 7919) % 200 - 100) }  // RMS about 58
        let void = try await client.sendTurn(sessionID: id, wav: SimulatorHarness.wav(samples: quiet), idempotencyKey: "k1", onEvent: { _ in }).outcome()
        XCTAssertEqual(void.transcript, "")
        XCTAssertTrue(void.isVoid)
        // The real server still speaks "Sorry, I didn't catch that" after the empty
        // transcript (trace 05); the turn is empty all the same.
        XCTAssertTrue(void.hasAudio)
        XCTAssertEqual(ReplyOutcome(void, for: .audioTurn), .emptyTranscript)
        XCTAssertFalse(ReplyOutcome.isSaved(void))
        XCTAssertEqual(void.end, .done)

        let blip = (0..<1_200).map { Int16(($0 % 40) * 500 - 10_000) }  // 50 ms, loud
        let short = try await client.sendTurn(sessionID: id, wav: SimulatorHarness.wav(samples: blip), idempotencyKey: "k2", onEvent: { _ in }).outcome()
        XCTAssertNil(short.transcript, "under 100 ms: timing and done only")
        XCTAssertFalse(short.hasAudio)
        XCTAssertEqual(ReplyOutcome(short, for: .audioTurn), .tooShort)
        XCTAssertEqual(short.end, .done)
    }

    func testEmptyUploadAndBlankTextAre400() async throws {
        let sim = try SimulatorHarness()
        let client = sim.client()
        let id = try await session(client)
        do {
            _ = try await client.sendTurn(sessionID: id, wav: Data(), idempotencyKey: "k", onEvent: { _ in }).outcome()
            XCTFail("expected 400")
        } catch { XCTAssertEqual(error, .http(status: 400, detail: "Empty audio file")) }
        do {
            _ = try await client.sendText(sessionID: id, text: "  \n ", onEvent: { _ in }).outcome()
            XCTFail("expected 400")
        } catch { XCTAssertEqual(error, .http(status: 400, detail: "Empty text")) }
    }

    func testTextTurnEchoesTheTextDecodingPythonEscapes() async throws {
        let sim = try SimulatorHarness()
        let client = sim.client()
        let id = try await session(client)
        let text = "Café — 你好 \"quoted\" 🎉"
        let recorder = ReplyRecorder()
        let summary = try await client.sendText(sessionID: id, text: "  \(text) ", onEvent: recorder.handler).outcome()
        XCTAssertEqual(summary.transcript, text, "\\uXXXX escapes and surrogate pairs decoded, whitespace stripped by the server")
        XCTAssertTrue(recorder.names.contains("transcript"))
    }

    /// Right after creation the session is still connecting (503): a typed turn's stream is
    /// retried through it; a recorded turn's is tried once and the 503 handed back, because
    /// the turn's delivery owns its retries (one loop; TurnDeliveryInMemoryTests).
    func testChatRightAfterCreationIsRetriedThroughStillConnecting() async throws {
        let sim = try SimulatorHarness { $0.connectingMs = 250 }
        let client = sim.client { $0.retry.initialDelay = 0.05; $0.retry.maxAttempts = 20 }
        let id = try await session(client)
        let recorder = ReplyRecorder()
        let summary = try await client.sendText(sessionID: id, text: "Hello there", onEvent: recorder.handler).outcome()
        XCTAssertGreaterThan(summary.attempts, 1)
        XCTAssertEqual(summary.end, .done)
        XCTAssertTrue(recorder.events.contains(.retrying(attempt: 1, status: 503)))
        XCTAssertEqual(sim.requests("POST", containing: "/chat/text").count, summary.attempts)

        let other = try await session(client)
        let turn = ReplyRecorder()
        do {
            _ = try await client.sendTurn(sessionID: other, wav: try SimulatorHarness.wav("learner-2"), idempotencyKey: "same-key",
                                          onEvent: turn.handler).outcome()
            XCTFail("a turn's stream retried by itself")
        } catch {
            XCTAssertEqual((error as? BackendError)?.status, 503)
        }
        XCTAssertFalse(turn.events.contains { if case .retrying = $0 { true } else { false } })
        let uploads = sim.requests("POST", containing: "/sessions/\(other)/chat")
        XCTAssertEqual(uploads.count, 1, "sent once: the delivery sends it again, with its key (TurnDeliveryTests counts the keys)")
    }

    func testStart504IsATypedErrorAndNotRetried() async throws {
        let sim = try SimulatorHarness { $0.faults.start504 = true }
        let client = sim.client()
        let id = try await session(client)
        do {
            _ = try await client.startGreeting(sessionID: id, onEvent: { _ in }).outcome()
            XCTFail("expected 504")
        } catch {
            XCTAssertEqual(error, .http(status: 504, detail: "Session connection timed out"))
        }
        XCTAssertEqual(sim.requests("POST", containing: "/start").count, 1, "/start must not be sent twice")
    }

    func testSecondStartHangsThenEndsWithTimingAndDone() async throws {
        let sim = try SimulatorHarness()
        let client = sim.client()
        let id = try await session(client)
        _ = try await client.startGreeting(sessionID: id, onEvent: { _ in }).outcome()
        let recorder = ReplyRecorder()
        let again = try await client.startGreeting(sessionID: id, onEvent: recorder.handler).outcome()
        XCTAssertEqual(again.end, .done)
        XCTAssertFalse(again.hasAudio)
        XCTAssertEqual(recorder.names, ["accepted", "timing", "done"])
    }

    func testDroppedConnectionMidStreamIsInterrupted() async throws {
        let sim = try SimulatorHarness { $0.faults.dropAfterEvents = 3 }
        let client = sim.client()
        let id = try await session(client)
        let recorder = ReplyRecorder()
        let summary = try await client.startGreeting(sessionID: id, onEvent: recorder.handler).outcome()
        guard case .interrupted(let error) = summary.end, case .transport = error else { return XCTFail("got \(summary.end)") }
        XCTAssertEqual(summary.audioEvents, 3)
        XCTAssertNil(summary.responseText)
        XCTAssertFalse(recorder.names.contains("done"))
    }

    func testStreamWithoutDoneIsReportedAsSuch() async throws {
        let sim = try SimulatorHarness { $0.faults.omitDone = true }
        let client = sim.client()
        let id = try await session(client)
        let summary = try await client.sendText(sessionID: id, text: "hello", onEvent: { _ in }).outcome()
        XCTAssertEqual(summary.end, .endedWithoutDone)
        XCTAssertFalse(summary.sawDone)
        XCTAssertNotNil(summary.responseText, "everything but done arrived")
    }

    func testSlowDripDeliversTheSameBytes() async throws {
        let sim = try SimulatorHarness { $0.faults.dripBytes = 997; $0.faults.dripMs = 0 }
        let client = sim.client()
        let id = try await session(client)
        let recorder = ReplyRecorder()
        let summary = try await client.startGreeting(sessionID: id, onEvent: recorder.handler).outcome()
        XCTAssertEqual(summary.end, .done)
        XCTAssertEqual(recorder.audio, SimulatorHarness.speech.greeting.pcm)
    }

    func testSilentDripHitsTheIdleDeadline() async throws {
        let sim = try SimulatorHarness { $0.faults.dripBytes = 8; $0.faults.dripMs = 2_000 }
        let client = sim.client { $0.streamIdleTimeout = 0.5 }
        let id = try await session(client)
        let start = Date()
        let summary = try await client.startGreeting(sessionID: id, onEvent: { _ in }).outcome()
        XCTAssertEqual(summary.end, .interrupted(.timedOut(seconds: 0.5)))
        XCTAssertLessThan(Date().timeIntervalSince(start), 4)
    }

    func testMalformedEventsSpoilOnlyThemselves() async throws {
        let sim = try SimulatorHarness { $0.faults.malformedSSE = true }
        let client = sim.client()
        let id = try await session(client)
        let recorder = ReplyRecorder()
        let summary = try await client.startGreeting(sessionID: id, onEvent: recorder.handler).outcome()
        XCTAssertEqual(summary.end, .done)
        XCTAssertEqual(summary.malformedEvents, 2, "bad base64 and cut JSON; the unknown type and the colon-less line are legal")
        XCTAssertEqual(recorder.events.filter { $0 == .malformed("audio") }.count, 2)
        XCTAssertEqual(recorder.audio, SimulatorHarness.speech.greeting.pcm, "CR and CRLF framed events parse like LF ones")
        XCTAssertEqual(summary.responseText, SimulatorHarness.speech.greeting.text)
    }

    func testOddSizedAudioChunksJoinToTheSameBytes() async throws {
        let sim = try SimulatorHarness { $0.faults.oddChunks = true }
        let client = sim.client()
        let id = try await session(client)
        let recorder = ReplyRecorder()
        _ = try await client.startGreeting(sessionID: id, onEvent: recorder.handler).outcome()
        XCTAssertTrue(recorder.audioChunkSizes.dropLast().allSatisfy { $0 % 2 == 1 }, "\(recorder.audioChunkSizes)")
        XCTAssertEqual(recorder.audio, SimulatorHarness.speech.greeting.pcm)
    }

    func testCancelStopsTheStreamAndTheNextTurnComesBackEmpty() async throws {
        let sim = try SimulatorHarness { $0.pace = 1 }  // real-time pace: the reply takes seconds
        let client = sim.client()
        let id = try await session(client)
        let firstAudio = expectation(description: "first audio")
        firstAudio.assertForOverFulfill = false
        let stream = client.startGreeting(sessionID: id) { event in
            if case .audio = event { firstAudio.fulfill() }
        }
        await fulfillment(of: [firstAudio], timeout: 5)
        let start = Date()
        stream.cancel()
        let summary = try await stream.outcome()
        XCTAssertEqual(summary.end, .cancelled)
        XCTAssertLessThan(Date().timeIntervalSince(start), 1)

        // The server noticed the hang-up: its upstream is still busy, the next turn is empty.
        let deadline = Date().addingTimeInterval(5)
        var next = try await client.sendText(sessionID: id, text: "are you there?", onEvent: { _ in }).outcome()
        while next.hasAudio && Date() < deadline {  // until the server has seen the reset
            next = try await client.sendText(sessionID: id, text: "are you there?", onEvent: { _ in }).outcome()
        }
        XCTAssertFalse(next.hasAudio)
        XCTAssertEqual(next.end, .done)
    }

    func testTurnDuringAReplyComesBackEmpty() async throws {
        let sim = try SimulatorHarness { $0.pace = 1 }
        let client = sim.client()
        let id = try await session(client)
        let accepted = expectation(description: "greeting accepted")
        let greeting = client.startGreeting(sessionID: id) { if case .accepted = $0 { accepted.fulfill() } }
        await fulfillment(of: [accepted], timeout: 5)
        let overlapping = try await client.sendText(sessionID: id, text: "hello?", onEvent: { _ in }).outcome()
        XCTAssertFalse(overlapping.hasAudio, "one reply at a time")
        greeting.cancel()
        _ = try await greeting.outcome()
    }

    func testBackendVanishingMidStreamInterruptsIt() async throws {
        let sim = try SimulatorHarness { $0.pace = 1 }
        let client = sim.client()
        let id = try await session(client)
        let firstAudio = expectation(description: "first audio")
        firstAudio.assertForOverFulfill = false
        let stream = client.startGreeting(sessionID: id) { if case .audio = $0 { firstAudio.fulfill() } }
        await fulfillment(of: [firstAudio], timeout: 5)
        sim.server.stop()
        let summary = try await stream.outcome()
        guard case .interrupted = summary.end else { return XCTFail("got \(summary.end)") }
    }

    func testStreamToAClosedPortFailsAfterRetries() async throws {
        let client = BackendClient(configuration: SimulatorHarness.configuration(try SimulatorHarness.closedPortURL()) { $0.retry.maxAttempts = 3 })
        let recorder = ReplyRecorder()
        do {
            _ = try await client.sendText(sessionID: "x", text: "hi", onEvent: recorder.handler).outcome()
            XCTFail("expected a transport error")
        } catch {
            guard case .transport(_, _, true) = error else { return XCTFail("got \(error)") }
        }
        XCTAssertEqual(recorder.names, ["retrying", "retrying"])
    }

    func testUnknownSessionStreamIs404() async throws {
        let sim = try SimulatorHarness()
        do {
            _ = try await sim.client().sendText(sessionID: "gone", text: "hi", onEvent: { _ in }).outcome()
            XCTFail("expected 404")
        } catch { XCTAssertTrue(error.isSessionGone) }
    }

    func testNetworkLogNamesCallsButNeverPayloads() async throws {
        let sim = try SimulatorHarness()
        let sink = MemoryLogSink()
        let client = sim.client(logger: Logger(category: "backend", sink: sink, threshold: .debug))
        let id = try await session(client)
        let secret = "my secret sentence"
        let text = try await client.sendText(sessionID: id, text: secret, onEvent: { _ in }).outcome()
        let turn = try await client.sendTurn(sessionID: id, wav: try SimulatorHarness.wav("learner-1"), idempotencyKey: "k", onEvent: { _ in }).outcome()
        let lines = sink.records.map(\.message)
        XCTAssertTrue(lines.contains { $0.contains("/chat") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains("\(turn.audioBytes) PCM bytes") })
        let all = lines.joined(separator: "\n")
        XCTAssertFalse(all.contains(secret))
        XCTAssertFalse(all.contains(text.responseText ?? "?"))
        XCTAssertFalse(all.contains(turn.transcript ?? "?"))
        let base64 = Data(SimulatorHarness.speech.replies[0].pcm.prefix(3000)).base64EncodedString().prefix(40)
        XCTAssertFalse(all.contains(base64))
        XCTAssertLessThan(all.utf8.count, 4_000, "sizes only")
    }
}
