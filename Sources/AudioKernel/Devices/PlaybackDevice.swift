/// A playback stream on a named device (see ``AudioDeviceName``): the I/O thread asks
/// `render` for each period and writes it to the device.
///
/// As with ``CaptureDevice``, `start` opens the device at once; xruns (underruns) are
/// recovered and counted, a lost device is reopened with backoff. The period buffer is
/// allocated once; nothing on the per-period path allocates.
public final class PlaybackDevice: @unchecked Sendable {
    public let name: AudioDeviceName
    public let configuration: AudioStreamConfiguration
    private let runner: DeviceRunner
    private let buffer: UnsafeMutableBufferPointer<Int16>
    private var backend: PlaybackBackend?

    public init(name: AudioDeviceName, configuration: AudioStreamConfiguration = AudioStreamConfiguration()) throws(AudioError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        self.runner = try DeviceRunner(label: "playback")
        self.buffer = .allocate(capacity: configuration.periodSamples)
        buffer.initialize(repeating: 0)
    }

    deinit {
        stop(drain: false)
        buffer.deallocate()
    }

    /// Opens the device and starts playing what `render` provides.
    ///
    /// - Parameters:
    ///   - render: called on the I/O thread to fill each period (all of it: write silence
    ///     when there is nothing to play). It must not block.
    ///   - onEvent: called on the I/O thread with xruns, losses and restorations.
    public func start(
        render: @escaping @Sendable (UnsafeMutableBufferPointer<Int16>) -> Void,
        onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void = { _ in }
    ) throws(AudioError) {
        guard !runner.isRunning else {
            throw AudioError(.invalidState, message: "already started", operation: "starting playback on \(name)")
        }
        backend = try DeviceBackends.openPlayback(name, configuration)
        let buffer = self.buffer
        let wake = runner.wake
        do {
            try runner.start(
                step: { [unowned self] () throws(AudioError) -> DeviceIOResult in
                    render(buffer)
                    return try backend!.write(UnsafeBufferPointer(buffer), wake: wake)
                },
                reopen: { [unowned self] () throws(AudioError) in
                    backend = try DeviceBackends.openPlayback(name, configuration)
                },
                closeBackend: { [unowned self] in
                    backend?.close()
                    backend = nil
                },
                latency: { [unowned self] in backend?.latencyFrames() },
                reachedEnd: { false },
                framesPerPeriod: configuration.periodFrames,
                onEvent: onEvent
            )
        } catch {
            backend?.close()
            backend = nil
            throw error
        }
    }

    /// Stops asking for periods and closes the device.
    ///
    /// - Parameter drain: true waits until what was written has been played; false drops it
    ///   at once.
    public func stop(drain: Bool = false) {
        runner.stop()
        if let backend {
            if drain {
                runner.wake.reset()
                try? backend.drain(wake: runner.wake)
            } else {
                backend.flush()
            }
            backend.close()
        }
        backend = nil
    }

    /// Whether the stream is running.
    public var isRunning: Bool { runner.isRunning }

    /// The stream's counters.
    public var statistics: AudioDeviceStatistics { runner.currentStatistics }
}
