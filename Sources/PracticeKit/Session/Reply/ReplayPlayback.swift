import AudioKernel
import FoundationEssentials
import PracticeProtocol

/// What is heard again (issue 69): the last reply (`reply.replay`: the tutor's audio as it
/// came, ``ReplyTake``, the first minute), kept from the moment it sounded until the next
/// reply sounds or the session closes, and the learner's own turns of the session
/// (`turn.replay`: ``LearnerTakes``, or the spool for one no longer in memory); each played
/// from memory at the rate asked for, at the same pitch. On the session's queue.
///
/// A replay is a sound of the reply layer, so the player and the recorder treat it as a
/// reply: a half-duplex microphone rests under it, an echo-cancelled one listens for a
/// barge-in (the residual-echo estimate follows what was played). It stops as a reply stops:
/// at a barge-in, `playback.stop`, a new turn or `say`, another replay, the session's end.
final class ReplayPlayback: @unchecked Sendable {
    private unowned let context: any SessionContext
    private let audio: any SessionAudio
    /// A turn of the session in the spool: its WAV (``TurnDelivery/spooledRecording(_:of:)``).
    var loadSpooled: (_ id: String, _ session: String) throws(ControlError) -> [UInt8] = { id, _ throws(ControlError) in
        throw ControlError(.badArguments, "no turn '\(id)' in this session")
    }

    /// The last reply that sounded.
    private struct Kept {
        let take: ReplyTake
        let turnID: String?
        let greeting: Bool
    }
    private var kept: Kept?
    private var turns = LearnerTakes()

    /// A replay: the player's number for it, and what it plays.
    private struct Playing {
        enum Kind { case reply, turn }
        let sound: Int
        let kind: Kind
        let turnID: String?
        /// Its first sample reached the device: the player will tell its end.
        var sounded = false
    }
    private var playing: Playing?
    /// Replays whose end the player has not told yet (the one playing, and those it
    /// replaced or stopped that are still fading out): each `*.replaying` gets its
    /// `*.replay_finished`. A replay stopped before it sounded is told here (the player
    /// tells the end of a sound it played, and it never played that one).
    private var unfinished: [Int: Playing] = [:]

    init(context: any SessionContext, audio: any SessionAudio) {
        self.context = context
        self.audio = audio
    }

    /// Whether a replay owns the speaker.
    var isPlaying: Bool { playing != nil }

    /// A reply began to sound: it is the one a replay plays from now on.
    func keep(_ take: ReplyTake, turnID: String?, greeting: Bool) { kept = Kept(take: take, turnID: turnID, greeting: greeting) }

    /// The learner's turn `id` was sent: "hear me" plays it.
    func keepTurn(id: String, wav: [UInt8]) { turns.keep(id: id, wav: wav) }

    /// The session closed: its replies and turns are the last learner's.
    func forget() {
        stop()
        kept = nil
        turns.forget()
        unfinished.removeAll()
    }

    /// `reply.replay`: plays the kept reply at `rate` (the player's rate when nil).
    func replay(rate asked: Double?) throws(ControlError) -> Command.ReplyReplay.Result {
        let rate = try Self.check(asked ?? audio.playbackRate)
        guard let kept else { throw ControlError(.invalidState, "there is no reply to play again yet: the tutor has not spoken in this session") }
        let pcm = kept.take.pcm
        guard !pcm.isEmpty else { throw ControlError(.invalidState, "the last reply had no audio to play again") }
        let (sound, duration) = try play(pcm, rate: rate, Playing(sound: 0, kind: .reply, turnID: kept.turnID))
        context.logger.info("reply replayed at \(rate)× (\(duration) s)\(kept.take.droppedBytes > 0 ? "; only its first \(ReplyTake.maximumSeconds) s were kept" : "")")
        context.metrics.increment(.replays, "reply")
        context.publish(Event.ReplyReplaying(rate: rate, durationS: duration, turnId: kept.turnID, greeting: kept.greeting, sound: sound))
        return .init(rate: rate, durationS: duration, turnId: kept.turnID, greeting: kept.greeting, sound: sound)
    }

    /// `turn.replay`: plays the learner's turn `id` (the last one kept when nil) at `rate`
    /// (1.0 when nil: the learner's own voice at its own speed), from memory or the spool.
    func replayTurn(id named: String?, rate asked: Double?, session: String) throws(ControlError) -> Command.TurnReplay.Result {
        let rate = try Self.check(asked ?? 1)
        guard let id = named ?? turns.lastID else { throw ControlError(.invalidState, "there is no turn of yours to play yet in this session") }
        let pcm: [UInt8]
        if let kept = turns.pcm(of: id) {
            pcm = kept
        } else {
            // Another session's turn is not the learner's to hear (it may be the last visitor's).
            let wav = try loadSpooled(id, session)
            guard let samples = LearnerTakes.pcm(of: wav), !samples.isEmpty else {
                context.logger.error("turn \(id) in the spool is not a 24 kHz mono recording: not played")
                throw ControlError(.fileError, "turn '\(id)' in the spool is not a recording that can be played")
            }
            pcm = samples
        }
        let (sound, duration) = try play(pcm, rate: rate, Playing(sound: 0, kind: .turn, turnID: id))
        context.logger.info("turn \(id) played back at \(rate)× (\(duration) s)")
        context.metrics.increment(.replays, "turn")
        context.publish(Event.TurnReplaying(rate: rate, durationS: duration, turnId: id, sound: sound))
        return .init(rate: rate, durationS: duration, turnId: id, sound: sound)
    }

    private static func check(_ rate: Double) throws(ControlError) -> Double {
        guard rate.isFinite, Command.playbackRates.contains(rate) else {
            throw ControlError(.badArguments, "'rate' must be from \(Command.playbackRates.lowerBound) to \(Command.playbackRates.upperBound) (got \(rate))")
        }
        return rate
    }

    /// Plays `pcm` at `rate` in place of any replay playing: the player's number and the
    /// seconds it lasts.
    private func play(_ pcm: [UInt8], rate: Double, _ what: Playing) throws(ControlError) -> (sound: Int, duration: Double) {
        // Another replay still playing gives way to this one (the player fades it out).
        stop()
        guard let sound = audio.replay(pcm, rate: rate) else {
            throw ControlError(.deviceError, "the playback device is not open", retryable: true)
        }
        let started = Playing(sound: sound, kind: what.kind, turnID: what.turnID)
        playing = started
        unfinished[sound] = started
        return (sound, (Double(pcm.count / 2) / 24_000 / rate * 1000).rounded() / 1000)
    }

    /// Stops the replay that plays, if one does (whether one did): its end (interrupted)
    /// follows from the player.
    @discardableResult
    func stop() -> Bool {
        guard let playing else { return false }
        audio.stop(sound: playing.sound)
        self.playing = nil
        if unfinished[playing.sound]?.sounded == false {
            unfinished[playing.sound] = nil
            finished(playing, interrupted: true, playedS: 0)
        }
        return true
    }

    /// The player's events: a replay's first sample, and its end.
    func playerEvent(_ event: PlayerEvent) {
        if case .started(_, let sound) = event { unfinished[sound]?.sounded = true }
        guard case .finished(let report) = event, let ended = unfinished.removeValue(forKey: report.reply) else { return }
        if playing?.sound == ended.sound { playing = nil }
        finished(ended, interrupted: report.interrupted, playedS: (report.playedSeconds * 1000).rounded() / 1000)
    }

    private func finished(_ replay: Playing, interrupted: Bool, playedS: Double) {
        switch replay.kind {
        case .reply:
            context.publish(Event.ReplyReplayFinished(interrupted: interrupted, playedS: playedS, turnId: replay.turnID, sound: replay.sound))
        case .turn:
            context.publish(Event.TurnReplayFinished(interrupted: interrupted, playedS: playedS, turnId: replay.turnID ?? "", sound: replay.sound))
        }
    }
}
