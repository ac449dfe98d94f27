/// What a running device reports, on its I/O thread.
public enum AudioDeviceEvent: Equatable, Sendable {
    /// The first period was transferred.
    case started
    /// An xrun (capture overrun or playback underrun) was recovered; `total` counts them.
    case xrun(total: Int)
    /// The device went away (unplugged, server gone); the device retries with backoff.
    case deviceLost(AudioError)
    /// The device was opened again after `attempts` tries.
    case deviceRestored(attempts: Int)
    /// A finite input (a file) was read to its end; silence follows.
    case endOfInput
}

/// Counters of a device, readable at any time from any thread.
public struct AudioDeviceStatistics: Equatable, Sendable {
    /// Periods transferred.
    public var periods = 0
    /// Frames transferred.
    public var frames = 0
    /// Xruns recovered.
    public var xruns = 0
    /// Times the device was lost.
    public var losses = 0
    /// Times the device was opened again after a loss.
    public var reopens = 0
    /// The latest latency the device reported, in frames.
    public var latencyFrames: Int?
    /// CPU time the I/O thread has used, in nanoseconds.
    public var ioThreadCPUNanoseconds: Int64 = 0
    /// Times the I/O thread blocked and woke up again (voluntary context switches).
    public var ioThreadWakeups: Int64 = 0
    /// Times the device was parked (PulseAudio: corked): a playback device while nothing
    /// played, a capture device while a half-duplex kiosk spoke.
    public var parks = 0

    public init() {}
}
