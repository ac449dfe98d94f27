/// What one blocking I/O step of a backend did.
enum DeviceIOResult: Equatable {
    /// A full period was transferred.
    case transferred
    /// The wake signal was set (stop); nothing more was transferred.
    case woken
    /// A full period was transferred after an xrun was recovered: the device lost data
    /// (capture overrun) or played silence (playback underrun) before it.
    case transferredAfterXrun
    /// An xrun happened and was recovered; nothing was transferred.
    case xrun
}

/// The device-specific half of a stream. Every method runs on the device's I/O thread
/// except `close` (and a playback drain or flush), which run after that thread has ended.
protocol DeviceBackend: AnyObject {
    /// The format the device was opened at (what was asked, native where nothing was).
    var format: StreamFormat { get }
    /// Frames per period at the device's rate, as granted.
    var periodFrames: Int { get }
    /// The latency in frames when the device reports one: for playback, how long a sample
    /// written now takes to be heard.
    func latencyFrames() -> Int?
    /// Whether a finite input (a file) has been read to its end; silence follows.
    var reachedEnd: Bool { get }
    /// Whether the input is an echo canceller's output (the kiosk's own voice removed).
    var isEchoCancelled: Bool { get }
    /// Whether the device can be parked while nobody needs it (``park(wake:activity:)``).
    var canPark: Bool { get }
    /// Whether the device consumes at a pace of its own (a sound card, a sound server, a
    /// paced file). A device without one (a WAV file written as fast as it comes) takes a
    /// period only when the source has one to give: it writes what is played, never the
    /// silence a clocked device plays while the source waits for data.
    var hasClock: Bool { get }
    /// Stops the stream (PulseAudio corks it) so that neither the server nor the I/O thread
    /// wakes every period while nobody needs it: a playback device while nothing plays, a
    /// capture device while a half-duplex kiosk speaks. Blocks until `activity` is set (the
    /// device runs again: true) or `wake` is (stop: false). A parked playback device holds
    /// silence; a parked capture device delivers nothing, and what it had captured before
    /// is dropped, so the first period after it is fresh.
    func park(wake: EventSignal, activity: EventSignal) throws(AudioError) -> Bool
    func close()
}

extension DeviceBackend {
    var reachedEnd: Bool { false }
    var isEchoCancelled: Bool { false }
    var canPark: Bool { false }
    var hasClock: Bool { true }
    func park(wake: EventSignal, activity: EventSignal) throws(AudioError) -> Bool { !wake.isSet }
}

/// The device-specific half of a capture stream.
protocol CaptureBackend: DeviceBackend {
    /// Reads exactly one period (``DeviceBackend/periodFrames`` frames of ``DeviceBackend/format``)
    /// into `buffer`, blocking until it is there, the wake signal is set, or an xrun happens.
    func read(into buffer: UnsafeMutableRawPointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult
}

/// The device-specific half of a playback stream. The loop waits for room first and renders
/// only then, so a period is never rendered early and held while the device is full: a chunk
/// that arrives is heard one period sooner, and `stop` takes effect one period sooner.
protocol PlaybackBackend: DeviceBackend {
    /// Blocks until the device can take a whole period (or the wake signal is set).
    func waitForRoom(wake: EventSignal) throws(AudioError) -> DeviceIOResult
    /// Writes exactly one period (in the device's format) from `buffer`, blocking while the
    /// device buffer is full.
    func write(_ buffer: UnsafeRawPointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult
    /// Blocks until everything written has been played.
    func drain(wake: EventSignal) throws(AudioError)
    /// Discards what is queued but not yet played.
    func flush()
}
