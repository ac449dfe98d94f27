/// A capture stream on a named device (see ``AudioDeviceName``): PCM16 periods delivered on
/// a dedicated I/O thread.
///
/// `start` opens the device at once, so a bad name or a missing device fails fast; after
/// that, xruns are recovered and counted, and a device that vanishes is reopened with
/// backoff, each reported as an ``AudioDeviceEvent``. The period buffer is allocated once;
/// nothing on the per-period path allocates.
public final class CaptureDevice: @unchecked Sendable {
    public let name: AudioDeviceName
    public let configuration: AudioStreamConfiguration
    private let runner: DeviceRunner<any CaptureBackend>

    public init(name: AudioDeviceName, configuration: AudioStreamConfiguration = AudioStreamConfiguration()) throws(AudioError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        self.runner = try DeviceRunner(periodSamples: configuration.periodSamples, common: { $0 })
    }

    deinit { stop() }

    /// Opens the device and starts delivering periods.
    ///
    /// - Parameters:
    ///   - onPeriod: called on the I/O thread with each period; the buffer is reused, so copy
    ///     what must outlive the call, and return quickly (a stall causes an overrun).
    ///   - onEvent: called on the I/O thread with xruns, losses and restorations.
    public func start(
        onPeriod: @escaping @Sendable (UnsafeBufferPointer<Int16>) -> Void,
        onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void = { _ in }
    ) throws(AudioError) {
        let (name, configuration, buffer, wake) = (self.name, self.configuration, runner.buffer, runner.wake)
        try runner.start(
            label: "capture on \(name)",
            framesPerPeriod: configuration.periodFrames,
            open: { () throws(AudioError) -> any CaptureBackend in try DeviceBackends.openCapture(name, configuration) },
            step: { backend throws(AudioError) -> DeviceIOResult in
                let result = try backend.read(into: buffer, wake: wake)
                if result == .transferred || result == .transferredAfterXrun { onPeriod(UnsafeBufferPointer(buffer)) }
                return result
            },
            onEvent: onEvent
        )
    }

    /// Stops delivering periods (within one period) and closes the device.
    public func stop() {
        runner.stop()
    }

    /// Whether the stream is running.
    public var isRunning: Bool { runner.isRunning }

    /// The stream's counters.
    public var statistics: AudioDeviceStatistics { runner.currentStatistics }
}
