/// Silence in, nothing out, at the pace of a real device, in the stream's own format unless
/// one is forced.
final class NullDevice: CaptureBackend, PlaybackBackend {
    let format: StreamFormat
    let periodFrames: Int
    private var pacer: RealTimePacer

    init(configuration: AudioStreamConfiguration) {
        format = configuration.deviceFormat(native: configuration.engineFormat)
        periodFrames = configuration.periodFrames(atRate: format.sampleRate)
        pacer = RealTimePacer(periodNanoseconds: configuration.periodNanoseconds)
    }

    func read(into buffer: UnsafeMutableRawPointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        if pacer.waitForNextPeriod(wake: wake) { return .woken }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: periodFrames * format.bytesPerFrame)
        return .transferred
    }

    func waitForRoom(wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        pacer.waitForNextPeriod(wake: wake) ? .woken : .transferred
    }

    func write(_ buffer: UnsafeRawPointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        .transferred
    }

    func drain(wake: EventSignal) throws(AudioError) {}
    func flush() {}
    func latencyFrames() -> Int? { 0 }
    func close() {}
}
