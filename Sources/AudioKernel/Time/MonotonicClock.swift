import Dispatch

/// What time it is, in monotonic nanoseconds: the one question the lowest layers (the reply
/// feed, the HTTP transport's pool) ask of time. They are handed one, so that the daemon's
/// one clock (PracticeSupport's `PracticeClock`, which refines this) is the only time they
/// read, and a test holds it. ``UptimeClock`` is Dispatch's, the base of the devices' sound
/// timestamps (docs/architecture.md).
public protocol MonotonicClock: Sendable {
    var now: UInt64 { get }
}

/// Dispatch's uptime clock.
public struct UptimeClock: MonotonicClock {
    public init() {}
    public var now: UInt64 { DispatchTime.now().uptimeNanoseconds }
}
