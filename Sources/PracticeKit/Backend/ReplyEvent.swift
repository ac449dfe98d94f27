/// What a reply stream (`/start`, `/chat`, `/chat/text`) delivers, as it arrives.
///
/// Delivered on the client's callback queue, one at a time and in order. `audio` lends the
/// decoded PCM bytes of one event without copying them: the buffer is valid only during
/// the call (hand it to the player's ring or copy it).
public enum ReplyEvent {
    /// The server turned the request away with 503 ("still connecting") or it could not
    /// connect; attempt `attempt + 1` follows after `delay` seconds.
    case retrying(attempt: Int, delay: Double, reason: BackendError)
    /// Upload progress of a turn's WAV (bytes sent so far, bytes in all).
    case uploadProgress(sent: Int64, total: Int64)
    /// The status line and headers arrived (200): events follow, or not.
    case accepted
    /// What the server heard; empty means a void turn.
    case transcript(String)
    /// Raw PCM16 little-endian bytes, 24 kHz mono; the count may be odd (the player joins
    /// the bytes of consecutive events before cutting samples).
    case audio(UnsafeRawBufferPointer)
    /// The whole reply text (after the last audio).
    case response(String)
    /// A server-side timing (`first_audio`, `total`).
    case timing(step: String, seconds: Double)
    /// One event could not be read (bad base64, broken JSON); the stream goes on.
    case malformedEvent(type: String, reason: String)
    /// The last event.
    case done
}

/// How a reply stream ended once it had started (status 200).
public enum ReplyEnd: Equatable, Sendable {
    /// `done` arrived.
    case done
    /// The stream closed cleanly without `done`.
    case endedWithoutDone
    /// The connection broke, or the stream went silent past its deadline.
    case interrupted(BackendError)
    /// Cancelled by the caller (barge-in, stop).
    case cancelled
}

/// A finished reply: what came, and how it ended. No transcript, an empty transcript and
/// no audio are each their own outcome (see the contract's "A 200 says nothing yet").
public struct ReplySummary: Equatable, Sendable {
    /// nil when no `transcript` event came at all; "" for a void turn.
    public var transcript: String?
    public var responseText: String?
    public var audioEvents = 0
    public var audioBytes = 0
    public var malformedEvents = 0
    /// Server timings by step.
    public var timings: [String: Double] = [:]
    public var end: ReplyEnd = .endedWithoutDone
    /// Attempts made (more than 1 after 503s or refused connections).
    public var attempts = 1
    /// Seconds from the request to the first audio event, measured by the client.
    public var firstAudioDelay: Double?

    public init() {}

    /// The server heard nothing: discard the turn, stop playback.
    public var isVoid: Bool { transcript == "" }
    public var hasAudio: Bool { audioBytes > 0 }
    public var sawDone: Bool { end == .done }
}
