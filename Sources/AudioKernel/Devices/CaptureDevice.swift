/// A capture stream on a named device (see ``AudioDeviceName``): the device runs its own
/// format, and each period is converted (``InputConverter``: decoded, mixed down, resampled)
/// to PCM16 in the engine's rate and channels, delivered on a dedicated I/O thread.
///
/// `start` opens the device at once, so a bad name or a missing device fails fast; after
/// that, xruns are recovered and counted, and a device that vanishes is reopened with
/// backoff, each reported as an ``AudioDeviceEvent``. The converter and its buffers are
/// made when the device opens; nothing on the per-period path allocates.
public final class CaptureDevice: @unchecked Sendable {
    public let name: AudioDeviceName
    public let configuration: AudioStreamConfiguration
    private let runner: DeviceRunner<CapturePath>
    private let report = Locked(DeviceReport())
    /// Set by ``wakeFromRest()``: the input is needed again.
    private let activity: EventSignal

    public init(name: AudioDeviceName, configuration: AudioStreamConfiguration = AudioStreamConfiguration()) throws(AudioError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        self.runner = try DeviceRunner(common: { $0 })
        self.activity = try EventSignal()
    }

    deinit { stop() }

    /// Opens the device and starts delivering periods.
    ///
    /// - Parameters:
    ///   - onPeriod: called on the I/O thread with each period's PCM16 frames in the engine's
    ///     rate and channels (a period's duration; the count varies by a frame when the
    ///     rates do not divide); the buffer is reused, so copy what must outlive the call,
    ///     and return quickly (a stall causes an overrun).
    ///   - rest: called on the I/O thread between periods: true while nobody needs the
    ///     input (a half-duplex kiosk speaking). The device then rests where its backend can
    ///     park (PulseAudio corks the stream; elsewhere it goes on delivering) until
    ///     ``wakeFromRest()``; nil never rests.
    ///   - resumed: called on the I/O thread after a rest, before the first period after it:
    ///     the input has a gap there (what was captured before the rest was dropped).
    ///   - onEvent: called on the I/O thread with xruns, losses and restorations.
    public func start(
        onPeriod: @escaping @Sendable (UnsafeBufferPointer<Int16>) -> Void,
        rest: (@Sendable () -> Bool)? = nil,
        resumed: @escaping @Sendable () -> Void = {},
        onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void = { _ in }
    ) throws(AudioError) {
        let (name, configuration, wake, report) = (self.name, self.configuration, runner.wake, self.report)
        let activity = self.activity
        let parking = rest.map { DeviceParking(idle: $0, afterFrames: 0, report: report) }
        try runner.start(
            label: "capture on \(name)",
            framesPerPeriod: configuration.periodFrames,
            open: { () throws(AudioError) -> CapturePath in
                let backend = try DeviceBackends.openCapture(name, configuration)
                let path = try CapturePath(backend: backend, common: backend, engineRate: configuration.sampleRate) { () throws(AudioError) in
                    try InputConverter(source: backend.format, maximumFrames: backend.periodFrames,
                                       targetRate: configuration.sampleRate, targetChannels: configuration.channels)
                }
                report.withLock { $0.format = path.backend.format; $0.echoCancelled = backend.isEchoCancelled }
                return path
            },
            step: { path throws(AudioError) -> DeviceIOResult in
                if let parking, path.backend.canPark, parking.due(after: configuration.periodFrames) {
                    switch try parking.park(path.backend, wake: wake, activity: activity) {
                    case .woken: return .woken
                    case .resumed: resumed()
                    case .notParked: break
                    }
                }
                let result = try path.backend.read(into: path.buffer, wake: wake)
                if result == .transferred || result == .transferredAfterXrun { onPeriod(path.converter.convertToPCM16(path.buffer, frames: path.backend.periodFrames)) }
                return result
            },
            onEvent: onEvent
        )
    }

    /// Ends a rest: call when the `rest` closure given to ``start(onPeriod:rest:resumed:onEvent:)``
    /// has come to say false.
    public func wakeFromRest() { activity.signal() }

    /// Stops delivering periods (within one period) and closes the device.
    public func stop() {
        runner.stop()
    }

    /// The format the device runs at, once opened (after a reopen, the new one).
    public var deviceFormat: StreamFormat? { report.withLock { $0.format } }

    /// Whether the device is an echo canceller's output, as its server describes it
    /// (PulseAudio's `module-echo-cancel` source, PipeWire's echo-cancel node), once opened.
    public var inputIsEchoCancelled: Bool { report.withLock { $0.echoCancelled } }

    /// Whether the stream is running.
    public var isRunning: Bool { runner.isRunning }

    /// The stream's counters (``AudioDeviceStatistics/parks`` counts its rests).
    public var statistics: AudioDeviceStatistics {
        var statistics = runner.currentStatistics
        statistics.parks = report.withLock { $0.parks }
        return statistics
    }
}
