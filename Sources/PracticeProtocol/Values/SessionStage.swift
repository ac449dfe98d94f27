/// Where the kiosk's one session stands. ``SessionController`` holds the only copy;
/// every change is published as a `session.stage` event.
///
/// Transitions (anything not listed is refused; `session.close` leads from every stage
/// to `idle`, and a session the backend lost (404) leads from every stage to `failed`):
///
/// | from | to | on |
/// |---|---|---|
/// | idle, completed, failed | starting | `session.start` |
/// | starting | greeting | session created (`POST /sessions`) |
/// | starting | failed | creation failed |
/// | greeting | ready | greeting played (or failed: the session goes on without it) |
/// | ready, greeting, replying | recording | `turn.start` (barge-in from greeting and replying) |
/// | ready, greeting, replying | listening | `listen` (barge-in likewise) |
/// | listening | recording | speech started (hands-free) |
/// | listening, recording | ready | `turn.cancel`; a turn without speech (`turn.discarded`) |
/// | recording | uploading | turn recorded and spooled |
/// | ready | uploading | `say {text}`, `spool.retry` |
/// | idle | uploading | `spool.retry` of a turn recovered from an earlier run (resumes its session) |
/// | uploading | replying | the backend accepted the turn (200) |
/// | uploading | ready | delivery failed for good: the turn stays in the spool, reported pending |
/// | replying | ready | reply played and drained, void turn, dropped stream, `playback.stop` |
/// | ready | ending | `session.end` |
/// | ending | reviewing | conversation: `DELETE` answered `reviewing` |
/// | ending | idle | review mode: `DELETE` answered `ended` |
/// | ending | ready | `DELETE` failed (the talk goes on; `session.end` again) |
/// | reviewing | reviewed | marks appeared, the status left `reviewing`, or 3 errors in a row |
/// | reviewed | finishing | `review.finish` |
/// | finishing | completed | status `completed` (summary or "no summary") |
/// | finishing | reviewed | `POST /end` failed or polling gave up (try again) |
public enum SessionStage: String, Sendable, CaseIterable, CustomStringConvertible {
    case idle, starting, greeting, ready, listening, recording, uploading, replying
    case ending, reviewing, reviewed, finishing, completed, failed

    public var description: String { rawValue }

    /// The stages each stage may move to (besides `idle` by `session.close` and `failed`).
    static let transitions: [SessionStage: Set<SessionStage>] = [
        .idle: [.starting, .uploading],
        .starting: [.greeting, .failed],
        .greeting: [.ready, .recording, .listening],
        .ready: [.recording, .listening, .uploading, .ending],
        .listening: [.recording, .ready],
        .recording: [.uploading, .ready],
        .uploading: [.replying, .ready],
        .replying: [.ready, .recording, .listening],
        .ending: [.reviewing, .idle, .ready],
        .reviewing: [.reviewed],
        .reviewed: [.finishing],
        .finishing: [.completed, .reviewed],
        .completed: [.starting],
        .failed: [.starting],
    ]

    /// Whether `self → next` is a transition of the table.
    public func canMove(to next: SessionStage) -> Bool {
        next == .idle || next == .failed || (Self.transitions[self]?.contains(next) ?? false)
    }

    /// Whether a session exists on the backend in this stage.
    public var hasSession: Bool { self != .idle && self != .starting }
}
