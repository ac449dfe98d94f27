internal import CPulse
import Synchronization

/// A PulseAudio stream on libpulse's asynchronous API, with a plain main loop that the
/// device's own I/O thread runs.
///
/// Not `pa_simple`: its blocking read cannot be interrupted, and a source that delivers
/// nothing (a pipe source with no writer) would hold `stop` forever. Not a threaded main
/// loop either: its thread took each message from the server and woke the I/O thread through
/// a condition, under a lock the woken thread then waited for, so three wake-ups per period
/// where one does. Here a read or write runs the main loop itself (`pa_mainloop_iterate`)
/// until data or room is there; `stop` breaks the wait with `pa_mainloop_wakeup`, which any
/// thread may call. Every call on the stream comes from one thread at a time (the
/// ``DeviceBackend`` contract), which is what libpulse requires of a plain main loop.
///
/// Buffer attributes are always explicit (with none the server picks about two seconds):
/// playback asks for a minimum request of two periods, so that the server asks for data,
/// and the I/O thread wakes, once per two periods (the thread then writes both, one after
/// the other, without waiting); a target length of the stream's buffer plus two periods,
/// so that the sink's own latency stays one period (PulseAudio gives the sink
/// (tlength − 2·minreq) / 2); and a prebuffer of two periods. Capture asks for fragments of
/// one period. Underflows and overflows reported by the server are counted as xruns. A
/// server that goes away fails the stream, reported as a lost device.
final class PulseStream: CaptureBackend, PlaybackBackend, @unchecked Sendable {
    private let mainloop: OpaquePointer
    private var context: OpaquePointer?
    private var stream: OpaquePointer?
    private let isCapture: Bool
    private let label: String
    private var periodBytes = 0
    /// The format the stream runs at: what was forced, the sink's or source's own otherwise.
    private(set) var format: StreamFormat
    private(set) var periodFrames = 0
    /// The device's sample spec, read by `probeNativeSpec`'s callback.
    private var probedSpec: pa_sample_spec?
    private var probeFinished = false
    /// Whether the probed source is an echo canceller's output.
    private(set) var isEchoCancelled = false
    /// Set by the wake observer (`stop`), from any thread.
    private let interrupted = Atomic<Bool>(false)
    /// Underflows and overflows the server reported, counted on the main loop thread.
    private let xrunsReported = Atomic<Int>(0)
    private var xrunsSeen = 0
    /// A capture fragment peeked but not yet wholly consumed.
    private var peeked: (data: UnsafeRawPointer?, length: Int, offset: Int)?
    private var observedWake: EventSignal?
    private var closed = false
    /// Corked by ``park()``.
    private var parked = false

    init(device: String?, capture: Bool, configuration: AudioStreamConfiguration) throws(AudioError) {
        isCapture = capture
        label = "PulseAudio \(capture ? "source" : "sink") '\(device ?? "default")'"
        format = configuration.engineFormat
        guard let loop = pa_mainloop_new() else {
            throw AudioError(.io, message: "pa_mainloop_new failed", operation: "opening \(label)")
        }
        mainloop = loop
        try open(device: device, configuration: configuration)
    }

    deinit { close() }

    private var selfPointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private static func from(_ pointer: UnsafeMutableRawPointer?) -> PulseStream {
        Unmanaged<PulseStream>.fromOpaque(pointer!).takeUnretainedValue()
    }

    private func open(device: String?, configuration: AudioStreamConfiguration) throws(AudioError) {
        let operation = "opening \(label)"
        guard let context = pa_context_new(pa_mainloop_get_api(mainloop), configuration.applicationName) else {
            throw AudioError(.io, message: "pa_context_new failed", operation: operation)
        }
        self.context = context
        let connected = withOptionalCString(configuration.pulseServer) { pa_context_connect(context, $0, PA_CONTEXT_NOAUTOSPAWN, nil) }
        if connected < 0 { throw contextError(operation) }
        while true {
            let state = pa_context_get_state(context)
            if state == PA_CONTEXT_READY { break }
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED { throw contextError(operation) }
            try iterate(operation)
        }

        // The device's own format for every field not forced, so the server converts nothing
        // (its resampler is speex at quality 3 by default); the engine converts instead.
        // The probe runs even when every field is forced: it is also how a named device that
        // does not exist is found. PulseAudio fails the connection to a missing sink, but
        // pipewire-pulse connects it to the default one, so the kiosk would play on (or record
        // from) the wrong device without a word.
        var native = configuration.engineFormat
        if let spec = try probeNativeSpec(device: device, operation: operation) {
            native = StreamFormat(sampleRate: Int(spec.rate), channels: Int(spec.channels),
                                  sampleFormat: Self.sampleFormat(spec.format) ?? .float)
        } else if let device {
            throw AudioError(.openFailed, message: "the server has no \(isCapture ? "source" : "sink") named '\(device)'", operation: operation)
        }
        format = configuration.deviceFormat(native: native)
        guard (8_000...192_000).contains(format.sampleRate), (1...8).contains(format.channels) else {
            throw AudioError(.unsupportedFormat, message: "the device runs \(format); force ?rate= and ?channels= within 8-192 kHz and 1-8 channels",
                             operation: operation)
        }
        periodFrames = configuration.periodFrames(atRate: format.sampleRate)
        periodBytes = periodFrames * format.bytesPerFrame
        var spec = pa_sample_spec(format: Self.pulseFormat(format.sampleFormat), rate: UInt32(format.sampleRate), channels: UInt8(format.channels))
        guard let stream = pa_stream_new(context, isCapture ? "practiced capture" : "practiced playback", &spec, nil) else {
            throw contextError(operation)
        }
        self.stream = stream
        let period = UInt32(periodBytes)
        var attributes = pa_buffer_attr(
            maxlength: UInt32.max,
            tlength: isCapture ? UInt32.max : UInt32(configuration.periods + 2) * period,
            prebuf: isCapture ? UInt32.max : 2 * period,
            minreq: isCapture ? UInt32.max : 2 * period,
            fragsize: isCapture ? period : UInt32.max
        )
        let flags = pa_stream_flags_t(rawValue: PA_STREAM_ADJUST_LATENCY.rawValue | PA_STREAM_AUTO_TIMING_UPDATE.rawValue
                                      | PA_STREAM_INTERPOLATE_TIMING.rawValue)
        let result: Int32
        if isCapture {
            pa_stream_set_overflow_callback(stream, { _, userdata in
                let me = PulseStream.from(userdata)
                me.xrunsReported.add(1, ordering: .relaxed)
            }, selfPointer)
            result = withOptionalCString(device) { pa_stream_connect_record(stream, $0, &attributes, flags) }
        } else {
            pa_stream_set_underflow_callback(stream, { _, userdata in
                let me = PulseStream.from(userdata)
                me.xrunsReported.add(1, ordering: .relaxed)
            }, selfPointer)
            result = withOptionalCString(device) { pa_stream_connect_playback(stream, $0, &attributes, flags, nil, nil) }
        }
        if result < 0 { throw contextError(operation) }
        while true {
            let state = pa_stream_get_state(stream)
            if state == PA_STREAM_READY { break }
            if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED { throw contextError(operation) }
            try iterate(operation)
        }
    }

    /// Runs the main loop once: waits for the server (or ``pa_mainloop_wakeup``) and runs
    /// the callbacks of what came.
    /// The operation's name is made only for an error: this runs every period, and an
    /// interpolated string is an allocation.
    private func iterate(_ operation: @autoclosure () -> String) throws(AudioError) {
        var result: Int32 = 0
        if pa_mainloop_iterate(mainloop, 1, &result) < 0 {
            throw AudioError(.deviceLost, message: "the main loop ended", operation: operation())
        }
    }

    /// Whether a source is an echo canceller's output. PulseAudio's `module-echo-cancel`
    /// names itself as the source's driver; pipewire-pulse reports every driver as
    /// "PipeWire", but PipeWire's echo-cancel module groups its nodes as `echo-cancel-*`.
    static func isEchoCanceller(driver: UnsafePointer<CChar>?, properties: OpaquePointer?) -> Bool {
        if let driver, String(cString: driver) == "module-echo-cancel.c" { return true }
        guard let properties, let group = pa_proplist_gets(properties, "node.group") else { return false }
        return String(cString: group).hasPrefix("echo-cancel")
    }

    /// The sample spec of the sink or source the stream will connect to (the server's
    /// default when `device` is nil); nil when the server does not say.
    private func probeNativeSpec(device: String?, operation: String) throws(AudioError) -> pa_sample_spec? {
        probedSpec = nil
        probeFinished = false
        let name = device ?? (isCapture ? "@DEFAULT_SOURCE@" : "@DEFAULT_SINK@")
        let op: OpaquePointer? = name.withCString { cName in
            if isCapture {
                return pa_context_get_source_info_by_name(context, cName, { _, info, eol, userdata in
                    let me = PulseStream.from(userdata)
                    if let info, eol == 0 {
                        me.probedSpec = info.pointee.sample_spec
                        me.isEchoCancelled = PulseStream.isEchoCanceller(driver: info.pointee.driver, properties: info.pointee.proplist)
                    } else {
                        me.probeFinished = true
                    }
                }, selfPointer)
            } else {
                return pa_context_get_sink_info_by_name(context, cName, { _, info, eol, userdata in
                    let me = PulseStream.from(userdata)
                    if let info, eol == 0 { me.probedSpec = info.pointee.sample_spec } else { me.probeFinished = true }
                }, selfPointer)
            }
        }
        guard let op else { throw contextError(operation) }
        defer { pa_operation_unref(op) }
        while !probeFinished, pa_operation_get_state(op) == PA_OPERATION_RUNNING {
            try iterate(operation)
        }
        // A device that does not exist shows as no info (the callback's eol is negative).
        return probedSpec
    }

    /// PulseAudio's little-endian format for `format`.
    static func pulseFormat(_ format: SampleFormat) -> pa_sample_format_t {
        switch format {
        case .s16: return PA_SAMPLE_S16LE
        case .s24_3: return PA_SAMPLE_S24LE
        case .s24: return PA_SAMPLE_S24_32LE
        case .s32: return PA_SAMPLE_S32LE
        case .float: return PA_SAMPLE_FLOAT32LE
        case .u8: return PA_SAMPLE_U8
        case .alaw: return PA_SAMPLE_ALAW
        case .mulaw: return PA_SAMPLE_ULAW
        }
    }

    /// The engine's format for a native PulseAudio format; nil for big-endian ones and for
    /// 8-bit and G.711 ones, which are opened as float: the server converts from full
    /// precision rather than the engine's 8 bits (they run only when forced).
    static func sampleFormat(_ format: pa_sample_format_t) -> SampleFormat? {
        switch format {
        case PA_SAMPLE_S16LE: return .s16
        case PA_SAMPLE_S24LE: return .s24_3
        case PA_SAMPLE_S24_32LE: return .s24
        case PA_SAMPLE_S32LE: return .s32
        case PA_SAMPLE_FLOAT32LE: return .float
        default: return nil
        }
    }

    /// The context's last error, as an AudioError of the right kind.
    private func contextError(_ operation: String, kind: AudioError.Kind = .openFailed) -> AudioError {
        let code = context.map { pa_context_errno($0) } ?? Int32(PA_ERR_UNKNOWN.rawValue)
        return AudioError(kind, code: code, message: String(cString: pa_strerror(code)), operation: operation)
    }

    func close() {
        guard !closed else { return }
        closed = true
        observedWake?.setObserver(nil)
        observedWake = nil
        if let stream {
            if peeked != nil { pa_stream_drop(stream) }
            pa_stream_set_overflow_callback(stream, nil, nil)
            pa_stream_set_underflow_callback(stream, nil, nil)
            pa_stream_disconnect(stream)
            pa_stream_unref(stream)
        }
        if let context {
            pa_context_disconnect(context)
            pa_context_unref(context)
        }
        stream = nil
        context = nil
        peeked = nil
        pa_mainloop_free(mainloop)
    }

    /// Registers `stop`'s wake-up once per wake signal; called on the I/O thread.
    private func observe(_ wake: EventSignal) {
        guard observedWake !== wake else { return }
        observedWake = wake
        wake.setObserver { [weak self] in
            guard let self else { return }
            self.interrupted.store(true, ordering: .releasing)
            pa_mainloop_wakeup(self.mainloop)
        }
    }

    /// Throws when the stream or its connection has failed (the server went away).
    private func checkAlive(_ doing: String) throws(AudioError) {
        guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY else {
            throw contextError("\(doing) \(label)", kind: .deviceLost)
        }
    }

    /// Whether the server reported an xrun since the last call.
    private func takeXrun() -> Bool {
        let reported = xrunsReported.load(ordering: .relaxed)
        defer { xrunsSeen = reported }
        return reported != xrunsSeen
    }

    func read(into buffer: UnsafeMutableRawPointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        observe(wake)
        let target = buffer
        var filled = 0
        // The stop flag is checked only before waiting: data that is there is still moved.
        while filled < periodBytes {
            try checkAlive("reading from")
            if peeked == nil {
                var data: UnsafeRawPointer?
                var length = 0
                if pa_stream_peek(stream, &data, &length) < 0 { throw contextError("reading from \(label)", kind: .io) }
                if length == 0 {
                    if interrupted.load(ordering: .acquiring) { return .woken }
                    try iterate("reading from \(label)")
                    continue
                }
                peeked = (data, length, 0)
            }
            let fragment = peeked!
            let n = min(fragment.length - fragment.offset, periodBytes - filled)
            if let data = fragment.data {
                (target + filled).copyMemory(from: data + fragment.offset, byteCount: n)
            } else {
                (target + filled).initializeMemory(as: UInt8.self, repeating: 0, count: n)  // a hole in the stream
            }
            filled += n
            if fragment.offset + n == fragment.length {
                pa_stream_drop(stream)
                peeked = nil
            } else {
                peeked = (fragment.data, fragment.length, fragment.offset + n)
            }
        }
        return takeXrun() ? .transferredAfterXrun : .transferred
    }

    func waitForRoom(wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        observe(wake)
        while true {
            try checkAlive("waiting for room in")
            let room = pa_stream_writable_size(stream)
            if room != Int.max, room >= periodBytes { return .transferred }
            if interrupted.load(ordering: .acquiring) { return .woken }
            try iterate("waiting for room in \(label)")
        }
    }

    func write(_ buffer: UnsafeRawPointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        observe(wake)
        let source = buffer
        var written = 0
        while written < periodBytes {
            try checkAlive("writing to")
            let room = pa_stream_writable_size(stream)
            if room == 0 || room == Int.max {
                if interrupted.load(ordering: .acquiring) { return .woken }
                try iterate("writing to \(label)")
                continue
            }
            let n = min(room, periodBytes - written)
            if pa_stream_write(stream, source + written, n, nil, 0, PA_SEEK_RELATIVE) < 0 {
                throw contextError("writing to \(label)", kind: .io)
            }
            written += n
        }
        return takeXrun() ? .transferredAfterXrun : .transferred
    }

    func drain(wake: EventSignal) throws(AudioError) {
        interrupted.store(false, ordering: .relaxed)
        // A corked stream would never drain; parked, it holds nothing to play anyway.
        guard let stream, !parked, pa_stream_get_state(stream) == PA_STREAM_READY else { return }
        guard let op = pa_stream_drain(stream, nil, nil) else { throw contextError("draining \(label)", kind: .io) }
        defer { pa_operation_unref(op) }
        while pa_operation_get_state(op) == PA_OPERATION_RUNNING {
            if pa_stream_get_state(stream) != PA_STREAM_READY { throw contextError("draining \(label)", kind: .deviceLost) }
            try iterate("draining \(label)")
        }
    }

    var canPark: Bool { true }

    /// Corks the stream, so that the server stops exchanging periods with it (and may
    /// suspend an idle device) and nothing wakes per period; runs the main loop until
    /// `activity` (uncorked, true) or `wake` (left corked, false). A server that goes away
    /// meanwhile fails the stream, and so the park.
    ///
    /// Playback: the silence queued is kept, not flushed: uncorked, the stream plays it out
    /// while it asks for periods at the device's pace, as it did before the park. Flushed,
    /// it asked for its whole buffer at once, and the player, which counts time in the
    /// periods it renders, started the reply that much early and ran dry (2 underruns in 20
    /// replies with 20 ms periods).
    ///
    /// Capture: once the server has acknowledged the cork, everything captured before it
    /// has arrived, and is dropped; the first period read after the park is fresh.
    func park(wake: EventSignal, activity: EventSignal) throws(AudioError) -> Bool {
        observe(wake)
        try checkAlive("parking")
        activity.setObserver { [weak self] in
            guard let self else { return }
            pa_mainloop_wakeup(self.mainloop)
        }
        defer { activity.setObserver(nil) }
        guard let cork = pa_stream_cork(stream, 1, nil, nil) else { throw contextError("parking \(label)", kind: .deviceLost) }
        defer { pa_operation_unref(cork) }
        parked = true
        var stale = isCapture
        while true {
            if stale, pa_operation_get_state(cork) != PA_OPERATION_RUNNING {
                try dropCaptured()
                stale = false
            }
            if interrupted.load(ordering: .acquiring) { return false }
            if activity.isSet, !stale { break }
            try iterate("parking \(label)")
            try checkAlive("parked")
        }
        guard let uncork = pa_stream_cork(stream, 0, nil, nil) else { throw contextError("unparking \(label)", kind: .deviceLost) }
        pa_operation_unref(uncork)
        parked = false
        xrunsSeen = xrunsReported.load(ordering: .relaxed)  // a cork is not an xrun
        return true
    }

    /// Drops what a record stream holds (a fragment half read, and every one queued).
    private func dropCaptured() throws(AudioError) {
        if peeked != nil {
            pa_stream_drop(stream)
            peeked = nil
        }
        while true {
            var data: UnsafeRawPointer?
            var length = 0
            if pa_stream_peek(stream, &data, &length) < 0 { throw contextError("parking \(label)", kind: .io) }
            if length == 0 { return }
            pa_stream_drop(stream)
        }
    }

    func flush() {
        guard let stream, pa_stream_get_state(stream) == PA_STREAM_READY else { return }
        guard let op = pa_stream_flush(stream, nil, nil) else { return }
        defer { pa_operation_unref(op) }
        // Sent now: nobody runs the main loop after this (the stream is closed next).
        var result: Int32 = 0
        while pa_operation_get_state(op) == PA_OPERATION_RUNNING, pa_stream_get_state(stream) == PA_STREAM_READY,
              pa_mainloop_iterate(mainloop, 1, &result) >= 0 {}
    }

    func latencyFrames() -> Int? {
        guard let stream else { return nil }
        var usec: pa_usec_t = 0
        var negative: Int32 = 0
        guard pa_stream_get_latency(stream, &usec, &negative) >= 0 else { return nil }
        return negative != 0 ? 0 : Int(usec * UInt64(format.sampleRate) / 1_000_000)
    }
}

/// Calls `body` with a C string for `string`, or with nil.
func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
