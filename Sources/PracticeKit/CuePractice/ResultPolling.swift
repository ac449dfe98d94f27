import Dispatch
import PracticeProtocol

/// A recording's results followed until ready, in ``ReviewPolling``'s shape: its
/// transcription asked for and polled, then its evaluation, each step's status told as it
/// changes (`cue.transcript`, `cue.evaluation`). A step that falls back to `none` (after
/// `processing`, or after three polls of nothing) is asked for again, `cue.result_attempts`
/// times in all; one not ready within ``CueSettings/resultTimeout`` (600 s) fails. A failure is told
/// (`cue.results_failed`) and ends the following. Polls go through the cue (its own
/// recordings), not the learner's whole history. On the context's queue; the waits are
/// the context's timers, so a test's clock runs ten minutes of polls in milliseconds.
final class ResultPolling: @unchecked Sendable {
    private typealias Step = Event.CueResultsFailed.Step

    /// One recording being followed.
    private struct Following {
        var cue: Int
        var profile: Int
        var step: Step = .transcription
        /// Asks for this step so far.
        var attempts = 0
        /// When this step gives up (the scheduler's nanoseconds).
        var deadline: UInt64
        /// The status last told for this step.
        var told = CueResultStatus.none
        /// This ask's polls: whether `processing` was seen, and how many said `none`.
        var sawProcessing = false
        var quietPolls = 0
    }

    private unowned let context: any CueContext
    /// By recording id.
    private var following: [Int: Following] = [:]

    init(context: any CueContext) {
        self.context = context
    }

    /// Whether a recording's results are being followed.
    func follows(_ recordingID: Int) -> Bool { following[recordingID] != nil }

    /// Whether a transcript or an evaluation is awaited.
    var isFollowing: Bool { !following.isEmpty }

    /// The learner signed out with their visit: nothing more is asked for them (a poll in
    /// flight finds nothing to follow when it answers).
    func forgetAll() { following.removeAll() }

    /// Follows `recordingID` (a recording of `cue` for `profile`) until its evaluation is
    /// ready; nothing when it is followed already.
    func watch(_ recordingID: Int, cue: Int, profile: Int) {
        guard following[recordingID] == nil else { return }
        following[recordingID] = Following(cue: cue, profile: profile, deadline: deadline())
        ask(recordingID)
    }

    private func deadline() -> UInt64 { context.scheduler.now + UInt64(max(0, context.settings.resultTimeout) * 1e9) }

    /// Asks the backend for the step (again), then polls it.
    private func ask(_ id: Int) {
        guard var state = following[id] else { return }
        guard state.attempts < context.settings.resultAttempts else { return fail(id, "fell back to none each time") }
        state.attempts += 1
        state.sawProcessing = false
        state.quietPolls = 0
        following[id] = state
        let step = state.step
        context.call({ client in
            step == .transcription ? try await client.requestTranscription(recordingID: id) : try await client.requestEvaluation(recordingID: id)
        }) { [self] result in
            switch result {
            case .success(let asked):
                if asked.status == "transcript_not_ready" { return fail(id, "no transcript yet") }
                poll(id)
            case .failure(let error):
                callFailed(id, error)
            }
        }
    }

    private func poll(_ id: Int) {
        guard let state = following[id] else { return }
        guard context.scheduler.now < state.deadline else { return timedOut(id) }
        let (profile, cue) = (state.profile, state.cue)
        context.call({ try await $0.cue(profileID: profile, cueID: cue) }) { [self] result in
            switch result {
            case .success(let detail): polled(id, detail)
            case .failure(let error): callFailed(id, error)
            }
        }
    }

    private func polled(_ id: Int, _ detail: ChatterboxCueDetail) {
        guard var state = following[id] else { return }
        guard let recording = detail.cue.recordings?.first(where: { $0.profileCueRecordingId == id }) else {
            return fail(id, "the recording is not among cue \(state.cue)'s")
        }
        let report = recording.report
        let status = CueResultStatus(rawValue: state.step == .transcription ? report.status : report.evaluation.status) ?? .none
        if status != state.told {
            state.told = status
            if state.step == .transcription {
                context.publish(Event.CueTranscript(recordingId: id, status: status, transcript: status == .ready ? report.transcript : nil))
            } else {
                context.publish(Event.CueEvaluation(recordingId: id, status: status, evaluation: status == .ready ? report.evaluation.result : nil))
            }
        }
        if status == .ready {
            following[id] = state
            return stepReady(id)
        }
        if status == .processing { state.sawProcessing = true }
        if status == .none { state.quietPolls += 1 }
        following[id] = state
        if status == .none && (state.sawProcessing || state.quietPolls >= 3) {
            // Back to none after processing (or none for a while): it failed; ask again.
            return context.scheduler.now >= state.deadline ? timedOut(id) : ask(id)
        }
        context.after(context.settings.pollInterval) { [self] in poll(id) }
    }

    /// The transcript is ready: the evaluation next, with asks and a deadline of its own.
    private func stepReady(_ id: Int) {
        guard var state = following[id] else { return }
        guard state.step == .transcription else {
            following[id] = nil
            return
        }
        state.step = .evaluation
        state.attempts = 0
        state.told = .none
        state.deadline = deadline()
        following[id] = state
        ask(id)
    }

    /// A call failed: sign-in needed is told; a transient failure asks again a poll later.
    private func callFailed(_ id: Int, _ error: ChatterboxError) {
        if case .signInRequired = error { context.signedOut(reason: "\(error)") }
        guard error.isTransient else { return fail(id, "\(error)") }
        context.after(context.settings.pollInterval) { [self] in ask(id) }
    }

    private func timedOut(_ id: Int) { fail(id, "not ready within \(Int(context.settings.resultTimeout)) s") }

    private func fail(_ id: Int, _ error: String) {
        guard let state = following.removeValue(forKey: id) else { return }
        context.publish(Event.CueResultsFailed(recordingId: id, step: state.step, attempts: state.attempts, error: error))
    }
}
