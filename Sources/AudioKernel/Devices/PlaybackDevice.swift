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
    private let opened = Locked<StreamFormat?>(nil)

    public init(name: AudioDeviceName, configuration: AudioStreamConfiguration = AudioStreamConfiguration()) throws(AudioError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        self.runner = try DeviceRunner(common: { $0 })
    }

    deinit { stop(drain: false) }

    /// Opens the device and starts playing what `render` provides.
    ///
    /// - Parameters:
    ///   - render: called on the I/O thread for Float32 frames at the engine's rate and
    ///     channels (all of the buffer: write silence when there is nothing to play), about
    ///     one period at a time. It must not block.
    ///   - onEvent: called on the I/O thread with xruns, losses and restorations.
    public func start(
        render: @escaping @Sendable (UnsafeMutableBufferPointer<Float>) -> Void,
        onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void = { _ in }
    ) throws(AudioError) {
        let (name, configuration, wake, opened) = (self.name, self.configuration, runner.wake, self.opened)
        try runner.start(
            label: "playback on \(name)",
            framesPerPeriod: configuration.periodFrames,
            open: { () throws(AudioError) -> PlaybackPath in
                let backend = try DeviceBackends.openPlayback(name, configuration)
                let path = try PlaybackPath(backend: backend, common: backend, engineRate: configuration.sampleRate) { () throws(AudioError) in
                    try OutputConverter(sourceRate: configuration.sampleRate, sourceChannels: configuration.channels,
                                        device: backend.format, periodFrames: backend.periodFrames)
                }
                opened.withLock { $0 = path.backend.format }
                return path
            },
            step: { path throws(AudioError) -> DeviceIOResult in
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
    public var deviceFormat: StreamFormat? { opened.withLock { $0 } }

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
    public var statistics: AudioDeviceStatistics { runner.currentStatistics }
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
