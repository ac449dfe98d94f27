/// How a reply's playback ended.
public struct PlaybackReport: Equatable, Sendable {
    /// Seconds of the reply that were played.
    public var playedSeconds: Double
    /// Whether `stop` cut it short.
    public var interrupted: Bool
    /// Underruns during the reply (the network was late; silence was played).
    public var underruns: Int
    /// The number ``StreamingPlayer/beginReply()`` returned for the reply.
    public var reply: Int
    /// The jitter buffer's lead when the reply started, in milliseconds: how much audio it
    /// waited for before the first sample.
    public var leadMilliseconds: Int
    /// The lead the next reply will start with (grown by this reply's underruns, or shrunk
    /// by its steady playback).
    public var nextLeadMilliseconds: Int

    public init(playedSeconds: Double, interrupted: Bool, underruns: Int, reply: Int, leadMilliseconds: Int = 0, nextLeadMilliseconds: Int = 0) {
        self.playedSeconds = playedSeconds
        self.interrupted = interrupted
        self.underruns = underruns
        self.reply = reply
        self.leadMilliseconds = leadMilliseconds
        self.nextLeadMilliseconds = nextLeadMilliseconds
    }
}

/// What the player reports, on the playback thread.
public enum PlayerEvent: Equatable, Sendable {
    /// The reply's first sample was handed to the device; it is heard after `latencyFrames`.
    /// `reply` is the number ``StreamingPlayer/beginReply()`` returned for it.
    case started(latencyFrames: Int, reply: Int)
    /// The queue ran dry before the reply's end; silence is played until the jitter buffer
    /// holds its (now longer) lead again.
    case underrun(total: Int)
    /// The device has played the reply's last sample (or the fade after `stop`).
    case finished(PlaybackReport)
    /// A clip mixed over whatever plays (``StreamingPlayer/beginMix()``) reached the device.
    case mixStarted(mix: Int)
    /// The mixed clip ended, played out or stopped; `reply` in the report is its mix number.
    case mixFinished(PlaybackReport)

    /// Whether the event is the mix layer's (a clip mixed over whatever plays).
    public var isMixLayer: Bool {
        switch self {
        case .mixStarted, .mixFinished: return true
        case .started, .underrun, .finished: return false
        }
    }
}
