/// What a reply's feed (``ReplyFeed``) asks of the speaker that began the reply: the player,
/// or a test's speaker in memory. Every call names its reply by the number the speaker gave
/// it; a call for a reply the speaker has stopped, ended or replaced is dropped, so the
/// speaker alone decides whether a chunk still belongs to the sound playing.
public protocol ReplySpeaker: AnyObject, Sendable {
    /// Queues a chunk of reply `number`; nil when that reply no longer takes any.
    @discardableResult
    func enqueue(_ bytes: UnsafeRawBufferPointer, reply number: Int) -> Bool?
    func endReply(_ number: Int)
    /// Stops reply `number` within one period (with a fade) if it is the one playing.
    func stop(reply number: Int)
}

extension StreamingPlayer: ReplySpeaker {}

/// A reply begun on a speaker, addressed by the number the speaker gave it.
public struct SpeakerReply: Sendable {
    public let speaker: any ReplySpeaker
    public let number: Int

    public init(speaker: any ReplySpeaker, number: Int) {
        self.speaker = speaker
        self.number = number
    }
}

/// Whatever holds the speaker of the moment (the daemon's devices come and go): it begins a
/// reply on it, or says there is none. A feed asks once, at the reply's first chunk, and
/// keeps the speaker it was given.
public protocol ReplySpeakerProvider: AnyObject, Sendable {
    /// Starts a reply on the speaker: the speaker that plays it and its number (carried by
    /// the player's `started` and `finished` events), or nil when there is no speaker.
    func beginReply() -> SpeakerReply?
}
