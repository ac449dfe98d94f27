import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeProtocol

/// A recorded answer's way to the backend (flows.md §4), in ``TurnDelivery``'s shape: into
/// the spool as AAC-LC (fsynced before anything is sent), then its walk: upload intent →
/// PUT to its URL → completion → its recording found among the cue's. One answer uploads at
/// a time, oldest first; each step is an event. An answer the backend cannot take for now
/// is tried again with ``RetryPolicy``'s backoff and jitter on the context's clock, one it
/// refuses stays spooled until the next start or sign-in. Every step runs on the context's
/// queue, the spool's owner: a backend call leaves it and its answer comes back to it.
final class AnswerDelivery: @unchecked Sendable {
    private unowned let context: any CueContext
    let spool: CueSpool?
    /// The answer being uploaded.
    private(set) var uploading: String?
    /// Failed attempts of the answer being uploaded, for the backoff.
    private var attempt = 0
    /// Answers the backend refused in this run: left in the spool, not tried again until
    /// the next start or sign-in.
    private var refused: Set<String> = []
    /// Why each answer's last upload failed (for `spool.list`).
    private var lastError: [String: String] = [:]
    /// Where a found recording goes next (its results are followed).
    private let uploaded: @Sendable (_ recordingID: Int, _ cueID: Int) -> Void

    /// Answers spooled and not yet the backend's, oldest first; the first one uploads. The
    /// spool's own records: nothing to keep in step.
    var pending: [SpooledAnswer] { spool?.answers ?? [] }

    init(context: any CueContext, spoolDirectory: String, uploaded: @escaping @Sendable (_ recordingID: Int, _ cueID: Int) -> Void) {
        self.context = context
        self.uploaded = uploaded
        do {
            spool = try CueSpool(spoolDirectory: spoolDirectory, owner: context.queue)
        } catch {
            context.logger.error("cue answers cannot be spooled (\(error)); they will be lost if the daemon stops before they are uploaded")
            spool = nil
        }
    }

    /// At start: what a previous run left is told, and waits for a learner to upload it.
    func recover() {
        guard let spool else { return }
        let (_, setAside, removed) = spool.recover()
        if !removed.isEmpty {
            context.logger.notice("cue spool: removed what a write cut short left (never told spooled): \(removed.joined(separator: ", "))")
        }
        for entry in setAside { told(entry) }
        if !pending.isEmpty { context.logger.notice("\(pending.count) cue answers from an earlier run are waiting for upload") }
    }

    /// A learner signed in: the answers refused before are tried again.
    func signedIn() { refused.removeAll() }

    // MARK: - A new answer

    /// Spools a gated answer (AAC-LC at `cue.bitrate`), then queues it for upload.
    func keep(_ turn: RecordedTurn, cue: Int, profile: Int?) {
        guard let profile else {
            return context.publish(Event.CueSpoolFailed(cueId: cue, message: "signed out while recording: the answer has no learner"))
        }
        let answer = SpooledAnswer(id: UUID().uuidString.lowercased(), cueId: cue, profileId: profile, recordedAt: Date().timeIntervalSince1970,
                                   durationS: rounded(turn.duration))
        guard let spool else {
            return context.publish(Event.CueSpoolFailed(cueId: cue, message: "no spool: the answer is not kept (see the log)"))
        }
        do {
            let stored = try spool.store(turn, answer: answer, bitRate: context.settings.bitRate)
            context.metrics.increment(.cueAnswers, "spooled")
            context.publish(Event.CueSpooled(answerId: stored.id, cueId: cue, bytes: stored.bytes, durationS: stored.durationS))
            pump()
        } catch {
            context.logger.error("cue answer not kept: \(error)")
            context.publish(Event.CueSpoolFailed(cueId: cue, message: "\(error)"))
        }
    }

    /// Starts the next upload when none runs and a learner is signed in.
    func pump() {
        guard uploading == nil, context.client().isSignedIn, let next = pending.first(where: { !refused.contains($0.id) }) else { return }
        uploading = next.id
        if next.uploadedIntentId == nil { requestIntent(next) } else { complete(next) }
    }

    // MARK: - The walk

    private enum Outcome {
        case uploaded(recordingID: Int)
        case failed(ChatterboxError)
        /// Its audio does not match its record: never uploaded, set aside.
        case damaged(SpoolError)
    }

    /// A fresh intent each time (its URL lives 900 s); a 409 means another intent for this
    /// cue in this second (``finished(_:_:)`` waits a second).
    private func requestIntent(_ answer: SpooledAnswer) {
        let (profile, cue) = (answer.profileId, answer.cueId)
        step(answer, { try await $0.createUploadIntent(profileID: profile, cueID: cue) }) { [self] intent in
            context.publish(Event.CueUploadStep(answerId: answer.id, cueId: answer.cueId, step: .intent))
            guard let url = intent.uploadUrl else { return finished(answer, .failed(.backend(.invalidResponse("an upload intent without an upload_url")))) }
            put(answer, intent: intent.uploadIntentId, url: url)
        }
    }

    /// One backend call of the walk: a failure finishes the attempt, an answer goes on to `next`
    /// (on the cue queue, as ``CueContext/call(_:then:)`` gives it).
    private func step<T: Sendable>(_ answer: SpooledAnswer, _ body: @escaping @Sendable (ChatterboxClient) async throws -> T,
                                   next: @escaping @Sendable (T) -> Void) {
        context.call(body) { [self] result in
            switch result {
            case .failure(let error): finished(answer, .failed(error))
            case .success(let value): next(value)
            }
        }
    }

    /// The audio, checked against its record, to the intent's URL.
    private func put(_ answer: SpooledAnswer, intent: Int, url: String) {
        let bytes: Data
        do throws(SpoolError) {
            guard let spool else { throw SpoolError(path: answer.id, operation: "read", errno: nil) }
            bytes = try spool.audio(answer)
        } catch {
            return finished(answer, error.isDamaged ? .damaged(error) : .failed(.backend(.invalidResponse("the spooled answer cannot be read: \(error)"))))
        }
        step(answer, { try await $0.upload(bytes, to: url) }) { [self] _ in
            context.publish(Event.CueUploadStep(answerId: answer.id, cueId: answer.cueId, step: .put))
            // Completion alone is left: kept, so that a restart completes rather than uploads again.
            var progressed = answer
            progressed.uploadedIntentId = intent
            do { try spool?.update(progressed) } catch { context.logger.error("cue answer \(answer.id): its upload's progress not kept: \(error)") }
            complete(progressed)
        }
    }

    /// Completion (idempotent), then the recording it made.
    private func complete(_ answer: SpooledAnswer) {
        let (intent, seconds) = (answer.uploadedIntentId!, answer.durationS)
        step(answer, { try await $0.completeUpload(intentID: intent, seconds: seconds) }) { [self] completed in
            context.publish(Event.CueUploadStep(answerId: answer.id, cueId: answer.cueId, step: .complete))
            guard let file = completed.file?.fileId else { return finished(answer, .failed(.backend(.invalidResponse("a completed upload without its file")))) }
            find(answer, file: file)
        }
    }

    /// The recording a completed upload made, found among the cue's own recordings (not the
    /// whole history: bounded by what this cue has).
    private func find(_ answer: SpooledAnswer, file: Int) {
        let (profile, cue) = (answer.profileId, answer.cueId)
        step(answer, { try await $0.cue(profileID: profile, cueID: cue) }) { [self] detail in
            guard let recording = detail.cue.recordings?.first(where: { $0.fileId == file }) else {
                return finished(answer, .failed(.backend(.invalidResponse("the completed upload's file \(file) is in no recording of cue \(cue)"))))
            }
            context.publish(Event.CueUploadStep(answerId: answer.id, cueId: answer.cueId, step: .found))
            finished(answer, .uploaded(recordingID: recording.profileCueRecordingId))
        }
    }

    private func finished(_ answer: SpooledAnswer, _ outcome: Outcome) {
        uploading = nil
        defer { context.uploadSettled() }
        switch outcome {
        case .uploaded(let recordingID):
            attempt = 0
            lastError[answer.id] = nil
            spool?.remove(answer.id)
            context.metrics.increment(.cueAnswers, "uploaded")
            context.logger.info("cue answer \(answer.id) is recording \(recordingID)")
            context.publish(Event.CueUploaded(answerId: answer.id, cueId: answer.cueId, recordingId: recordingID))
            uploaded(recordingID, answer.cueId)
            pump()
        case .damaged(let error):
            attempt = 0
            lastError[answer.id] = nil
            if let entry = spool?.setAside(answer.id, reason: "its audio is damaged: \(error.detail ?? "")") { told(entry) }
            context.publish(Event.CueUploadFailed(answerId: answer.id, cueId: answer.cueId, reason: "damaged", error: "\(error)"))
            pump()
        case .failed(let error):
            lastError[answer.id] = "\(error)"
            if case .signInRequired(let why) = error {
                context.signedOut(reason: why)
                context.publish(Event.CueUploadFailed(answerId: answer.id, cueId: answer.cueId, reason: "sign_in_required", error: "\(error)"))
            } else if error.isTransient {
                retry(answer, after: error)
            } else {
                context.logger.error("cue answer \(answer.id) refused: \(error); kept in \(spool?.directory ?? "memory") until the next start")
                refused.insert(answer.id)
                context.publish(Event.CueUploadFailed(answerId: answer.id, cueId: answer.cueId, reason: error.reason, error: "\(error)"))
                pump()
            }
        }
    }

    /// The one retry loop of an answer: doubling delays from 1 s up to ``CueSettings/maximumRetryDelay``
    /// (60 s) with ±20 % jitter (kiosks that lost the backend together do not come back in step);
    /// a second intent in the same second waits exactly that second.
    private func retry(_ answer: SpooledAnswer, after error: ChatterboxError) {
        attempt += 1
        var backoff = RetryPolicy()
        backoff.initialDelay = 1
        backoff.maxDelay = context.settings.maximumRetryDelay
        let delay = error.isDuplicateIntent ? 1 : (backoff.delay(afterAttempt: attempt) * 1000).rounded() / 1000
        context.logger.info("cue answer \(answer.id): \(error); again in \(delay) s")
        context.publish(Event.CueUploadRetrying(answerId: answer.id, attempt: attempt, delayS: delay, error: "\(error)"))
        context.after(delay) { [self] in pump() }
    }

    // MARK: - The spool as clients see it

    /// The answers waiting and what was set aside, for `spool.list`.
    func listing() -> (answers: [CueSpoolEntry], setAside: [SpoolSetAside]) {
        guard let spool else { return ([], []) }
        let answers = spool.answers.map { answer in
            CueSpoolEntry(answer, state: uploading == answer.id ? .uploading : refused.contains(answer.id) ? .refused : .pending,
                          lastError: lastError[answer.id])
        }
        return (answers, spool.setAside)
    }

    /// `cue.discard`: removes a spooled answer that is not uploading now (a refused one, one
    /// the learner does not want sent); logged and told.
    func discard(_ id: String) throws(ControlError) {
        guard !id.isEmpty, id.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0 == "-") }) else {
            throw ControlError(.badArguments, "'answer_id' is a spooled answer's id (spool.list)")
        }
        guard uploading != id else { throw ControlError(.invalidState, "answer \(id) is being uploaded now") }
        guard let spool, let answer = pending.first(where: { $0.id == id }) else { throw ControlError(.badArguments, "no answer \(id) in the spool") }
        spool.remove(id)
        refused.remove(id)
        lastError[id] = nil
        context.logger.notice("cue spool: answer \(id) to cue \(answer.cueId) discarded by a client")
        context.metrics.increment(.cueAnswers, "discarded")
        context.publish(Event.CueAnswerDiscarded(answerId: id, cueId: answer.cueId))
    }

    /// An answer set aside (by recovery, or before an upload found its audio damaged).
    private func told(_ entry: SpoolSetAside) { entry.report(logger: context.logger, metrics: context.metrics, publish: context.publish) }
}
