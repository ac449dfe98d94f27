import Dispatch
import FoundationEssentials

// The cue spool as clients see it: `spool.list`'s answers, `cue.discard`, and what recovery
// or an upload set aside. The spool is touched on the queue only (CueSpool checks it): an
// upload's walk, which runs as a task, hops to the queue for each touch (``onQueue(_:)``).
extension CuePractice {
    /// The answers waiting and what was set aside, for `spool.list` (waits for the queue:
    /// never from the control queue).
    public func spoolListing() -> (answers: [CueSpoolEntry], setAside: [SpoolSetAside]) {
        queue.sync {
            guard let spool else { return ([], []) }
            let answers = spool.answers.map { answer in
                CueSpoolEntry(answer, state: uploading == answer.id ? .uploading : refused.contains(answer.id) ? .refused : .pending,
                              lastError: lastError[answer.id])
            }
            return (answers, spool.setAside)
        }
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
        logger.notice("cue spool: answer \(id) to cue \(answer.cueId) discarded by a client")
        metrics.increment(.cueAnswers, "discarded")
        publish(Event.CueAnswerDiscarded(answerId: id, cueId: answer.cueId))
    }

    /// An answer set aside (by recovery, or before an upload found its audio damaged).
    func told(_ entry: SpoolSetAside) { entry.report(logger: logger, metrics: metrics, publish: publish) }

    /// Runs `body` on the queue (the spool's owner) from a task, and hands back its result.
    func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in queue.async { continuation.resume(returning: body()) } }
    }
}
