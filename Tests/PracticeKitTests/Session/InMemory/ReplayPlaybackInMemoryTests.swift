import AudioKernel
import Foundation
@testable import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// ``ReplayPlayback`` alone (`reply.replay`, issue 69): the reply it keeps comes from a real
/// ``ReplyPlayback`` fed by a backend stream in memory, the speaker is in memory.
final class ReplayPlaybackInMemoryTests: XCTestCase {
    private var context: SessionTestContext!
    private var backend: MemoryBackend!
    private var audio: MemoryAudio!
    private var replies: ReplyPlayback!
    private var replay: ReplayPlayback!

    override func setUp() {
        context = SessionTestContext()
        backend = MemoryBackend()
        audio = MemoryAudio()
        let backend = backend!
        replies = ReplyPlayback(context: context, backend: { backend }, audio: audio)
        replay = ReplayPlayback(context: context, audio: audio)
        replies.soundBegan = { [unowned self] take, turnID, greeting in replay.keep(take, turnID: turnID, greeting: greeting) }
    }

    /// The greeting streams `bytes` of audio, sounds, and finishes.
    private func hearGreeting(bytes: Int) throws {
        context.run { context.stage = .greeting; replies.start(.greeting) }
        let stream = try XCTUnwrap(backend.streams.last)
        stream.sendAudio(bytes: bytes)
        let number = audio.snapshot.begun.last!
        context.run { replies.playerEvent(.started(latencyFrames: 0, reply: number), at: DispatchTime.now().uptimeNanoseconds) }
        stream.end(audioBytes: bytes)
        context.settle()
        context.run { replies.playerEvent(.finished(PlaybackReport(playedSeconds: Double(bytes) / 48_000, interrupted: false, underruns: 0, reply: number)),
                                          at: DispatchTime.now().uptimeNanoseconds) }
        XCTAssertNotNil(context.event("reply.finished"))
        context.run { context.stage = .ready }
    }

    private func replayError(rate: Double?) -> ControlError? {
        context.run {
            do throws(ControlError) {
                _ = try replay.replay(rate: rate)
                return nil
            } catch { return error }
        }
    }

    func testBeforeTheTutorSpokeThereIsNothingToPlayAgain() {
        let error = replayError(rate: nil)
        XCTAssertEqual(error?.code, .invalidState)
        XCTAssertTrue(error?.message.contains("no reply to play again") ?? false, error?.message ?? "")
        XCTAssertTrue(audio.replays.isEmpty)
    }

    func testTheGreetingIsReplayedWholeAtThePlayersRateByDefault() throws {
        try hearGreeting(bytes: 96_000)  // 2 s
        audio.playbackRate = 0.75
        let result = try context.run { () throws(ControlError) in try replay.replay(rate: nil) }
        XCTAssertEqual(result.rate, 0.75)
        XCTAssertEqual(result.durationS, 2.667, accuracy: 0.001)
        XCTAssertTrue(result.greeting)
        XCTAssertNil(result.turnId)
        XCTAssertEqual(audio.replays.map(\.bytes), [96_000])
        XCTAssertEqual(audio.replays.map(\.rate), [0.75])
        XCTAssertEqual(context.event("reply.replaying")?["rate"], .double(0.75))
        XCTAssertEqual(context.metrics.counter(.replays, "reply"), 1)
        XCTAssertTrue(context.run { replay.isPlaying })
        context.run { replay.playerEvent(.finished(PlaybackReport(playedSeconds: 2.667, interrupted: false, underruns: 0, reply: result.sound))) }
        let finished = try XCTUnwrap(context.event("reply.replay_finished"))
        XCTAssertEqual(finished["interrupted"], false)
        XCTAssertEqual(finished["sound"], .int(result.sound))
        XCTAssertFalse(context.run { replay.isPlaying })
    }

    /// 0, negative, NaN, infinite, too slow, too fast: refused by name, nothing played.
    func testARateOutsideHalfToTwiceIsRefusedAndNothingPlays() throws {
        try hearGreeting(bytes: 4_800)
        for rate in [0, -1, .nan, .infinity, -.infinity, 0.49, 2.01, 10, 1e308, .leastNonzeroMagnitude] {
            let error = replayError(rate: rate)
            XCTAssertEqual(error?.code, .badArguments, "\(rate)")
            XCTAssertTrue(error?.message.contains("'rate' must be from 0.5 to 2.0") ?? false, error?.message ?? "")
        }
        XCTAssertTrue(audio.replays.isEmpty)
        XCTAssertFalse(context.names.contains("reply.replaying"))
        XCTAssertNil(replayError(rate: 0.5))
        XCTAssertNil(replayError(rate: 2.0))
    }

    /// A second replay while the first plays: the first is stopped (and told interrupted
    /// when the player ends it, after the second began), the second is the one playing.
    func testASecondReplayStopsTheFirst() throws {
        try hearGreeting(bytes: 48_000)
        let first = try context.run { () throws(ControlError) in try replay.replay(rate: 0.6) }
        context.run { replay.playerEvent(.started(latencyFrames: 0, reply: first.sound)) }
        let second = try context.run { () throws(ControlError) in try replay.replay(rate: 1.0) }
        context.run { replay.playerEvent(.started(latencyFrames: 0, reply: second.sound)) }
        XCTAssertNotEqual(first.sound, second.sound)
        XCTAssertEqual(audio.snapshot.stopped, [first.sound])
        // The first one's end, after the second began, is not the second's.
        context.run { replay.playerEvent(.finished(PlaybackReport(playedSeconds: 0.2, interrupted: true, underruns: 0, reply: first.sound))) }
        XCTAssertTrue(context.run { replay.isPlaying }, "the first one's end is not the second's")
        context.run { replay.playerEvent(.finished(PlaybackReport(playedSeconds: 1.0, interrupted: false, underruns: 0, reply: second.sound))) }
        XCTAssertFalse(context.run { replay.isPlaying })
        let ends = context.events.value.filter { $0.name == "reply.replay_finished" }.map(\.data)
        XCTAssertEqual(ends.map { $0["sound"] }, [.int(first.sound), .int(second.sound)])
        XCTAssertEqual(ends.map { $0["interrupted"] }, [true, false])
        // A sound that is no replay's, or told twice, tells nothing.
        context.run { replay.playerEvent(.finished(PlaybackReport(playedSeconds: 1.0, interrupted: false, underruns: 0, reply: second.sound))) }
        context.run { replay.playerEvent(.finished(PlaybackReport(playedSeconds: 1.0, interrupted: false, underruns: 0, reply: 999))) }
        XCTAssertEqual(context.names.filter { $0 == "reply.replay_finished" }.count, 2)
    }

    /// A replay replaced before its first sample reached the device is never told by the
    /// player: its end (interrupted, nothing played) is told at once.
    func testAReplayReplacedBeforeItSoundedIsToldInterrupted() throws {
        try hearGreeting(bytes: 48_000)
        let first = try context.run { () throws(ControlError) in try replay.replay(rate: 1) }
        _ = try context.run { () throws(ControlError) in try replay.replay(rate: 1) }
        let ends = context.events.value.filter { $0.name == "reply.replay_finished" }.map(\.data)
        XCTAssertEqual(ends.map { $0["sound"] }, [.int(first.sound)])
        XCTAssertEqual(ends.first?["interrupted"], true)
        XCTAssertEqual(ends.first?["played_s"], .double(0))
        XCTAssertTrue(context.run { replay.isPlaying })
        // The player's late word of the first one's end changes nothing.
        context.run { replay.playerEvent(.finished(PlaybackReport(playedSeconds: 0, interrupted: true, underruns: 0, reply: first.sound))) }
        XCTAssertEqual(context.names.filter { $0 == "reply.replay_finished" }.count, 1)
        XCTAssertTrue(context.run { replay.isPlaying })
    }

    /// A new reply that sounds replaces the kept one; the session's end forgets it.
    func testTheNextReplyReplacesTheKeptOneAndTheSessionsEndForgetsIt() throws {
        try hearGreeting(bytes: 48_000)
        try hearGreeting(bytes: 24_000)
        _ = try context.run { () throws(ControlError) in try replay.replay(rate: 1) }
        XCTAssertEqual(audio.replays.map(\.bytes), [24_000])
        let playing = audio.replays.count
        context.run { replay.forget() }
        XCTAssertEqual(audio.snapshot.stopped.count, 1, "the replay playing stops with the session")
        XCTAssertEqual(replayError(rate: 1)?.code, .invalidState)
        XCTAssertEqual(audio.replays.count, playing)
    }

    /// A reply that sounded without any audio kept (all its chunks refused) has nothing to play.
    func testAReplyWithoutAudioIsNotReplayed() {
        context.run { replay.keep(ReplyTake(bytesPerSecond: 48_000), turnID: "t1", greeting: false) }
        let error = replayError(rate: 1)
        XCTAssertEqual(error?.code, .invalidState)
        XCTAssertTrue(error?.message.contains("no audio") ?? false, error?.message ?? "")
    }

    /// Without a speaker the replay is a device error, retryable, and nothing is playing.
    func testWithoutASpeakerTheReplayIsADeviceError() throws {
        try hearGreeting(bytes: 4_800)
        audio.speakerOpen = false
        let error = replayError(rate: 1)
        XCTAssertEqual(error?.code, .deviceError)
        XCTAssertFalse(context.run { replay.isPlaying })
    }
}

/// "Hear me" (`turn.replay`) alone: the learner's turns kept as they were sent, a turn no
/// longer in memory read from the spool (stood for by a closure here; the daemon's suite
/// reads a real one), another session's and a damaged one refused.
final class TurnReplayInMemoryTests: XCTestCase {
    private var context: SessionTestContext!
    private var audio: MemoryAudio!
    private var replay: ReplayPlayback!

    override func setUp() {
        context = SessionTestContext()
        audio = MemoryAudio()
        replay = ReplayPlayback(context: context, audio: audio)
    }

    /// A turn of `seconds` of a 440 Hz tone, as the recorder writes it.
    private func wav(seconds: Double, format: WAVFormat = .speech) throws -> [UInt8] {
        let count = Int(seconds * Double(format.sampleRate))
        return try WAVEncoder.encode((0..<count).map { Int16(8_000 * sin(Double($0) * 2 * .pi * 440 / Double(format.sampleRate))) }, format: format)
    }

    private func failure(_ id: String?, rate: Double? = nil) -> ControlError? {
        context.run {
            do throws(ControlError) {
                _ = try replay.replayTurn(id: id, rate: rate, session: "s1")
                return nil
            } catch { return error }
        }
    }

    func testTheLastTurnPlaysAsItWasSentAtItsOwnSpeed() throws {
        XCTAssertEqual(failure(nil)?.code, .invalidState, "no turn yet")
        context.run { replay.keepTurn(id: "t1", wav: try! wav(seconds: 1)); replay.keepTurn(id: "t2", wav: try! wav(seconds: 2)) }
        let result = try context.run { () throws(ControlError) in try replay.replayTurn(id: nil, rate: nil, session: "s1") }
        XCTAssertEqual(result.turnId, "t2")
        XCTAssertEqual(result.rate, 1)
        XCTAssertEqual(result.durationS, 2)
        XCTAssertEqual(audio.replays.map(\.bytes), [96_000])
        XCTAssertEqual(context.event("turn.replaying")?["turn_id"], "t2")
        XCTAssertEqual(context.metrics.counter(.replays, "turn"), 1)
        context.run { replay.playerEvent(.started(latencyFrames: 0, reply: result.sound)) }
        context.run { replay.playerEvent(.finished(PlaybackReport(playedSeconds: 2, interrupted: false, underruns: 0, reply: result.sound))) }
        let finished = try XCTUnwrap(context.event("turn.replay_finished"))
        XCTAssertEqual(finished["turn_id"], "t2")
        XCTAssertEqual(finished["interrupted"], false)
        XCTAssertFalse(context.names.contains("reply.replay_finished"), "a turn's end is not a reply's")
        // A named older turn, slower.
        let older = try context.run { () throws(ControlError) in try replay.replayTurn(id: "t1", rate: 0.5, session: "s1") }
        XCTAssertEqual(older.durationS, 2)
        XCTAssertEqual(audio.replays.last?.rate, 0.5)
    }

    func testBadRatesAndUnknownOtherSessionsAndDamagedTurnsAreRefused() throws {
        context.run { replay.keepTurn(id: "t1", wav: try! wav(seconds: 1)) }
        for rate in [0, -1, .nan, 10, 2.5, 0.25] { XCTAssertEqual(failure(nil, rate: rate)?.code, .badArguments, "\(rate)") }
        let other = try wav(seconds: 1)
        let narrowband = try wav(seconds: 1, format: WAVFormat(sampleRate: 16_000, channels: 1))
        replay.loadSpooled = { id, session throws(ControlError) in
            XCTAssertEqual(session, "s1")
            switch id {
            case "other" where session == "s0": return other  // the last visitor's session
            case "narrow": return narrowband
            case "damaged": throw ControlError(.fileError, "turn 'damaged' in the spool is damaged: its CRC-32 is not its record's")
            default: throw ControlError(.badArguments, "no turn '\(id)' in this session")
            }
        }
        XCTAssertEqual(failure("other")?.code, .badArguments)
        XCTAssertEqual(failure("other")?.message, "no turn 'other' in this session")
        XCTAssertEqual(failure("nobody")?.code, .badArguments)
        XCTAssertEqual(failure("narrow")?.code, .fileError)
        XCTAssertEqual(failure("damaged")?.code, .fileError)
        XCTAssertEqual(failure("../../etc/passwd")?.code, .badArguments)
        XCTAssertTrue(audio.replays.isEmpty, "nothing played")
        XCTAssertFalse(context.run { replay.isPlaying })
        // The kept turn still plays after all that.
        XCTAssertNil(failure("t1"))
    }

    /// Two minutes at most: the oldest turn goes first; the session's end forgets them all.
    func testTheTurnsKeptAreBoundedAndForgottenWithTheSession() throws {
        let fifty = try wav(seconds: 50)
        context.run { for id in ["a", "b", "c"] { replay.keepTurn(id: id, wav: fifty) } }
        XCTAssertEqual(failure("a")?.code, .badArguments, "the oldest was let go (150 s > 120 s)")
        XCTAssertNil(failure("b"))
        XCTAssertNil(failure("c"))
        context.run { replay.forget() }
        XCTAssertEqual(failure(nil)?.code, .invalidState)
        XCTAssertEqual(failure("c")?.code, .badArguments)
    }
}
