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
    private let runner: DeviceRunner
    private let buffer: UnsafeMutableBufferPointer<Int16>
    // Touched by `start`/`stop` on the owner's thread and, while running, by the I/O thread.
    private var backend: CaptureBackend?

    public init(name: AudioDeviceName, configuration: AudioStreamConfiguration = AudioStreamConfiguration()) throws(AudioError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        self.runner = try DeviceRunner(label: "capture")
        self.buffer = .allocate(capacity: configuration.periodSamples)
        buffer.initialize(repeating: 0)
    }

    deinit {
        stop()
        buffer.deallocate()
    }

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
        guard !runner.isRunning else {
            throw AudioError(.invalidState, message: "already started", operation: "starting capture on \(name)")
        }
        backend = try DeviceBackends.openCapture(name, configuration)
        let buffer = self.buffer
        let wake = runner.wake
        do {
            try runner.start(
                step: { [unowned self] () throws(AudioError) -> DeviceIOResult in
                    let result = try backend!.read(into: buffer, wake: wake)
                    if result == .transferred || result == .transferredAfterXrun { onPeriod(UnsafeBufferPointer(buffer)) }
                    return result
                },
                reopen: { [unowned self] () throws(AudioError) in
                    backend = try DeviceBackends.openCapture(name, configuration)
                },
                closeBackend: { [unowned self] in
                    backend?.close()
                    backend = nil
                },
                latency: { [unowned self] in backend?.latencyFrames() },
                reachedEnd: { [unowned self] in backend?.reachedEnd ?? false },
                framesPerPeriod: configuration.periodFrames,
                onEvent: onEvent
            )
        } catch {
            backend?.close()
            backend = nil
            throw error
        }
    }

    /// Stops delivering periods (within one period) and closes the device.
    public func stop() {
        runner.stop()
        backend?.close()
        backend = nil
    }

    /// Whether the stream is running.
    public var isRunning: Bool { runner.isRunning }

    /// The stream's counters.
    public var statistics: AudioDeviceStatistics { runner.currentStatistics }
}
