/// Settings of the ``StreamingPlayer``.
public struct StreamingPlayerConfiguration: Hashable, Sendable {
    /// The jitter buffer: a reply starts once this much audio is queued *and* this long
    /// has passed since its first chunk arrived (or at once when the reply is complete).
    /// A backend that streams at exactly real time (as the practice backend does) gives
    /// a queue-size rule no lead at all when its first chunk is large; the time rule keeps
    /// this much lead for the whole reply.
    public var prebufferMilliseconds: Int = 50
    /// The adaptive jitter buffer's ceiling. After an underrun the lead a reply starts
    /// with (and rebuffers to) grows to cover the gap the network left, up to this; while
    /// replies play without one it shrinks back toward ``prebufferMilliseconds`` by
    /// ``leadDecayMillisecondsPerSecond`` per second played, as WebRTC's NetEQ lets its
    /// target delay forget old jitter.
    public var maximumLeadMilliseconds: Int = 500
    public var leadDecayMillisecondsPerSecond: Int = 4
    /// How far beyond the gap of an underrun the lead grows.
    public var leadStepMilliseconds: Int = 200
    /// The fade-out of `stop` (barge-in, void turn): short enough to feel instant, long
    /// enough not to click.
    public var fadeMilliseconds: Int = 20
    /// The most audio queued ahead of the device; a reply arriving faster than real time
    /// is held up to this much.
    public var capacitySeconds: Int = 120
    /// How long a volume change takes: a step in gain clicks ("zipper noise"); a ramp this
    /// long is heard as a smooth change.
    public var volumeRampMilliseconds: Int = 30

    public init() {}
}
