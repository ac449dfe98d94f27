/// Silence in, nothing out, at the pace of a real device.
final class NullDevice: CaptureBackend, PlaybackBackend {
    private var pacer: RealTimePacer

    init(configuration: AudioStreamConfiguration) {
        pacer = RealTimePacer(periodNanoseconds: configuration.periodNanoseconds)
    }

    func read(into buffer: UnsafeMutableBufferPointer<Int16>, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        if pacer.waitForNextPeriod(wake: wake) { return .woken }
        buffer.update(repeating: 0)
        return .transferred
    }

    func waitForRoom(wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        pacer.waitForNextPeriod(wake: wake) ? .woken : .transferred
    }

    func write(_ buffer: UnsafeBufferPointer<Int16>, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        .transferred
    }

    func drain(wake: EventSignal) throws(AudioError) {}
    func flush() {}
    func latencyFrames() -> Int? { 0 }
    func close() {}
}
