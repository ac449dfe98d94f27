/// Playback into a WAV file (streamed: a crash leaves a readable file), optionally paced in
/// real time.
final class WAVFilePlayback: PlaybackBackend {
    private let writer: WAVFileWriter
    private var pacer: RealTimePacer?

    init(path: String, realTime: Bool, configuration: AudioStreamConfiguration) throws(AudioError) {
        do {
            writer = try WAVFileWriter(path: path, format: configuration.format)
        } catch {
            throw AudioError(.openFailed, message: error.description, operation: "opening WAV file '\(path)' for playback")
        }
        pacer = realTime ? RealTimePacer(periodNanoseconds: configuration.periodNanoseconds) : nil
    }

    func waitForRoom(wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        RealTimePacer.wait(&pacer, wake: wake) ? .woken : .transferred
    }

    func write(_ buffer: UnsafeBufferPointer<Int16>, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        do {
            try writer.write(buffer)
        } catch {
            throw AudioError(.io, message: error.description, operation: "writing WAV file '\(writer.path)'")
        }
        return .transferred
    }

    func drain(wake: EventSignal) throws(AudioError) {}
    func flush() {}
    func latencyFrames() -> Int? { 0 }

    func close() {
        try? writer.close(sync: true)
    }
}
