/// Capture from a WAV file: the file's samples, period by period, then silence (a
/// microphone in a quiet room), optionally paced in real time. The file must be in the
/// stream's format; it is read whole at open, so reading never touches the disk.
final class WAVFileCapture: CaptureBackend {
    private let samples: [Int16]
    private var position = 0
    private var pacer: RealTimePacer?

    init(path: String, realTime: Bool, configuration: AudioStreamConfiguration) throws(AudioError) {
        let decoded: DecodedWAV
        do {
            decoded = try WAVDecoder.decode(contentsOfFile: path)
        } catch {
            let kind: AudioError.Kind
            if case .io = error { kind = .openFailed } else { kind = .unsupportedFormat }
            throw AudioError(kind, message: error.description, operation: "opening WAV file '\(path)' for capture")
        }
        guard decoded.format == configuration.format else {
            throw AudioError(.unsupportedFormat, message: "the file is \(decoded.format), the stream is \(configuration.format)",
                             operation: "opening WAV file '\(path)' for capture")
        }
        samples = decoded.samples
        pacer = realTime ? RealTimePacer(periodNanoseconds: configuration.periodNanoseconds) : nil
    }

    var reachedEnd: Bool { position >= samples.count }

    func read(into buffer: UnsafeMutableBufferPointer<Int16>, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        if RealTimePacer.wait(&pacer, wake: wake) { return .woken }
        let available = max(0, min(buffer.count, samples.count - position))
        if available > 0 {
            samples.withUnsafeBufferPointer { all in
                _ = UnsafeMutableBufferPointer(rebasing: buffer[0..<available]).initialize(from: all[position..<(position + available)])
            }
            position += available
        }
        if available < buffer.count {
            UnsafeMutableBufferPointer(rebasing: buffer[available...]).update(repeating: 0)
        }
        return .transferred
    }

    func latencyFrames() -> Int? { 0 }
    func close() {}
}
