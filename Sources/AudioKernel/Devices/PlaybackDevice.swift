import Synchronization

/// A playback stream on a named device (see ``AudioDeviceName``): the I/O thread asks
/// `render` for Float32 frames in the engine's rate and channels, converts them to the
/// device's own format (``OutputConverter``) and writes each period to the device.
///
/// As with ``CaptureDevice``, `start` opens the device at once; xruns (underruns) are
/// recovered and counted, a lost device is reopened with backoff (at whatever format it
/// now runs). The converter and its buffers are made when the device opens; nothing on the
/// per-period path allocates.
public final class PlaybackDevice: @unchecked Sendable {
    public let name: AudioDeviceName
    public let configuration: AudioStreamConfiguration
    private let runner: DeviceRunner<PlaybackPath>
    private let report = Locked(DeviceReport())
    /// Set by ``wakeFromIdle()``: something to play has come to a parked device.
    private let activity: EventSignal
    /// Whether the open backend has a clock (``DeviceBackend/hasClock``).
    private let clocked = ClockFlag()

    public init(name: AudioDeviceName, configuration: AudioStreamConfiguration = AudioStreamConfiguration()) throws(AudioError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        self.runner = try DeviceRunner(common: { $0 })
        self.activity = try EventSignal()
    }

    deinit { stop(drain: false) }

    /// Opens the device and starts playing what `render` provides.
    ///
    /// - Parameters:
    ///   - render: called on the I/O thread for Float32 frames at the engine's rate and
    ///     channels (all of the buffer: write silence when there is nothing to play), about
    ///     one period at a time. It must not block.
    ///   - idle: called on the I/O thread between periods: true while the source has nothing
    ///     to play nor anything about to (see ``wakeFromIdle()``). A device idle for
    ///     ``parkAfterMilliseconds`` is parked where its backend can be (PulseAudio corks the
    ///     stream) until ``wakeFromIdle()``; nil plays silence all the time.
    ///   - ready: for a device without a clock (an unpaced WAV file, see
    ///     ``DeviceBackend/hasClock``), called on the I/O thread before each period with the
    ///     samples `render` will be asked for: true when the source can give that much sound
    ///     (or its sound's end) without padding it with silence. Until it is, the device
    ///     waits for ``soundArrived()``. Nil, or on a clocked device: never asked.
    ///   - onEvent: called on the I/O thread with xruns, losses and restorations.
    public func start(
        render: @escaping @Sendable (UnsafeMutableBufferPointer<Float>) -> Void,
        idle: (@Sendable () -> Bool)? = nil,
        ready: (@Sendable (Int) -> Bool)? = nil,
        onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void = { _ in }
    ) throws(AudioError) {
        let (name, configuration, wake, report, activity, clocked) = (self.name, self.configuration, runner.wake, self.report, self.activity, self.clocked)
        let parking = idle.map { DeviceParking(idle: $0, afterFrames: configuration.sampleRate * Self.parkAfterMilliseconds / 1000, report: report) }
        try runner.start(
            label: "playback on \(name)",
            framesPerPeriod: configuration.periodFrames,
            open: { () throws(AudioError) -> PlaybackPath in
                let backend = try DeviceBackends.openPlayback(name, configuration)
                let path = try PlaybackPath(backend: backend, common: backend, engineRate: configuration.sampleRate) { () throws(AudioError) in
                    try OutputConverter(sourceRate: configuration.sampleRate, sourceChannels: configuration.channels,
                                        device: backend.format, periodFrames: backend.periodFrames)
                }
                report.withLock { $0.format = path.backend.format }
                clocked.store(path.backend.hasClock)
                return path
            },
            step: { path throws(AudioError) -> DeviceIOResult in
                if let parking, path.backend.canPark, parking.due(after: configuration.periodFrames) {
                    if try parking.park(path.backend, wake: wake, activity: activity) == .woken { return .woken }
                }
                if let ready, !path.backend.hasClock {
                    // No clock: the period is taken when the source has it, never padded.
                    let samples = path.converter.engineSamplesForNextPeriod
                    while samples > 0, !ready(samples) {
                        // Cleared before the last look: sound that arrives after it sets it again.
                        activity.reset()
                        if ready(samples) { break }
                        if wake.wait(or: activity, timeoutNanoseconds: Self.clocklessRecheckNanoseconds) === wake { return .woken }
                    }
                }
                // Room first, then render: the period goes to the device the moment it is made.
                let room = try path.backend.waitForRoom(wake: wake)
                if room == .woken { return .woken }
                path.converter.render(into: path.buffer, pull: render)
                let written = try path.backend.write(path.buffer, wake: wake)
                return room == .xrun && written == .transferred ? .transferredAfterXrun : written
            },
            onEvent: onEvent
        )
    }

    /// How long a device's source must be idle before the device is parked: long enough
    /// that the gaps inside a reply never park it, short against the learner's turn.
    public static let parkAfterMilliseconds = 250

    /// Wakes a parked device: call after making something playable (the `idle` closure given
    /// to ``start(render:idle:ready:onEvent:)`` must already say false).
    public func wakeFromIdle() { activity.signal() }

    /// Tells a device without a clock that the source has more sound (samples queued, a
    /// sound ended or stopped): it looks at `ready` again. A clocked device ignores it (no
    /// system call on the network side of a sound card).
    public func soundArrived() {
        if !clocked.isSet { activity.signal() }
    }

    /// Whether the open device has a clock of its own (true until it opens).
    public var hasClock: Bool { clocked.isSet }

    /// A device without a clock looks at its source again this often even if nothing told it
    /// to: a safety net, not the pace (``soundArrived()`` is).
    static let clocklessRecheckNanoseconds: Int64 = 1_000_000_000

    /// Starts playing PCM16 frames in the engine's rate and channels (tests and tools that
    /// make PCM16): each is converted to Float32 exactly, then as ``start(render:onEvent:)``.
    public func start(
        renderPCM16: @escaping @Sendable (UnsafeMutableBufferPointer<Int16>) -> Void,
        onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void = { _ in }
    ) throws(AudioError) {
        let scratch = PCM16Scratch()
        try start(render: { floats in
            let samples = scratch.samples(floats.count)
            renderPCM16(samples)
            SampleConverter.int16ToFloat32(UnsafeBufferPointer(samples), into: floats)
        }, onEvent: onEvent)
    }

    /// The format the device runs at, once opened (after a reopen, the new one).
    public var deviceFormat: StreamFormat? { report.withLock { $0.format } }

    /// Stops asking for periods and closes the device.
    ///
    /// - Parameter drain: true waits until what was written has been played; false drops it
    ///   at once.
    public func stop(drain: Bool = false) {
        let wake = runner.wake
        runner.stop { path in
            if drain {
                wake.reset()
                try? path.backend.drain(wake: wake)
            } else {
                path.backend.flush()
            }
        }
    }

    /// Whether the stream is running.
    public var isRunning: Bool { runner.isRunning }

    /// The stream's counters.
    public var statistics: AudioDeviceStatistics {
        var statistics = runner.currentStatistics
        statistics.parks = report.withLock { $0.parks }
        return statistics
    }
}

/// An atomic Bool in a class, so that the device's closures share it with the device.
final class ClockFlag: Sendable {
    private let value = Atomic<Bool>(true)
    func store(_ flag: Bool) { value.store(flag, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// A PCM16 buffer that grows to the largest request once, then is reused (the converter asks
/// for the same chunk size every time).
final class PCM16Scratch: @unchecked Sendable {
    private var storage = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 0)

    func samples(_ count: Int) -> UnsafeMutableBufferPointer<Int16> {
        if storage.count < count {
            storage.deallocate()
            storage = .allocate(capacity: count)
            storage.initialize(repeating: 0)
        }
        return UnsafeMutableBufferPointer(rebasing: storage[0..<count])
    }

    deinit { storage.deallocate() }
}
