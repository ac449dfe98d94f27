/// A playback stream on a named device (see ``AudioDeviceName``): the I/O thread asks
/// `render` for each period and writes it to the device.
///
/// As with ``CaptureDevice``, `start` opens the device at once; xruns (underruns) are
/// recovered and counted, a lost device is reopened with backoff. The period buffer is
/// allocated once; nothing on the per-period path allocates.
public final class PlaybackDevice: @unchecked Sendable {
    public let name: AudioDeviceName
    public let configuration: AudioStreamConfiguration
    private let runner: DeviceRunner<any PlaybackBackend>

    public init(name: AudioDeviceName, configuration: AudioStreamConfiguration = AudioStreamConfiguration()) throws(AudioError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        self.runner = try DeviceRunner(periodSamples: configuration.periodSamples, common: { $0 })
    }

    deinit { stop(drain: false) }

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
        let (name, configuration, buffer, wake) = (self.name, self.configuration, runner.buffer, runner.wake)
        try runner.start(
            label: "playback on \(name)",
            framesPerPeriod: configuration.periodFrames,
            open: { () throws(AudioError) -> any PlaybackBackend in try DeviceBackends.openPlayback(name, configuration) },
            step: { backend throws(AudioError) -> DeviceIOResult in
                // Room first, then render: the period goes to the device the moment it is made.
                let room = try backend.waitForRoom(wake: wake)
                if room == .woken { return .woken }
                render(buffer)
                let written = try backend.write(UnsafeBufferPointer(buffer), wake: wake)
                return room == .xrun && written == .transferred ? .transferredAfterXrun : written
            },
            onEvent: onEvent
        )
    }

    /// Stops asking for periods and closes the device.
    ///
    /// - Parameter drain: true waits until what was written has been played; false drops it
    ///   at once.
    public func stop(drain: Bool = false) {
        let wake = runner.wake
        runner.stop { backend in
            if drain {
                wake.reset()
                try? backend.drain(wake: wake)
            } else {
                backend.flush()
            }
        }
    }

    /// Whether the stream is running.
    public var isRunning: Bool { runner.isRunning }

    /// The stream's counters.
    public var statistics: AudioDeviceStatistics { runner.currentStatistics }
}
