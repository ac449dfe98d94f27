import Glibc
import PracticeProtocol

// The end of a learner's visit (``VisitKeeper``) in cue practice: an answer being recorded is
// dropped, one being uploaded is let finish, and on a shared kiosk the learner is signed out
// (the tokens file removed, as `signout` does) and what was kept for them offline removed.
// Answers still spooled stay for their own learner's next sign-in (each names its profile).
extension CuePractice {
    /// Whether the learner waits on something: an answer recorded, uploaded, or its
    /// transcript and evaluation awaited. From any queue but the cue queue.
    public var visitBusy: Bool { queue.sync { recording != nil || delivery.uploading != nil || results.isFollowing } }

    public func endVisit(forgetting identity: VisitIdentity, _ done: @escaping @Sendable () -> Void) {
        queue.async { [self] in
            if let recording { drop(Event.CueDiscarded(cueId: recording.cueId, reason: .cancelled)) }
            visitEnding = (identity, done)
            windDownVisit()
        }
    }

    func uploadSettled() { if visitEnding != nil { windDownVisit() } }

    /// On the queue: once no upload runs, the learner is forgotten.
    func windDownVisit() {
        guard let (identity, done) = visitEnding, delivery.uploading == nil else { return }
        visitEnding = nil
        // The last recording heard again is the learner's voice: never left for the next.
        unlink(Self.playbackFile(stateDirectory))
        if identity == .shared {
            let account = learner.accountId
            results.forgetAll()
            client().signOut()
            signedOut(reason: "the visit ended")
            if let account { cache.forget(user: "account-\(account)") }
        }
        done()
    }
}
