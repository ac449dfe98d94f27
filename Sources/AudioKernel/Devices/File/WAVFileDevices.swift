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

/// Paces a clockless device at one period per period of wall time, against absolute
/// deadlines so that the pace does not drift with the time spent per period.
struct RealTimePacer {
    let periodNanoseconds: Int64
    private var nextDeadline: Int64?

    init(periodNanoseconds: Int64) { self.periodNanoseconds = periodNanoseconds }

    /// Waits for the next period when `pacer` is set; otherwise only checks the wake signal.
    /// - Returns: true when the wake signal is set.
    static func wait(_ pacer: inout RealTimePacer?, wake: EventSignal) -> Bool {
        guard pacer != nil else { return wake.isSet }
        return pacer!.waitForNextPeriod(wake: wake)
    }

    /// Waits until the next period is due.
    /// - Returns: true when the wake signal was set instead.
    mutating func waitForNextPeriod(wake: EventSignal) -> Bool {
        let now = Monotonic.now()
        let deadline = nextDeadline ?? now
        // After a long stall start again from now rather than bursting to catch up.
        nextDeadline = max(deadline, now - 4 * periodNanoseconds) + periodNanoseconds
        if deadline > now { return wake.wait(timeoutNanoseconds: deadline - now) }
        return wake.isSet
    }
}
