import AudioKernel
import PracticeProtocol

/// One way of practising, as the daemon runs it: TalkCo's conversations
/// (``SessionController``) or Chatterbox's cue practice (``CuePractice``). The daemon builds
/// the one its `backend.kind` names (``PracticeDaemon/makeFlow(_:)``), lets it register its
/// commands, hands it what the recorder and the player tell, and asks it what `status` and
/// `spool.list` show: it never asks which flow it runs.
public protocol PracticeFlow: AnyObject, Sendable {
    /// Registers the flow's commands in the daemon's table, and refuses the other flow's
    /// (``CommandTable/refuse(route:_:)``: `invalid_state`, naming the backend they need).
    func register(into table: CommandTable)
    /// At start, once the devices are open: what an earlier run left in the spool is told.
    func start()
    /// The settings of a (re)loaded configuration; `userID` is the kiosk's.
    func configure(_ configuration: DaemonConfiguration, userID: String)

    // What the recorder tells, on the capture thread.

    func speechStarted(recording: UInt64?)
    func recorded(_ turn: RecordedTurn)
    /// The microphone failed: a recording under way cannot go on.
    func captureFailed(_ message: String)
    /// What the player tells, on its thread (the daemon publishes it first).
    func playerEvent(_ event: PlayerEvent)

    /// Whether the flow keeps the devices open (a session under way, an answer recording).
    var needsDevices: Bool { get }
    /// Whether `play` may take the speaker (no reply of the flow's own is playing).
    var speakerIsFree: Bool { get }
    /// `playback.stop`: stops what the flow itself plays (a reply drains); whether anything was.
    func stopPlayback() -> Bool
    /// The conversation's state, for `status` and the first event (`idle` in cue practice).
    var sessionSnapshot: SessionState { get }
    /// The learner signed in, for `status` (cue practice; nil in conversations).
    var learnerSnapshot: LearnerState? { get }
    /// What `spool.list` shows of the flow's spool (waits for the flow's queue: never call
    /// it from the control queue).
    func spoolListing() -> FlowSpoolListing
    /// The backend's cheapest call that needs no learner (`status`'s check), with
    /// `configuration`'s deadline and no retries.
    func probeBackend(_ configuration: BackendConfiguration) async throws
    /// Whether the learner waits on something in flight (a reply, an upload, a review being
    /// made): the visit's idle clock does not run meanwhile. Never asked on the flow's queue.
    var visitBusy: Bool { get }
    /// The learner's visit ended: what it began is closed, what it left in flight delivered,
    /// and its learner forgotten (`shared`: their sign-in and kept profile too); `done` once so.
    func endVisit(forgetting identity: VisitIdentity, _ done: @escaping @Sendable () -> Void)
    /// SIGTERM, first half: nothing new starts; a recording under way is kept.
    func beginShutdown()
    /// SIGTERM, second half: waits for what the recorder handed over on its stop.
    func finishShutdown()
}

/// A flow's spool as `spool.list` shows it.
public struct FlowSpoolListing: Sendable {
    public var turns: [SpoolEntry] = []
    public var answers: [CueSpoolEntry] = []
    public var setAside: [SpoolSetAside] = []
    /// Where the flow keeps them.
    public var directory = ""
}
