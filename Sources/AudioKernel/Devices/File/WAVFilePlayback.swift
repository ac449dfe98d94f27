/// Playback into a WAV file (streamed: a crash leaves a readable file), optionally paced in
/// real time. The file is PCM16 at the stream's rate and channels unless `?rate=` or
/// `?channels=` force others.
///
/// Paced (`?realtime`), it behaves as a sound card: a period every period of wall time,
/// silence between sounds and wherever a sound's data comes late. Unpaced, it has no clock:
/// it holds what is played and nothing else, each sound's samples back to back as fast as
/// they come (a reply streamed over the network, a clip decoded from disk), no silence while
/// nothing plays; only a sound's last period is completed with silence.
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

    /// Unpaced, the file is written as fast as sound comes: see ``DeviceBackend/hasClock``.
    var hasClock: Bool { pacer != nil }

    func drain(wake: EventSignal) throws(AudioError) {}
    func flush() {}
    /// Paced, a period rendered is in the file only once it is written, after the render:
    /// one period, as a sound card's buffer holds one (a reply's `finished` came before its
    /// last period was in the file, and a test reading it then missed the tail). Unpaced,
    /// none: the device takes a period only when one is there to write.
    func latencyFrames() -> Int? { pacer == nil ? 0 : periodFrames }

    func close() {
        try? writer.close(sync: true)
    }
}
