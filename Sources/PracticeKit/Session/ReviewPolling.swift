import Dispatch
import FoundationEssentials
import Glibc
import PracticeProtocol

/// The end of a conversation: the talk ends (`session.end`), the review is generated and
/// polled until it has marks, corrections are asked for, the review is finished
/// (`review.finish`) and polled until the summary comes. Polling gives up after
/// ``SessionSettings/pollErrorLimit`` errors in a row, and the finish after
/// ``SessionSettings/finishTimeout``; each failure names what a UI can offer next. On the
/// session's queue.
final class ReviewPolling: @unchecked Sendable {
    private unowned let context: any SessionContext
    private let backend: @Sendable () -> any ReviewBackend

    /// The last review read (answers `review.get` offline, marked stale).
    private var review: Review?
    /// A poll whose token is not the current one is dropped.
    private var token = 0
    private var polls = 0
    private var errors = 0
    private var started: UInt64 = 0

    private static let closedMeanwhile = ControlError(.invalidState, "the session was closed meanwhile")
    private static let noSession = ControlError(.invalidState, "no session")

    init(context: any SessionContext, backend: @escaping @Sendable () -> any ReviewBackend) {
        self.context = context
        self.backend = backend
    }

    /// A backend call for the session in progress, answering `reply`: refused without a
    /// session; the stage moves first when `moving` is given; with `dropsLateAnswers`, an
    /// answer that comes after the session was closed is refused instead of acted on.
    private func sessionCall<C: ControlCommand, T: Sendable>(
        _ reply: CommandReply<C>, moving stage: SessionStage? = nil, dropsLateAnswers: Bool = true,
        _ body: @escaping @Sendable (any ReviewBackend, String) async throws(BackendError) -> T,
        then: @escaping @Sendable (Result<T, BackendError>, ActiveSession) -> Void
    ) {
        guard let session = context.active else { return reply.fail(Self.noSession) }
        if let stage { context.move(to: stage) }
        let epoch = context.epoch
        let id = session.id
        context.call(backend(), { backend async throws(BackendError) in try await body(backend, id) }) { [self] result in
            if dropsLateAnswers, epoch != context.epoch { return reply.fail(Self.closedMeanwhile) }
            then(result, session)
        }
    }

    /// Stops polling (a poll in flight is dropped when it answers).
    func stop() { token += 1 }

    /// A new session: the old review is forgotten.
    func reset() {
        stop()
        review = nil
    }

    // MARK: - Ending the talk

    func endTalk(_ reply: CommandReply<Command.SessionEnd>) {
        sessionCall(reply, moving: .ending, { backend, id async throws(BackendError) in try await backend.endTalk(sessionID: id) }) { [self] result, session in
            switch result {
            case .success(let ended):
                context.publish(Event.SessionEnded(sessionId: session.id, status: ended.status, mode: session.mode))
                reply.succeed(.init(status: ended.status, mode: session.mode))
                if session.mode == .review || ended.status == .ended {
                    endedInReviewMode()
                } else {
                    context.move(to: .reviewing)
                    startPolling(finishing: false)
                }
            case .failure(let error):
                if error.isSessionGone {
                    context.fail(.sessionGone, error: "\(error)")
                } else {
                    context.publish(Event.SessionEndFailed(message: "\(error)"))
                    context.move(to: .ready)
                }
                reply.fail(ControlError(error))
            }
        }
    }

    /// Review mode has no review to wait for: the session is over (wired to the
    /// controller's close).
    var endedInReviewMode: () -> Void = {}

    // MARK: - Polling

    private func startPolling(finishing: Bool) {
        token += 1
        polls = 0
        errors = 0
        started = context.now
        // The first look comes at once; the backend often has something after one interval.
        schedulePoll(after: finishing ? context.settings.pollInterval : 0, finishing: finishing)
    }

    private func schedulePoll(after delay: Double, finishing: Bool) {
        let token = token
        context.after(delay) { [self] in
            guard token == self.token, let session = context.active else { return }
            context.call(backend(), { backend async throws(BackendError) in try await backend.review(sessionID: session.id) }) { [self] result in
                guard token == self.token else { return }
                polled(result, finishing: finishing)
            }
        }
    }

    private func polled(_ result: Result<Review, BackendError>, finishing: Bool) {
        polls += 1
        let settings = context.settings
        switch result {
        case .success(let fetched):
            errors = 0
            review = fetched
            let marks = fetched.segments.reduce(0) { $0 + $1.aiMarks.count }
            context.publish(Event.ReviewProgress(polls: polls, finishing: finishing, status: fetched.status, segments: fetched.segments.count,
                                                 marks: marks, summary: fetched.summary != nil))
            if !finishing, fetched.hasMarks || fetched.status != .reviewing {
                token += 1
                context.publish(Event.ReviewReady(review: fetched))
                return context.move(to: .reviewed)
            }
            if fetched.status == .completed {
                // Whatever was asked, a session the server says is completed is completed.
                return completed(fetched, note: nil)
            }
        case .failure(let error):
            if error.isSessionGone { return context.fail(.sessionGone, error: "\(error)") }
            errors += 1
            context.publish(Event.ReviewProgress(polls: polls, finishing: finishing, error: "\(error)", errorsInARow: errors))
            if errors >= settings.pollErrorLimit {
                token += 1
                context.logger.warning("review polling gave up after \(errors) errors in a row: \(error)")
                let message = "gave up after \(errors) errors in a row: \(error)"
                if finishing { context.publish(Event.ReviewFinishFailed(message: message)) } else { context.publish(Event.ReviewFailed(message: message)) }
                return context.move(to: .reviewed)
            }
        }
        if finishing, Double(context.now - started) / 1e9 > settings.finishTimeout {
            token += 1
            context.publish(Event.ReviewFinishFailed(message: "no summary after \(Int(settings.finishTimeout)) s"))
            return context.move(to: .reviewed)
        }
        schedulePoll(after: settings.pollInterval, finishing: finishing)
    }

    // MARK: - Reading and correcting

    func fetch(_ reply: CommandReply<Command.ReviewGet>) {
        sessionCall(reply, dropsLateAnswers: false, { backend, id async throws(BackendError) in try await backend.review(sessionID: id) }) { [self] result, session in
            switch result {
            case .success(let fetched):
                if session.id == context.active?.id { review = fetched }
                reply.succeed(.init(review: fetched, stale: false, error: nil))
            case .failure(let error):
                if let review, session.id == context.active?.id {
                    reply.succeed(.init(review: review, stale: true, error: "\(error)"))
                } else {
                    reply.fail(ControlError(error))
                }
            }
        }
    }

    func askCorrection(segment: Int, message: String, _ reply: CommandReply<Command.CorrectionAsk>) {
        let request = CorrectionRequest(segmentId: segment, userMessage: message)
        sessionCall(reply, dropsLateAnswers: false, { backend, id async throws(BackendError) in
            try await backend.requestCorrection(sessionID: id, request)
        }) { [self] result, _ in
            switch result {
            case .success(let correction):
                context.publish(Event.CorrectionAdded(correction: correction))
                reply.succeed(correction)
            case .failure(let error):
                context.publish(Event.CorrectionFailed(segmentId: segment, message: "\(error)"))
                reply.fail(ControlError(error))
            }
        }
    }

    // MARK: - Finishing

    func finish(_ reply: CommandReply<Command.ReviewFinish>) {
        sessionCall(reply, moving: .finishing, { backend, id async throws(BackendError) in try await backend.endSession(sessionID: id) }) { [self] result, _ in
            switch result {
            case .success(let ended):
                reply.succeed(.init(status: ended.status, note: nil))
                startPolling(finishing: ended.status != .completed)
                if ended.status == .completed { schedulePoll(after: 0, finishing: true) }
            case .failure(let error) where error.status == 400:
                // "Session already completed" (trace 28), after a finish whose polling
                // failed: the server's word decides, read from its review.
                confirmCompletion(after: error, reply)
            case .failure(let error):
                if error.isSessionGone { context.fail(.sessionGone, error: "\(error)") } else {
                    context.publish(Event.ReviewFinishFailed(message: "\(error)"))
                    context.move(to: .reviewed)
                }
                reply.fail(ControlError(error))
            }
        }
    }

    /// The session is completed on the server: its review and summary go out, the stage
    /// follows. `note` explains a summary that could not be read.
    private func completed(_ review: Review?, note: String?) {
        token += 1
        if let review { self.review = review }
        let text = note ?? (review?.summary == nil ? "no summary" : "summary ready")
        context.publish(Event.SessionCompleted(sessionId: context.active?.id, summary: review?.summary, note: text, review: review))
        context.move(to: .completed)
    }

    /// `POST /end` was refused (400): if the session is completed on the server, it is
    /// completed here too; otherwise the finish failed and can be tried again.
    private func confirmCompletion(after refusal: BackendError, _ reply: CommandReply<Command.ReviewFinish>) {
        sessionCall(reply, { backend, id async throws(BackendError) in try await backend.review(sessionID: id) }) { [self] result, session in
            switch result {
            case .success(let fetched) where fetched.status == .completed:
                context.logger.notice("session \(session.id) is already completed on the server (\(refusal))")
                reply.succeed(.init(status: .completed, note: "already completed"))
                completed(fetched, note: nil)
            case .failure(let error) where "\(refusal)".contains("already completed"):
                // The server said so; a review that cannot be read must not keep the learner here.
                context.logger.warning("session \(session.id) completed, but its review cannot be read: \(error)")
                reply.succeed(.init(status: .completed, note: "already completed"))
                completed(nil, note: "summary unavailable: \(error)")
            default:
                context.publish(Event.ReviewFinishFailed(message: "\(refusal)"))
                context.move(to: .reviewed)
                reply.fail(ControlError(refusal))
            }
        }
    }
}
