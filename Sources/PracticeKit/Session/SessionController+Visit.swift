import PracticeProtocol

// The end of a learner's visit (``VisitKeeper``) in a conversation: the talk is ended at the
// backend as `session.end` ends it, a turn on its way is delivered first, and the session's
// state and, on a shared kiosk, the learner's kept profile are forgotten.
extension SessionController {
    /// Whether the learner waits on something: a session starting, a greeting or a reply, a
    /// turn being recorded or delivered, the review or the summary being made.
    public var visitBusy: Bool {
        switch snapshot.stage {
        case .starting, .greeting, .recording, .uploading, .replying, .ending, .reviewing, .finishing: true
        case .idle, .ready, .listening, .reviewed, .completed, .failed: false
        }
    }

    public func endVisit(forgetting identity: VisitIdentity, _ done: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            visitEnding = (identity, done)
            windDownVisit()
        }
    }

    /// On the queue: ends the visit's session unless a turn is still on its way (then once
    /// its delivery is settled: accepted, refused, or left pending in the spool for its own
    /// session, which `spool.retry` or the next start can still deliver).
    func windDownVisit() {
        guard let (identity, done) = visitEnding, stage != .uploading else { return }
        visitEnding = nil
        if let session = active, stage.talkGoesOn {
            // Ended as `session.end` ends it: the backend makes the review for nobody to read,
            // and no tutor waits on a conversation its learner left.
            let id = session.id
            call(backend(), { backend async throws(BackendError) in try await backend.endTalk(sessionID: id) }) { [self] result in
                switch result {
                case .success(let ended): logger.info("session \(id) ended at the backend with its visit (\(ended.status))")
                case .failure(let error): logger.warning("session \(id) not ended at the backend with its visit: \(error)")
                }
            }
        }
        close(reason: "the visit ended")
        if identity == .shared { learner.forgetLearner() }
        done()
    }
}

extension SessionStage {
    /// The talk is under way on the backend (not yet ended by `session.end`).
    var talkGoesOn: Bool {
        switch self {
        case .greeting, .ready, .listening, .recording, .uploading, .replying: true
        default: false
        }
    }
}
