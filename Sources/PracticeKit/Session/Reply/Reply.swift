import AudioKernel
import Dispatch
import FoundationEssentials
import PracticeProtocol

/// What a reply answers.
enum ReplyKind: Sendable {
    case greeting
    case turn(TurnUpload)
    case text(String)
}

/// A spooled turn as its upload needs it (``TurnDelivery`` makes one per attempt), and where
/// the attempt's outcome goes: the delivery owns the upload and its retries, the reply only
/// streams and plays it and reports, once, what became of the upload.
struct TurnUpload: Sendable {
    var id: String
    var wav: [UInt8]
    var attempt: Int
    /// When the recorder ended the turn (uptime ns; nil for a resent turn), for the latency figures.
    var recordedAt: UInt64?
    /// Told once, on the session's queue.
    var report: @Sendable (UploadOutcome) -> Void = { _ in }
}

/// What became of one attempt to upload a turn.
enum UploadOutcome: Sendable {
    /// The backend took the turn: it is never sent again.
    case accepted
    /// It failed before the backend took it: the delivery's to retry.
    case failed(BackendError)
    /// A stopped reply's upload never got through (the learner spoke again first).
    case notSent
}

/// Where a turn's upload goes: ``ReplyPlayback`` (which streams it and plays its reply) in
/// the session; a recorder of uploads in the delivery's own tests.
protocol TurnUploading: AnyObject, Sendable {
    func upload(_ upload: TurnUpload)
}

/// One reply in flight: its stream, what has come, and the speaker's progress. Touched on
/// the session's queue only (its ``ReplyFeed`` is the part the backend's queue touches).
final class Reply: @unchecked Sendable {
    let kind: ReplyKind
    let feed: ReplyFeed
    var stream: (any ReplyStreaming)?
    var accepted = false
    var transcript: String?
    var responseText: String?
    var textReleased = false
    var soundStarted = false
    var summary: ReplySummary?
    var failure: BackendError?
    var playback: PlaybackReport?
    var void = false
    var outcome: ReplyOutcome?
    var unansweredPublished = false
    var drainStartedAt: UInt64?
    /// When it was asked for, on the session's clock.
    let requestedAt: UInt64
    var firstAudioAt: UInt64?
    var soundAt: UInt64?
    var streamEndedAt: UInt64?
    var playbackEndedAt: UInt64?

    init(kind: ReplyKind, feed: ReplyFeed, requestedAt: UInt64) {
        self.kind = kind
        self.feed = feed
        self.requestedAt = requestedAt
    }

    var turnID: String? { if case .turn(let upload) = kind { return upload.id } else { return nil } }
    /// Tells the turn's delivery what became of its upload (nothing for other replies).
    func reportUpload(_ outcome: UploadOutcome) { if case .turn(let upload) = kind { upload.report(outcome) } }
    /// When the recorder ended the turn (nil for greetings, typed and resent turns).
    var recordedAt: UInt64? { if case .turn(let upload) = kind { return upload.recordedAt } else { return nil } }
    var isGreeting: Bool { if case .greeting = kind { return true } else { return false } }
    var request: ReplyOutcome.Request {
        switch kind {
        case .greeting: return .greeting
        case .turn: return .audioTurn
        case .text: return .textTurn
        }
    }
    var streamEnded: Bool { summary != nil || failure != nil }
}

/// What the backend's callback queue passes to the session queue about a reply.
enum StreamNote: Sendable {
    case retrying(attempt: Int, delay: Double, reason: String)
    case uploadProgress(sent: Int64, total: Int64)
    case accepted
    case transcript(String)
    case firstAudio(at: UInt64)
    case response(String)
    case timing(step: String, seconds: Double)
    case malformed(type: String, reason: String)
    case finished(Result<ReplySummary, BackendError>)
}
