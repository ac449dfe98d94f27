import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeProtocol

/// The reply to a greeting or a turn, from its request to its last sample: the stream's
/// events (``StreamNote``), the speaker feed (``ReplyFeed``), the text released with the
/// sound, the outcome of a reply that came without an answer, the end (`reply.finished`),
/// and the drain of a reply that was stopped. One reply at a time; on the session's queue.
///
/// The walk of a reply: ``start(_:)`` asks the backend for the stream; its audio goes to
/// the speaker from the backend's queue (``ReplyFeed``); everything else comes here as
/// ``StreamNote``s (``note(_:for:)``); the stream's end (``streamEnded(_:)``) and the
/// player's `finished` (``playerEvent(_:at:)``) together finish the reply (``finishIfDone(_:)``).
final class ReplyPlayback: TurnUploading, @unchecked Sendable {
    private unowned let context: any SessionContext
    private let backend: @Sendable () -> any ReplyBackend
    private let audio: any SessionAudio

    /// The reply the session waits for and the speaker plays.
    private var current: Reply?
    /// A reply whose sound was stopped (barge-in, `playback.stop`) and whose stream is read
    /// to its end without a sound or an event, so that no upload overlaps it upstream.
    private var draining: Reply?
    /// The request that waits for `draining` to end, and the token of its deadline.
    private var waiting: ReplyKind?
    private var drainToken = 0
    /// The last reply was cut short: the backend may answer the next turn empty.
    private var interrupted = false
    /// Told when a reply begins to sound, with its audio as it is kept (``ReplayPlayback``).
    var soundBegan: (_ take: ReplyTake, _ turnID: String?, _ greeting: Bool) -> Void = { _, _, _ in }

    init(context: any SessionContext, backend: @escaping @Sendable () -> any ReplyBackend, audio: any SessionAudio) {
        self.context = context
        self.backend = backend
        self.audio = audio
    }

    /// Whether a reply owns the speaker.
    var isActive: Bool { current != nil }

    // MARK: - Starting

    /// A turn's upload, from its delivery: streamed, played, its outcome told to it.
    func upload(_ upload: TurnUpload) { start(.turn(upload)) }

    /// Asks the backend for a reply; waits first for a stopped reply's stream to end.
    func start(_ kind: ReplyKind) {
        guard let session = context.active else { return }
        if let draining { return waitForDrain(of: draining, then: kind) }
        let feed = ReplyFeed(audio: audio, clock: context.scheduler, take: ReplyTake(bytesPerSecond: 48_000))
        let reply = Reply(kind: kind, feed: feed, requestedAt: context.now)
        current = reply
        // Weak: the reply holds its stream, which holds this handler until it ends.
        let handler: ReplyStream.EventHandler = { [weak self, weak reply, weak context, feed] event in
            let note: StreamNote
            switch event {
            case .audio(let bytes):
                guard let first = feed.enqueue(bytes) else { return }
                note = .firstAudio(at: first)
            case .transcript(let text):
                // A void turn stops the sound now, on this queue: no chunk may follow it.
                if text.isEmpty { feed.stop() }
                note = .transcript(text)
            case .retrying(let attempt, let delay, let reason): note = .retrying(attempt: attempt, delay: delay, reason: "\(reason)")
            case .uploadProgress(let sent, let total): note = .uploadProgress(sent: sent, total: total)
            case .accepted: note = .accepted
            case .response(let text): note = .response(text)
            case .timing(let step, let seconds): note = .timing(step: step, seconds: seconds)
            case .malformedEvent(let type, let reason): note = .malformed(type: type, reason: reason)
            case .done: return
            }
            guard let self, let reply, let context else { return }
            context.async { self.note(note, for: reply) }
        }
        let backend = backend()
        let stream: any ReplyStreaming
        switch kind {
        case .greeting:
            stream = backend.streamGreeting(sessionID: session.id, onEvent: handler)
        case .turn(let upload):
            if let recordedAt = upload.recordedAt {
                context.observe(.turnEndToUpload, since: recordedAt)
            }
            context.publish(Event.TurnUploading(turnId: upload.id, bytes: upload.wav.count, attempt: upload.attempt))
            stream = backend.streamTurn(sessionID: session.id, wav: upload.wav, idempotencyKey: upload.id, onEvent: handler)
        case .text(let text):
            stream = backend.streamText(sessionID: session.id, text: text, onEvent: handler)
        }
        reply.stream = stream
        stream.whenFinished { [weak self, weak context] result in
            guard let self, let context else { return }
            context.async { self.note(.finished(result), for: reply) }
        }
    }

    // MARK: - The stream

    func note(_ note: StreamNote, for reply: Reply) {
        if reply === draining { return drainNote(note, for: reply) }
        guard reply === current else { return }  // a reply that was hung up or closed
        let turnID = reply.turnID
        switch note {
        case .retrying(let attempt, let delay, let reason):
            context.publish(Event.ReplyRetrying(turnId: turnID, attempt: attempt + 1, delayS: rounded(delay), message: reason))
        case .uploadProgress(let sent, let total):
            context.publish(Event.TurnUpload(turnId: turnID, sent: Int(sent), total: Int(total)))
        case .accepted:
            reply.accepted = true
            // The backend has the turn: it leaves the spool, and is never sent again.
            reply.reportUpload(.accepted)
            if !reply.isGreeting { context.move(to: .replying) }
        case .transcript(let text):
            reply.transcript = text
            if text.isEmpty {
                // Final at once: the sound is already stopped (the iOS client's rule).
                reply.void = true
                unanswered(reply, .emptyTranscript)
            } else {
                context.publish(Event.Transcript(text: text, turnId: turnID))
            }
        case .firstAudio(let at):
            reply.firstAudioAt = at
            context.observe(.firstAudio, since: reply.requestedAt, now: at)
        case .response(let text):
            reply.responseText = text
            releaseText(reply)
        case .timing(let step, let seconds):
            context.publish(Event.ReplyTiming(step: step, seconds: seconds, turnId: turnID))
        case .malformed(let type, let reason):
            context.logger.warning("reply: malformed \(type) event: \(reason)")
            context.publish(Event.ReplyMalformed(type: type, reason: reason))
        case .finished(let result):
            switch result {
            case .success(let summary): reply.summary = summary
            case .failure(let error): reply.failure = error
            }
            reply.streamEndedAt = context.now
            streamEnded(reply)
        }
    }

    private func streamEnded(_ reply: Reply) {
        if let error = reply.failure {
            _ = reply.feed.end()
            current = nil
            if case .cancelled = error { return }
            switch reply.kind {
            case .turn:
                if reply.accepted { return incomplete(reply, error) }
                return reply.reportUpload(.failed(error))
            case .greeting:
                // 504: the backend's upstream never connected; the session is gone.
                if error.isSessionGone || error.status == 504 { return context.fail(.sessionGone, error: "\(error)") }
                context.publish(Event.GreetingFailed(message: "\(error)"))
                return context.move(to: .ready)
            case .text:
                if error.isSessionGone { return context.fail(.sessionGone, error: "\(error)") }
                context.publish(Event.TurnFailed(message: "\(error)", retryable: error.status.map { $0 >= 500 } ?? true))
                return context.move(to: .ready)
            }
        }
        guard let summary = reply.summary else { return }
        if case .interrupted(let error) = summary.end { return incomplete(reply, error) }
        if case .cancelled = summary.end { return }
        let outcome = ReplyOutcome(summary, for: reply.request)
        reply.outcome = outcome
        if outcome != .answered { unanswered(reply, outcome) }
        if !reply.isGreeting { context.countTurn(outcome.rawValue) }
        interrupted = false
        if !reply.feed.end() {
            reply.playback = PlaybackReport(playedSeconds: 0, interrupted: reply.void, underruns: 0, reply: 0)
        }
        releaseText(reply)
        finishIfDone(reply)
    }

    /// A turn (or greeting) the backend answered without an answer: its own event, never a
    /// normal reply (see ``ReplyOutcome``).
    private func unanswered(_ reply: Reply, _ outcome: ReplyOutcome) {
        guard !reply.unansweredPublished else { return }
        reply.unansweredPublished = true
        reply.outcome = outcome
        if reply.isGreeting { return context.publish(Event.GreetingUnanswered(outcome: outcome, hint: outcome.hint)) }
        var hint = outcome.hint
        if interrupted { hint += " (the backend was still busy with a reply that was hung up)" }
        context.publish(Event.TurnUnanswered(turnId: reply.turnID, outcome: outcome, hint: hint, afterInterruption: interrupted,
                                             transcript: reply.transcript))
    }

    /// The stream broke after the backend took the turn: the sound stops, the reply is
    /// reported incomplete, the turn is not sent again (it was delivered).
    private func incomplete(_ reply: Reply, _ error: BackendError) {
        reply.feed.stop()
        current = nil
        interrupted = false
        if !reply.isGreeting { context.countTurn("incomplete") }
        context.metrics.increment(.repliesIncomplete)
        context.publish(Event.ReplyIncomplete(message: "\(error)", turnId: reply.turnID, responseText: reply.responseText))
        context.move(to: .ready)
    }

    /// The reply text goes out with the sound, not before (the iOS client's rule): when the
    /// speaker has started the reply, or at the end when there is no sound at all.
    private func releaseText(_ reply: Reply) {
        guard !reply.textReleased, !reply.void, let text = reply.responseText else { return }
        guard reply.soundStarted || reply.streamEnded && reply.playback != nil else { return }
        reply.textReleased = true
        context.publish(Event.ReplyText(text: text, turnId: reply.turnID, greeting: reply.isGreeting))
    }

    // MARK: - The speaker

    /// The player's events, as they happened at `now` (uptime ns).
    func playerEvent(_ event: PlayerEvent, at now: UInt64) {
        guard let reply = current else { return }
        switch event {
        case .started(_, let number):
            guard reply.feed.owns(number) else { return }
            reply.soundStarted = true
            reply.soundAt = now
            if let take = reply.feed.take { soundBegan(take, reply.turnID, reply.isGreeting) }
            if let first = reply.firstAudioAt {
                context.observe(.firstAudioToSound, since: first, now: now)
            }
            if let recordedAt = reply.recordedAt {
                context.observe(.turnRoundTrip, since: recordedAt, now: now)
            }
            context.publish(Event.ReplyAudioStarted(turnId: reply.turnID))
            releaseText(reply)
        case .finished(let report):
            guard reply.feed.owns(report.reply) else { return }
            reply.playback = report
            reply.playbackEndedAt = now
            releaseText(reply)
            finishIfDone(reply)
        case .underrun, .mixStarted, .mixFinished:
            // A clip mixed over the reply is not the reply's sound.
            break
        }
    }

    /// The stream has ended and the speaker has played it out: `reply.finished`, `ready`.
    private func finishIfDone(_ reply: Reply) {
        guard reply === current, reply.streamEnded, let playback = reply.playback else { return }
        current = nil
        let summary = reply.summary
        var finished = Event.ReplyFinished(
            turnId: reply.turnID, greeting: reply.isGreeting, interrupted: playback.interrupted, complete: summary?.sawDone ?? false,
            outcome: (reply.outcome ?? .answered).rawValue, playedS: rounded(playback.playedSeconds), underruns: playback.underruns,
            audioBytes: summary?.audioBytes ?? 0, saved: summary.map(ReplyOutcome.isSaved) ?? false)
        if !playback.interrupted, playback.leadMilliseconds > 0 {
            finished.leadMs = playback.leadMilliseconds
            finished.nextLeadMs = playback.nextLeadMilliseconds
        }
        if let first = reply.firstAudioAt, let sound = reply.soundAt {
            finished.firstAudioToSoundMs = rounded(milliseconds(from: first, to: sound))
        }
        if let recorded = reply.recordedAt {
            finished.endToUploadMs = rounded(milliseconds(from: recorded, to: reply.requestedAt))
            if let sound = reply.soundAt { finished.roundTripMs = rounded(milliseconds(from: recorded, to: sound)) }
        }
        if let streamEnd = reply.streamEndedAt, let playbackEnd = reply.playbackEndedAt {
            // Negative when the sound ran out before the stream's last event (a `done` late).
            finished.streamEndToFinishedMs = rounded(milliseconds(from: streamEnd, to: playbackEnd))
        }
        if let timings = summary?.timings, !timings.isEmpty { finished.serverTimings = timings }
        context.publish(finished)
        if !reply.void, reply.transcript != nil || reply.isGreeting {
            context.observe(.reply, since: reply.requestedAt)
        }
        context.move(to: .ready)
    }

    // MARK: - Stopping, hanging up, draining

    /// Stops the current reply (barge-in, `playback.stop`, a new turn): the sound fades
    /// within a period, but the stream is not hung up. Upstream goes on producing a reply
    /// that was hung up, and a turn sent meanwhile comes back empty (traces 11–12) or
    /// carries pieces of the old reply; so the stream is read to its end silently, and the
    /// next upload waits for that end (``waitForDrain(of:then:)``).
    func bargeIn() {
        guard let reply = current else { return }
        reply.feed.stop()
        current = nil
        if reply.accepted || reply.isGreeting {
            context.publish(Event.ReplyFinished.interrupted(turnId: reply.turnID, greeting: reply.isGreeting))
        }
        if !reply.isGreeting { context.countTurn("interrupted") }
        guard !reply.streamEnded else { return }
        // One drain at a time: a reply stopped earlier and still streaming is hung up.
        if let older = draining { hangUp(older) }
        draining = reply
        reply.drainStartedAt = context.now
        context.logger.info("reply stopped; its stream is read to its end before the next upload")
    }

    /// Hangs up a reply's stream (session closed, shutdown, a drain past its deadline). The
    /// backend may then answer the next turn empty: it is marked as after an interruption.
    private func hangUp(_ reply: Reply) {
        reply.feed.stop()
        reply.stream?.cancel()
        if !reply.streamEnded { interrupted = true }
    }

    /// Hangs up the reply and a drained one, and drops a request waiting for the drain.
    func hangUpAll() {
        if let current {
            hangUp(current)
            self.current = nil
        }
        if let draining {
            hangUp(draining)
            self.draining = nil
        }
        waiting = nil
        drainToken += 1
    }

    /// A new session: an interruption of the old one does not explain the new one's replies.
    func forgetInterruption() { interrupted = false }

    /// A drained reply's stream: nothing reaches the speaker or the clients but the spool's
    /// bookkeeping; its end lets the waiting request go.
    private func drainNote(_ note: StreamNote, for reply: Reply) {
        switch note {
        case .accepted:
            reply.accepted = true
            reply.reportUpload(.accepted)
        case .finished(let result):
            switch result {
            case .success(let summary): reply.summary = summary
            case .failure(let error): reply.failure = error
            }
            drainEnded(reply, timedOut: false)
        default:
            break
        }
    }

    private func drainEnded(_ reply: Reply, timedOut: Bool) {
        guard reply === draining else { return }
        draining = nil
        let waited = Double(context.now &- (reply.drainStartedAt ?? 0)) / 1e6
        if timedOut { hangUp(reply) }
        // The upload never got through: the turn stays in the spool, reported pending.
        if !reply.accepted { reply.reportUpload(.notSent) }
        context.publish(Event.ReplyDrained(turnId: reply.turnID, greeting: reply.isGreeting, timedOut: timedOut,
                                           complete: reply.summary?.sawDone ?? false, drainedMs: rounded(waited)))
        drainToken += 1
        if let next = waiting {
            waiting = nil
            start(next)
        }
    }

    /// A request that must not overlap the drained reply upstream waits for its end, at
    /// most ``SessionSettings/drainTimeout``.
    private func waitForDrain(of reply: Reply, then kind: ReplyKind) {
        waiting = kind
        drainToken += 1
        let token = drainToken
        let timeout = context.settings.drainTimeout
        let turnID: String? = { if case .turn(let upload) = kind { return upload.id } else { return nil } }()
        context.publish(Event.ReplyWaiting(turnId: turnID, reason: "previous_reply_draining", timeoutS: timeout))
        context.after(timeout) { [self] in
            guard token == drainToken, reply === draining else { return }
            context.logger.warning("a stopped reply's stream did not end within \(timeout) s; hung up")
            drainEnded(reply, timedOut: true)
        }
    }
}
