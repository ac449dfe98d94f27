import AudioKernel
import Foundation
@testable import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// ``ReplyPlayback`` alone: the backend's streams, the speaker and the player's events in memory.
final class ReplyPlaybackInMemoryTests: XCTestCase {
    private var context: SessionTestContext!
    private var backend: MemoryBackend!
    private var audio: MemoryAudio!
    private var replies: ReplyPlayback!

    override func setUp() {
        context = SessionTestContext()
        context.settings.drainTimeout = 0.3
        backend = MemoryBackend()
        audio = MemoryAudio()
        let backend = backend!
        replies = ReplyPlayback(context: context, backend: { backend }, audio: audio)
    }

    /// What the replies told the delivery of each turn's upload.
    private let reported = Awaitable([(id: String, outcome: String)]())

    private func upload(_ id: String) -> ReplyKind {
        let reported = reported
        return .turn(TurnUpload(id: id, wav: [UInt8](repeating: 0, count: 44), attempt: 1, recordedAt: nil) { outcome in
            let word: String = switch outcome { case .accepted: "accepted"; case .failed: "failed"; case .notSent: "not sent" }
            reported.update { $0.append((id, word)) }
        })
    }

    func testAReplysTextWaitsForItsSoundAndTheReplyFinishesWhenBothEnded() throws {
        context.run { context.stage = .uploading; replies.start(upload("t1")) }
        let stream = try XCTUnwrap(backend.streams.first)
        XCTAssertEqual(stream.request, .turn("t1"))
        stream.send(.accepted)
        stream.send(.transcript("I went to Paris"))
        stream.send(.response("How was it?"))
        stream.sendAudio(bytes: 4_800)
        XCTAssertNotNil(context.event("transcript"))
        context.settle()
        XCTAssertEqual(context.stage, .replying)
        XCTAssertFalse(context.names.contains("reply.text"), "no text before the sound")
        XCTAssertEqual(audio.snapshot.begun, [1])
        XCTAssertEqual(audio.snapshot.bytes, 4_800, "audio goes to the speaker without the session's queue")
        context.run { replies.playerEvent(.started(latencyFrames: 960, reply: 1), at: DispatchTime.now().uptimeNanoseconds) }
        XCTAssertEqual(context.event("reply.text")?["text"], "How was it?")
        stream.end(transcript: "I went to Paris")
        context.settle()
        XCTAssertFalse(context.names.contains("reply.finished"), "the speaker still plays")
        XCTAssertEqual(audio.snapshot.ended, [1])
        context.run { replies.playerEvent(.finished(PlaybackReport(playedSeconds: 0.1, interrupted: false, underruns: 0, reply: 1)),
                                          at: DispatchTime.now().uptimeNanoseconds) }
        let finished = try XCTUnwrap(context.event("reply.finished"))
        XCTAssertEqual(finished["outcome"], "answered")
        XCTAssertEqual(finished["complete"], true)
        XCTAssertEqual(context.stage, .ready)
        XCTAssertFalse(context.run { replies.isActive })
    }

    /// A speaker without a clock (an unpaced file) starts the sound as soon as the first
    /// chunk is queued, on its own thread, so its `started` may carry a time before
    /// `enqueue` returned. The chunk's arrival is taken before it is queued: before, the
    /// arrival was later than the sound, and `first_audio_to_sound_ms` trapped on an
    /// unsigned overflow (the daemon died of SIGILL in UnpacedSpeakerTests, 1 run in 10).
    func testASoundStartedWhileItsFirstChunkWasQueuedIsMeasuredNotATrap() throws {
        context.run { context.stage = .uploading; replies.start(upload("t1")) }
        let stream = try XCTUnwrap(backend.streams.first)
        stream.send(.accepted)
        stream.send(.transcript("I went to Paris"))
        stream.sendAudio(bytes: 4_800)
        let soundAt = try XCTUnwrap(audio.firstChunkAt)
        context.settle()
        context.run { replies.playerEvent(.started(latencyFrames: 0, reply: 1), at: soundAt) }
        stream.end(transcript: "I went to Paris")
        context.settle()
        context.run { replies.playerEvent(.finished(PlaybackReport(playedSeconds: 0.1, interrupted: false, underruns: 0, reply: 1)),
                                          at: DispatchTime.now().uptimeNanoseconds) }
        let finished = try XCTUnwrap(context.event("reply.finished"))
        let measured = try XCTUnwrap(finished["first_audio_to_sound_ms"]?.doubleValue)
        XCTAssertGreaterThanOrEqual(measured, 0)
        XCTAssertLessThan(measured, 1_000)
        // The histogram took the same measure, not a wrapped 1.8e10 s.
        let sum = context.metrics.exposition().split(separator: "\n").first { $0.hasPrefix("practiced_first_audio_to_sound_seconds_sum ") }
        let seconds = try XCTUnwrap(sum?.split(separator: " ").last.flatMap { Double($0) })
        XCTAssertGreaterThanOrEqual(seconds, 0)
        XCTAssertLessThan(seconds, 1)
    }

    func testAnEmptyTranscriptStopsTheSoundAtOnceAndIsToldAsUnanswered() throws {
        context.run { context.stage = .uploading; replies.start(upload("t1")) }
        let stream = try XCTUnwrap(backend.streams.first)
        stream.send(.accepted)
        stream.sendAudio(bytes: 960)
        stream.send(.transcript(""))
        stream.sendAudio(bytes: 960)
        XCTAssertEqual(context.event("turn.unanswered")?["outcome"], "empty_transcript")
        XCTAssertEqual(audio.snapshot.stopped, [1], "stopped on the stream's own queue")
        XCTAssertEqual(audio.snapshot.bytes, 960, "no chunk after the empty transcript reaches the speaker")
        stream.end(transcript: "", audioBytes: 1_920)
        XCTAssertEqual(context.event("reply.finished")?["outcome"], "empty_transcript")
    }

    func testABargeInDrainsTheStoppedStreamBeforeTheNextUpload() throws {
        context.run { context.stage = .uploading; replies.start(upload("t1")) }
        let first = try XCTUnwrap(backend.streams.first)
        first.send(.accepted)
        first.sendAudio(bytes: 960)
        context.settle()
        context.run { replies.bargeIn() }
        XCTAssertEqual(context.event("reply.finished")?["outcome"], "interrupted")
        XCTAssertFalse(first.cancelled, "the stopped stream is read to its end, not hung up")
        context.run { replies.start(upload("t2")) }
        XCTAssertEqual(context.event("reply.waiting")?["turn_id"], "t2")
        XCTAssertEqual(backend.streams.count, 1, "the next upload waits for the drain")
        first.end()
        XCTAssertEqual(context.event("reply.drained")?["timed_out"], false)
        context.settle()
        XCTAssertEqual(backend.streams.count, 2, "the next upload goes once the drain ended")
        XCTAssertEqual(backend.streams.last?.request, .turn("t2"))
        XCTAssertEqual(reported.value.map { "\($0.id) \($0.outcome)" }, ["t1 accepted"], "the delivery hears of t1 once")
    }

    func testADrainPastItsDeadlineIsHungUpAndTheNextTurnIsMarked() throws {
        // The daemon's drain deadline (10 s), on the test's clock.
        context.settings.drainTimeout = SessionSettings(userID: "learner-1").drainTimeout
        XCTAssertEqual(context.settings.drainTimeout, 10)
        context.clock.manual()
        context.run { context.stage = .greeting; replies.start(.greeting) }
        let greeting = try XCTUnwrap(backend.streams.first)
        context.run { replies.bargeIn() }
        context.run { context.stage = .uploading; replies.start(upload("t1")) }
        context.clock.advance(by: context.settings.drainTimeout - 0.01)
        XCTAssertNil(context.event("reply.drained", timeout: 0), "hung up before its deadline")
        context.clock.advance(by: 0.02)
        XCTAssertEqual(context.event("reply.drained", timeout: 0)?["timed_out"], true)
        XCTAssertTrue(greeting.cancelled)
        context.settle()
        XCTAssertEqual(backend.streams.count, 2, "the next upload goes once the drain was hung up")
        let next = try XCTUnwrap(backend.streams.last)
        next.send(.accepted)
        next.end(transcript: "hi", audioBytes: 0)
        XCTAssertEqual(context.event("turn.unanswered")?["after_interruption"], true, "an empty answer after a hang-up says why")
    }

    func testAStreamThatBreaksAfterTheTurnWasTakenIsIncompleteAndNotSentAgain() throws {
        context.run { context.stage = .uploading; replies.start(upload("t1")) }
        let stream = try XCTUnwrap(backend.streams.first)
        stream.send(.accepted)
        stream.finish(.failure(.transport(code: 104, message: "reset", sentNothing: false)))
        XCTAssertNotNil(context.event("reply.incomplete"))
        context.settle()
        XCTAssertEqual(reported.value.map(\.outcome), ["accepted"], "a taken turn is told taken, once, and never failed")
        // Before the backend took it, the same break is the delivery's to retry.
        context.run { replies.start(upload("t2")) }
        backend.streams.last?.finish(.failure(.transport(code: 111, message: "refused", sentNothing: true)))
        context.settle()
        XCTAssertEqual(reported.value.map { "\($0.id) \($0.outcome)" }, ["t1 accepted", "t2 failed"])
    }
}
