import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeProtocol

/// A recorded turn's way to the backend: into the spool and at the same moment out as an
/// upload from memory (``ReplyPlayback`` streams it and its reply), sent again with backoff
/// while the backend cannot take it, and left in the spool, reported pending, when it
/// never could. The spool's commands (`spool.list`, `spool.retry`, `spool.discard`) and the
/// turns an earlier run left are here too. On the session's queue; the spool's writes on a
/// queue of their own (``write(_:wav:)``).
final class TurnDelivery: @unchecked Sendable {
    /// A spooled turn on its way (with retries).
    struct Delivery {
        var turn: SpooledTurn
        /// The recorder's own bytes (an array shares them): the upload's body is the one copy.
        var wav: [UInt8]
        var attempt = 0
        var firstFailure: UInt64?
        /// When the recorder ended the turn (uptime ns), for the latency figures.
        var recordedAt: UInt64?
    }

    private unowned let context: any SessionContext
    let spool: TurnSpool?
    /// Why there is no spool (turns then live in memory only), for `status` and every turn.
    let spoolError: String?
    /// The turn being sent.
    private(set) var current: Delivery?
    /// Where an upload goes (``ReplyPlayback``, which streams it and plays its reply).
    private unowned let uploader: any TurnUploading
    /// The spool's writes, off the session's queue: a turn's two fsyncs (file, then folder)
    /// stood between the end of the learner's turn and its upload, and took up to 200 ms
    /// under a neighbour writing to the same disk (CI once read 437 ms); an SD card's can
    /// take longer. The upload goes out from memory while the disk syncs.
    private let writer: DispatchQueue
    /// Turns whose write is not yet told (`turn.spooled` or `turn.spool_failed`), with their
    /// WAV's size; on the session's queue.
    private var untold: [String: Int] = [:]
    /// The writes that failed, until told; on ``writer`` only.
    private var failures: [String: SpoolError] = [:]

    /// `writer`: the queue the spool is written on (a test holds it to stand for a slow disk).
    init(context: any SessionContext, spoolDirectory: String, uploader: any TurnUploading,
         writer: DispatchQueue = DispatchQueue(label: "practiced.spool-writer")) {
        self.context = context
        self.uploader = uploader
        self.writer = writer
        do {
            spool = try TurnSpool(directory: spoolDirectory)
            spoolError = nil
        } catch {
            context.logger.error("turns cannot be kept on disk: \(error); they are sent from memory only")
            spool = nil
            spoolError = "\(error)"
        }
    }

    /// The spool as `status` and `session.get` show it.
    var state: SpoolState {
        let usage = spool?.usage ?? (turns: 0, bytes: 0)
        return SpoolState(turns: usage.turns, bytes: usage.bytes, durable: spool != nil, error: spoolError)
    }

    func entries() -> [SpoolEntry] { (spool?.list().turns ?? []).map(entry) }

    private func entry(_ turn: SpooledTurn) -> SpoolEntry { SpoolEntry(turn, sending: current?.turn.id == turn.id) }

    /// Reports the turns a previous run left in the spool (after a crash or a kill).
    func recover() {
        guard let spool else { return }
        let (turns, setAside, removed) = spool.recover()
        if !removed.isEmpty { context.logger.notice("spool: removed what a write cut short left (never told spooled): \(removed.joined(separator: ", "))") }
        for entry in setAside { told(entry) }
        guard !turns.isEmpty else { return }
        context.logger.notice("spool: \(turns.count) turn(s) from an earlier run wait for delivery: \(turns.map(\.id).joined(separator: ", "))")
        context.metrics.increment(.turnsRecovered, by: Double(turns.count))
        context.publish(Event.SpoolRecovered(turns: turns.map(entry)))
        context.stateChanged()
    }

    // MARK: - A new turn

    /// A turn with speech from the recorder: spooled and sent at once, the upload not
    /// waiting for the disk (unless the daemon stops: then the turn waits in the spool for
    /// the next start). The turn's id.
    @discardableResult
    func take(wav: [UInt8], duration: Double, of session: ActiveSession, endedAt: UInt64) -> String {
        let spooled = SpooledTurn(sessionID: session.id, mode: session.mode, duration: duration, bytes: wav.count)
        write(spooled, wav: wav)
        if context.stopping {
            tell(spooled.id)
            context.logger.notice("turn \(spooled.id) spooled at shutdown; it is reported at the next start")
            return spooled.id
        }
        context.move(to: .uploading)
        send(Delivery(turn: spooled, wav: wav, recordedAt: endedAt))
        return spooled.id
    }

    /// A turn of session `session` still in the spool, for the learner to hear
    /// (`turn.replay`): its WAV, checked against its record. Another session's turn is not
    /// there for this learner (it may be the last visitor's), whatever its file holds; a
    /// damaged one is a `file_error` and is left where it is (its delivery sets it aside).
    func spooledRecording(_ id: String, of session: String) throws(ControlError) -> [UInt8] {
        let unknown = ControlError(.badArguments, "no turn '\(id)' in this session")
        guard let spool else { throw unknown }
        tell(id)  // a write still under way is waited for
        // The headers only: whose turn it is before anything of it is read.
        guard spool.list().turns.contains(where: { $0.id == id && $0.sessionID == session }) else { throw unknown }
        do throws(SpoolError) {
            return Array(try spool.load(id).wav)
        } catch {
            context.logger.error("turn \(id) could not be read from the spool to play it: \(error)")
            throw ControlError(.fileError, error.isDamaged ? "turn '\(id)' in the spool is damaged: \(error.detail ?? "")" : "turn '\(id)' could not be read: \(error)")
        }
    }

    /// Writes the turn to the spool on ``writer`` and tells the outcome when it is durable.
    private func write(_ turn: SpooledTurn, wav: [UInt8]) {
        untold[turn.id] = wav.count
        guard let spool else { return tell(turn.id, unavailable: SpoolUnavailable(reason: spoolError ?? "no spool")) }
        writer.async { [self] in
            do throws(SpoolError) { try spool.store(turn, wav: wav) } catch { failures[turn.id] = error }
            context.queue.async { self.tell(turn.id) }
        }
    }

    /// Tells turn `id`'s write (`turn.spooled`, or `turn.spool_failed`: the turn still goes
    /// out from memory), waiting for it when it is still under way; once. Called before
    /// anything that needs the file or follows it in the events: the turn's acceptance,
    /// refusal or pending, a retry, a discard, the session's end.
    private func tell(_ id: String, unavailable: SpoolUnavailable? = nil) {
        guard let bytes = untold.removeValue(forKey: id) else { return }
        let failure: (any Error)? = unavailable ?? writer.sync { failures.removeValue(forKey: id) }
        if let failure {
            context.logger.error("turn \(id) not spooled: \(failure)")
            context.publish(Event.TurnSpoolFailed(turnId: id, message: "\(failure)"))
        } else {
            context.publish(Event.TurnSpooled(turnId: id, bytes: bytes))
        }
        context.stateChanged()
    }

    /// Every write under way, told (the session ends, the daemon stops).
    private func tellAll() {
        for id in untold.keys.sorted() { tell(id) }
    }

    private func send(_ next: Delivery) {
        var next = next
        next.attempt += 1
        current = next
        context.stateChanged()
        let id = next.turn.id
        uploader.upload(TurnUpload(id: id, wav: next.wav, attempt: next.attempt, recordedAt: next.recordedAt) { [weak self] outcome in
            self?.uploadEnded(id, outcome)
        })
    }

    // MARK: - What became of it

    /// One attempt's outcome, as the reply tells it.
    private func uploadEnded(_ id: String, _ outcome: UploadOutcome) {
        switch outcome {
        case .accepted: accepted(id)
        case .failed(let error): if current?.turn.id == id { failed(error) }
        case .notSent: interrupted(id)
        }
    }

    /// The backend has the turn: it leaves the spool and is never sent again.
    func accepted(_ id: String) {
        tell(id)
        do { try spool?.remove(id) } catch { context.logger.error("turn \(id) answered but not removed from the spool: \(error)") }
        context.publish(Event.TurnAccepted(turnId: id, attempt: current?.turn.id == id ? current?.attempt ?? 1 : 1))
        if current?.turn.id == id { current = nil }
        context.countAcceptedTurn()
        context.stateChanged()
    }

    /// An upload failed before the backend took the turn: sent again after a backoff,
    /// refused for good (a 4xx), or left pending.
    func failed(_ error: BackendError) {
        guard var failed = current else { return }
        let now = context.now
        failed.firstFailure = failed.firstFailure ?? now
        current = failed
        let id = failed.turn.id
        tell(id)
        if error.isSessionGone {
            current = nil
            context.publish(Event.TurnPending(turnId: id, reason: .sessionGone, message: "\(error)"))
            return context.fail(.sessionGone, error: "\(error)")
        }
        if let status = error.status, status >= 400 && status < 500 && status != 408 && status != 429 {
            // The backend answered and refused the turn: sending it again cannot help.
            try? spool?.remove(id)
            current = nil
            context.countTurn("rejected")
            context.publish(Event.TurnRejected(turnId: id, message: "\(error)"))
            context.stateChanged()
            return context.move(to: .ready)
        }
        let settings = context.settings
        let elapsed = Double(now - failed.firstFailure!) / 1e9
        // The one retry loop of a turn (its stream is tried once per attempt): doubling
        // delays with ±20 % jitter, so that kiosks that lost the backend together do not
        // come back in step.
        var backoff = RetryPolicy()
        backoff.initialDelay = settings.turnRetryInitialDelay
        backoff.maxDelay = settings.turnRetryMaxDelay
        let delay = (backoff.delay(afterAttempt: failed.attempt) * 1000).rounded() / 1000
        guard elapsed + delay <= settings.turnRetrySeconds, !context.stopping else {
            current = nil
            context.countTurn("pending")
            context.logger.warning("turn \(id) not delivered after \(failed.attempt) attempts (\(error)); kept in the spool")
            context.publish(Event.TurnPending(turnId: id, reason: .undelivered, message: "\(error)", attempts: failed.attempt))
            context.stateChanged()
            return context.move(to: .ready)
        }
        context.logger.warning("turn \(id) not delivered (\(error)); attempt \(failed.attempt + 1) in \(delay) s")
        context.publish(Event.TurnRetrying(turnId: id, attempt: failed.attempt + 1, delayS: delay, message: "\(error)"))
        let epoch = context.epoch
        context.after(delay) { [self] in
            guard epoch == context.epoch, let retry = current, retry.turn.id == id, context.stage == .uploading else { return }
            send(retry)
        }
    }

    /// A stopped reply's upload never got through: the turn stays in the spool.
    func interrupted(_ id: String) {
        tell(id)
        context.publish(Event.TurnPending(turnId: id, reason: .interrupted, message: "the learner spoke again before it was sent"))
    }

    /// The session closed or the daemon stops: the turn being sent stays in the spool.
    func abandon() {
        tellAll()
        if context.stopping, let current { context.logger.notice("turn \(current.turn.id) stays in the spool for the next start") }
        current = nil
    }

    // MARK: - The spool's commands

    /// `spool.retry`: sends a kept turn again (resuming its session from idle).
    func retry(_ id: String) throws(ControlError) {
        guard let spool else { throw ControlError(.fileError, "there is no spool") }
        tell(id)
        let loaded: (turn: SpooledTurn, wav: Data)
        do { loaded = try spool.load(id) } catch {
            guard error.isDamaged else { throw ControlError(.badArguments, "\(error)") }
            let entry = spool.setAside(id, reason: "its audio is damaged: \(error.detail ?? "")")
            told(entry)
            context.stateChanged()
            throw ControlError(.fileError, "turn \(id) is damaged (\(error.detail ?? "")): set aside in \(entry.path), not sent")
        }
        if let session = context.active {
            guard session.id == loaded.turn.sessionID else {
                throw ControlError(.invalidState, "turn \(id) belongs to session \(loaded.turn.sessionID); close this session first")
            }
        } else {
            // A turn from an earlier run: the conversation it belongs to goes on.
            context.resume(ActiveSession(id: loaded.turn.sessionID, mode: loaded.turn.mode, topicID: nil))
            context.logger.notice("resuming session \(loaded.turn.sessionID) to deliver turn \(id)")
            context.publish(Event.SessionResumed(sessionId: loaded.turn.sessionID, mode: loaded.turn.mode))
        }
        context.move(to: .uploading)
        send(Delivery(turn: loaded.turn, wav: [UInt8](loaded.wav)))
    }

    private func told(_ entry: SpoolSetAside) { entry.report(logger: context.logger, metrics: context.metrics, publish: context.publish) }

    /// `spool.discard`: drops a kept turn (not the one being sent).
    func discard(_ id: String) throws(ControlError) {
        guard current?.turn.id != id else { throw ControlError(.invalidState, "turn \(id) is being sent now") }
        tell(id)
        guard let spool, spool.contains(id) else { throw ControlError(.badArguments, "no turn \(id) in the spool") }
        do { try spool.remove(id) } catch { throw ControlError(.fileError, "\(error)") }
        context.logger.notice("spool: turn \(id) discarded by a client")
        context.publish(Event.SpoolDiscarded(turnId: id))
        context.stateChanged()
    }
}

/// The daemon runs without a spool (`spool.required = false`): every turn says so.
struct SpoolUnavailable: Error, CustomStringConvertible {
    var reason: String
    var description: String { "no spool (\(reason)); the turn is sent from memory only and is lost if the daemon stops" }
}
