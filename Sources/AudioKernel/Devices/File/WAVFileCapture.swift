/// Capture from a WAV file: the file's samples, period by period, then silence (a
/// microphone in a quiet room), optionally paced in real time. The file's rate, channels and
/// sample format (any the WAV decoder reads) are the device's native format, which the
/// engine converts; the file is read whole at open, so reading never touches the disk.
final class WAVFileCapture: CaptureBackend {
    let format: StreamFormat
    let periodFrames: Int
    /// The whole file, read once; the samples lie from `position` to `end`.
    private let file: [UInt8]
    private var position: Int
    private let end: Int
    private var pacer: RealTimePacer?

    init(path: String, realTime: Bool, configuration: AudioStreamConfiguration) throws(AudioError) {
        func refuse(_ kind: AudioError.Kind, _ message: String) -> AudioError {
            AudioError(kind, message: message, operation: "opening WAV file '\(path)' for capture")
        }
        let bytes: [UInt8]
        // Bounded as every whole-file read is: `file:/dev/zero` or a FIFO that never ends
        // would otherwise be read until memory runs out.
        switch SystemCall.readFile(atPath: path, maximumBytes: WAVDecoder.maximumFileBytes) {
        case .success(let read): bytes = read
        case .failure(.fileTooLarge):
            throw refuse(.openFailed, "more than \(WAVDecoder.maximumFileBytes >> 20) MiB; a capture file is read whole and must be smaller")
        case .failure(let code): throw refuse(.openFailed, "\(code)")
        }
        let parsed = bytes.withUnsafeBytes { raw in Result { () throws(WAVError) -> WAVLayout in try WAVDecoder.parse(raw) } }
        let layout: WAVLayout
        switch parsed {
        case .success(let value): layout = value
        case .failure(let error): throw refuse(.unsupportedFormat, error.description)
        }
        let native = layout.format.streamFormat
        let asked = configuration.deviceFormat(native: native)
        guard asked == native else { throw refuse(.unsupportedFormat, "the file is \(native), the stream asks for \(asked)") }
        guard (8_000...192_000).contains(native.sampleRate), (1...8).contains(native.channels) else {
            throw refuse(.unsupportedFormat, "the file is \(native), outside 8-192 kHz and 1-8 channels")
        }
        format = native
        periodFrames = configuration.periodFrames(atRate: native.sampleRate)
        file = bytes
        position = layout.dataRange.lowerBound
        end = layout.dataRange.upperBound
        pacer = realTime ? RealTimePacer(periodNanoseconds: configuration.periodNanoseconds) : nil
    }

    var reachedEnd: Bool { position >= end }

    func read(into buffer: UnsafeMutableRawPointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        if RealTimePacer.wait(&pacer, wake: wake) { return .woken }
        let wanted = periodFrames * format.bytesPerFrame
        let available = max(0, min(wanted, end - position))
        if available > 0 {
            file.withUnsafeBytes { all in buffer.copyMemory(from: all.baseAddress! + position, byteCount: available) }
            position += available
        }
        if available < wanted { (buffer + available).initializeMemory(as: UInt8.self, repeating: 0, count: wanted - available) }
        return .transferred
    }

    func latencyFrames() -> Int? { 0 }
    func close() {}
}
