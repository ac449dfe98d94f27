import Dispatch
import Synchronization

/// The part of a reply the network's thread touches (the daemon's backend queue): it starts
/// the speaker on the first chunk and queues every chunk, unless the reply was stopped
/// meanwhile. The audio goes from the stream to the speaker without waiting for the
/// session's queue.
///
/// One hand-off per chunk: the reply's state is one atomic word, and a chunk goes straight
/// to the speaker that began the reply (``SpeakerReply``), whose own lock is the only one it
/// takes. Whether a chunk still belongs to the sound playing is the speaker's to decide (it
/// drops a chunk of a reply it stopped, ended or replaced), so the feed never holds a lock
/// across the speaker's calls. `enqueue` runs on the backend's queue only; `stop`, `end`
/// and `owns` on any.
public final class ReplyFeed: @unchecked Sendable {
    private let audio: any ReplySpeakerProvider
    /// `begun`, `stopped` and `ended` bits. `reply` is written once, by `enqueue`, before
    /// `begun` is published with release ordering; it is read only after `begun` is seen.
    private let state = Atomic<Int>(0)
    private static let begun = 1, stopped = 2, ended = 4
    private var reply: SpeakerReply?
    /// The backend's queue's own: whether a chunk has come (its time is the first audio's).
    private var sawAudio = false
    /// The clock the first chunk's time is read on: the daemon's one clock, whose base must be
    /// the player's sound timestamps' (Dispatch's uptime).
    private let clock: any MonotonicClock
    /// Where the reply's audio is kept for a replay (nil: not kept).
    public let take: ReplyTake?

    public init(audio: any ReplySpeakerProvider, clock: any MonotonicClock = UptimeClock(), take: ReplyTake? = nil) {
        self.audio = audio
        self.clock = clock
        self.take = take
    }

    /// Queues a chunk; for the reply's first chunk, the time it came (uptime ns: Dispatch's
    /// time, the base of the player's sound timestamps it is compared with; docs/architecture.md).
    public func enqueue(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        // Taken before the chunk is queued: a speaker without a clock (a file) starts the
        // sound on its own thread the moment the chunk lands, so a time taken after
        // `enqueue` could be later than the sound's `started`.
        let arrived = sawAudio ? 0 : clock.now
        let seen = state.load(ordering: .acquiring)
        guard seen & (Self.stopped | Self.ended) == 0 else { return nil }
        // What the learner heard, or would have: a stopped reply keeps what came before the stop.
        take?.append(bytes)
        if seen & Self.begun != 0, let reply {
            reply.speaker.enqueue(bytes, reply: reply.number)
        } else if let begun = audio.beginReply() {
            reply = begun
            let (published, _) = state.compareExchange(expected: seen, desired: seen | Self.begun, ordering: .acquiringAndReleasing)
            // A stop or an end came while the speaker began: nobody else knows the reply
            // began, so it is stopped here, and this chunk is not played.
            guard published else {
                begun.speaker.stop(reply: begun.number)
                return nil
            }
            begun.speaker.enqueue(bytes, reply: begun.number)
        }
        guard !sawAudio else { return nil }
        sawAudio = true
        return arrived
    }

    /// Stops the sound at once; later chunks are dropped.
    public func stop() {
        let before = state.bitwiseOr(Self.stopped, ordering: .acquiringAndReleasing).oldValue
        if before & (Self.begun | Self.stopped) == Self.begun, let reply {
            reply.speaker.stop(reply: reply.number)
        }
    }

    /// No more chunks: the speaker plays out what it has. Returns whether anything
    /// plays (false: no audio came, or it was stopped).
    public func end() -> Bool {
        let before = state.bitwiseOr(Self.ended, ordering: .acquiringAndReleasing).oldValue
        guard before & (Self.begun | Self.stopped) == Self.begun, let reply else { return false }
        if before & Self.ended == 0 { reply.speaker.endReply(reply.number) }
        return true
    }

    /// Whether the speaker's reply `number` is this one.
    public func owns(_ number: Int) -> Bool {
        state.load(ordering: .acquiring) & Self.begun != 0 && reply?.number == number
    }
}
