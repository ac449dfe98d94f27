/// Playback into a WAV file (streamed: a crash leaves a readable file), optionally paced in
/// real time. The file is PCM16 at the stream's rate and channels unless `?rate=` or
/// `?channels=` force others.
final class WAVFilePlayback: PlaybackBackend {
    let format: StreamFormat
    let periodFrames: Int
    private let writer: WAVFileWriter
    private var pacer: RealTimePacer?

    init(path: String, realTime: Bool, configuration: AudioStreamConfiguration) throws(AudioError) {
        format = configuration.deviceFormat(native: configuration.engineFormat)
        guard format.sampleFormat == .s16 else {
            throw AudioError(.unsupportedFormat, message: "a WAV file device writes s16, not \(format.sampleFormat)",
                             operation: "opening WAV file '\(path)' for playback")
        }
        periodFrames = configuration.periodFrames(atRate: format.sampleRate)
        do {
            writer = try WAVFileWriter(path: path, format: WAVFormat(sampleRate: format.sampleRate, channels: format.channels))
        } catch {
            throw AudioError(.openFailed, message: error.description, operation: "opening WAV file '\(path)' for playback")
        }
        pacer = realTime ? RealTimePacer(periodNanoseconds: configuration.periodNanoseconds) : nil
    }

    func waitForRoom(wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        RealTimePacer.wait(&pacer, wake: wake) ? .woken : .transferred
    }

    func write(_ buffer: UnsafeRawPointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        let count = periodFrames * format.channels
        do {
            try writer.write(UnsafeBufferPointer(start: buffer.assumingMemoryBound(to: Int16.self), count: count))
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
