internal import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// An open ALSA PCM, set up the way mature engines do it:
/// - hardware parameters set explicitly, with alsa-lib's resampling off, and software
///   parameters that never stop the stream on an underrun (``ALSAParameters``);
/// - nonblocking I/O, waiting in `poll` on the PCM's descriptors together with the stream's
///   eventfd, so `stop` always wakes the thread;
/// - xruns recovered with `snd_pcm_recover` (then `snd_pcm_start` for capture, which a
///   recovery leaves prepared but not running) and reported; a disconnected device (ENODEV)
///   is reported as lost.
final class ALSAPCM: CaptureBackend, PlaybackBackend {
    private var pcm: OpaquePointer?
    private var config: OpaquePointer?
    private let isCapture: Bool
    private let pcmName: String
    let format: StreamFormat
    let periodFrames: Int
    private let bytesPerFrame: Int
    /// The buffer size the device granted, in frames.
    let bufferFrames: Int
    /// The period size the device granted, in frames.
    let grantedPeriodFrames: Int
    /// How long a running PCM may go without a wakeup before it counts as lost: four
    /// buffers, at least 2 s. A card always wakes its reader within a buffer; a plugin whose
    /// server died may never wake it again (pipewire-alsa's PCM, when PipeWire is killed,
    /// leaves poll waiting for ever), and reopening is the only way back.
    private let stallMilliseconds: Int32
    /// An xrun comes at the earliest two periods after the last recovery: a playback PCM
    /// must first play the two periods that start it, a capture PCM fill its buffer. Xruns
    /// that come sooner, again and again, are not the device's: pipewire-alsa reports a
    /// server that went away as an xrun (`-EPIPE` from its pointer), its prepare (which
    /// `snd_pcm_recover` calls) clears that error and makes a new stream on the dead
    /// connection, and the next look reports the xrun again, so the I/O thread ran in that
    /// loop for ever (1 run in 20 when PipeWire was killed under load).
    private let earliestXrunNanoseconds: Int64
    private var lastRecovery: Int64?
    private var xrunsTooSoon = 0
    /// How many xruns in a row, each too soon after the last, make the device lost.
    static let xrunsTooSoonForLoss = 4
    /// Poll descriptors: the PCM's, then the eventfd. Allocated once at open.
    private var pollDescriptors: UnsafeMutableBufferPointer<pollfd>
    private let pcmDescriptorCount: Int

    init(name: String, capture: Bool, configuration: AudioStreamConfiguration) throws(AudioError) {
        self.isCapture = capture
        self.pcmName = name
        let direction = capture ? "capture" : "playback"
        func fail(_ kind: AudioError.Kind, _ code: Int32, _ doing: String) -> AudioError {
            AudioError(kind, code: code, message: String(cString: snd_strerror(code)), operation: "\(doing) ALSA PCM '\(name)' for \(direction)")
        }

        var handle: OpaquePointer?
        var localConfig: OpaquePointer?
        let stream = capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK
        var err: Int32
        if let text = configuration.alsaConfiguration {
            localConfig = try Self.configuration(adding: text, for: name)
            err = snd_pcm_open_lconf(&handle, name, stream, SND_PCM_NONBLOCK, localConfig)
        } else {
            err = snd_pcm_open(&handle, name, stream, SND_PCM_NONBLOCK)
        }
        guard err >= 0, let handle else {
            if let localConfig { snd_config_delete(localConfig) }
            throw fail(.openFailed, err, "opening")
        }
        let grant: ALSAGrant
        do throws(AudioError) {
            grant = try ALSAParameters.setUpHardware(handle, name: name, configuration: configuration)
            try ALSAParameters.setUpSoftware(handle, name: name, capture: capture, grant: grant)
        } catch {
            // The one place a PCM that could not be set up is let go.
            snd_pcm_close(handle)
            if let localConfig { snd_config_delete(localConfig) }
            throw error
        }
        pcm = handle
        config = localConfig
        format = grant.format
        // The engine moves its own period size; the device's granted period only sets wakeups.
        periodFrames = grant.periodFrames
        grantedPeriodFrames = grant.devicePeriodFrames
        bufferFrames = grant.bufferFrames
        bytesPerFrame = grant.format.bytesPerFrame
        stallMilliseconds = Int32(max(2_000, 4 * 1_000 * grant.bufferFrames / grant.format.sampleRate))
        earliestXrunNanoseconds = Int64(2 * grant.periodFrames) * 1_000_000_000 / Int64(grant.format.sampleRate)

        let count = Int(max(0, snd_pcm_poll_descriptors_count(handle)))
        pcmDescriptorCount = count
        pollDescriptors = .allocate(capacity: count + 1)
        pollDescriptors.initialize(repeating: pollfd(fd: -1, events: 0, revents: 0))
        if count > 0 { snd_pcm_poll_descriptors(handle, pollDescriptors.baseAddress, UInt32(count)) }

        if capture {
            err = snd_pcm_start(handle)
            if err < 0 {
                close()
                throw fail(.openFailed, err, "starting")
            }
        }
    }

    deinit { close() }

    /// The system configuration with `text` loaded on top, for a PCM defined by the stream.
    private static func configuration(adding text: String, for name: String) throws(AudioError) -> OpaquePointer {
        func fail(_ code: Int32, _ doing: String) -> AudioError {
            AudioError(.openFailed, code: code, message: String(cString: snd_strerror(code)), operation: "\(doing) for ALSA PCM '\(name)'")
        }
        // snd_config_update_ref hands out a reference to the system tree without touching
        // the global snd_config, which is not safe to use across threads.
        var top: OpaquePointer?
        var err = snd_config_update_ref(&top)
        if err < 0 { throw fail(err, "reading the system ALSA configuration") }
        var copy: OpaquePointer?
        err = snd_config_copy(&copy, top)
        snd_config_unref(top)
        guard err >= 0, let copy else { throw fail(err, "copying the ALSA configuration") }
        var input: OpaquePointer?
        err = text.withCString { snd_input_buffer_open(&input, $0, text.utf8.count) }
        guard err >= 0 else {
            snd_config_delete(copy)
            throw fail(err, "reading the extra ALSA configuration")
        }
        err = snd_config_load(copy, input)
        snd_input_close(input)
        guard err >= 0 else {
            snd_config_delete(copy)
            throw fail(err, "parsing the extra ALSA configuration")
        }
        return copy
    }

    func close() {
        if let pcm {
            snd_pcm_close(pcm)
            self.pcm = nil
            pollDescriptors.deallocate()
        }
        if let config {
            snd_config_delete(config)
            self.config = nil
        }
    }

    // MARK: I/O

    func read(into buffer: UnsafeMutableRawPointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        try transfer(wake: wake) { pcm, offset, frames in
            snd_pcm_readi(pcm, buffer + offset * bytesPerFrame, snd_pcm_uframes_t(frames))
        }
    }

    func write(_ buffer: UnsafeRawPointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        try transfer(wake: wake) { pcm, offset, frames in
            snd_pcm_writei(pcm, buffer + offset * bytesPerFrame, snd_pcm_uframes_t(frames))
        }
    }

    /// ALSA's little-endian format for `format`.
    static func alsaFormat(_ format: SampleFormat) -> snd_pcm_format_t {
        switch format {
        case .s16: return SND_PCM_FORMAT_S16_LE
        case .s24_3: return SND_PCM_FORMAT_S24_3LE
        case .s24: return SND_PCM_FORMAT_S24_LE
        case .s32: return SND_PCM_FORMAT_S32_LE
        case .float: return SND_PCM_FORMAT_FLOAT_LE
        case .u8: return SND_PCM_FORMAT_U8
        case .alaw: return SND_PCM_FORMAT_A_LAW
        case .mulaw: return SND_PCM_FORMAT_MU_LAW
        }
    }

    func waitForRoom(wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        guard let pcm else { throw AudioError(.invalidState, message: "closed", operation: "using ALSA PCM '\(pcmName)'") }
        while true {
            let avail = snd_pcm_avail_update(pcm)
            if avail < 0 {
                let code = Int32(avail)
                guard code == -EPIPE || code == -ESTRPIPE else { throw classify(code, doing: "querying") }
                try recover(pcm, code: code)
                return .xrun
            }
            // Not started yet (prepared, below the start threshold): writes go straight in.
            if avail >= snd_pcm_sframes_t(periodFrames) || snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED { return .transferred }
            switch try waitReady(pcm, wake: wake) {
            case .woken: return .woken
            case .xrun, .transferredAfterXrun:
                try recover(pcm, code: -EPIPE)
                return .xrun
            case .transferred: continue
            }
        }
    }

    /// Moves one period with `io`, waiting in poll whenever the PCM is not ready.
    private func transfer(
        wake: EventSignal, _ io: (OpaquePointer, Int, Int) -> snd_pcm_sframes_t
    ) throws(AudioError) -> DeviceIOResult {
        guard let pcm else { throw AudioError(.invalidState, message: "closed", operation: "using ALSA PCM '\(pcmName)'") }
        // With the stop threshold at the boundary an xrun does not stop the stream: it shows
        // as a running PCM with more than a whole buffer available (played out, or overwritten), as
        // PulseAudio's ALSA sink detects it. The period is still moved; the xrun is counted.
        var xrunSeen = false
        let avail = snd_pcm_avail_update(pcm)
        if avail < 0 {
            let code = Int32(avail)
            guard code == -EPIPE || code == -ESTRPIPE else { throw classify(code, doing: "querying") }
            try recover(pcm, code: code)
            xrunSeen = true
        } else if avail > snd_pcm_sframes_t(bufferFrames), snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING {
            xrunSeen = true
        }
        var done = 0
        while done < periodFrames {
            let result = io(pcm, done, periodFrames - done)
            if result > 0 {
                done += Int(result)
                continue
            }
            let code = Int32(result)
            if result == 0 || code == -EAGAIN {
                switch try waitReady(pcm, wake: wake) {
                case .woken: return .woken
                case .xrun, .transferredAfterXrun:
                    try recover(pcm, code: -EPIPE)
                    xrunSeen = true
                case .transferred: continue
                }
            }
            if code == -EPIPE || code == -ESTRPIPE {
                // Plugins that report xruns themselves (e.g. pulse with handle_underrun).
                try recover(pcm, code: code)
                xrunSeen = true
                continue
            }
            throw classify(code, doing: isCapture ? "reading from" : "writing to")
        }
        return xrunSeen ? .transferredAfterXrun : .transferred
    }

    /// Waits until the PCM can move data, or the wake signal is set.
    private func waitReady(_ pcm: OpaquePointer, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        pollDescriptors[pcmDescriptorCount] = pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0)
        while true {
            let r = poll(pollDescriptors.baseAddress, nfds_t(pcmDescriptorCount + 1), stallMilliseconds)
            if r < 0 {
                if errno == EINTR { continue }
                throw AudioError(.io, code: -errno, message: Errno.current.description, operation: "polling ALSA PCM '\(pcmName)'")
            }
            if r == 0 {
                let state = snd_pcm_state(pcm)
                if state == SND_PCM_STATE_XRUN || state == SND_PCM_STATE_SUSPENDED { return .xrun }
                throw AudioError(.deviceLost, code: -ETIMEDOUT,
                                 message: "no wakeup in \(stallMilliseconds) ms (state \(String(cString: snd_pcm_state_name(state)))): the device or its server stopped",
                                 operation: "polling ALSA PCM '\(pcmName)'")
            }
            if pollDescriptors[pcmDescriptorCount].revents != 0 { return .woken }
            var revents: UInt16 = 0
            let err = snd_pcm_poll_descriptors_revents(pcm, pollDescriptors.baseAddress, UInt32(pcmDescriptorCount), &revents)
            if err < 0 { throw classify(err, doing: "polling") }
            if revents & UInt16(isCapture ? POLLIN : POLLOUT) != 0 { return .transferred }
            // Woken but not ready: a hardware PCM says why with POLLERR, but an ioplug PCM
            // (a sound server's) may say it only through its state. Its revents callback asks
            // the pointer, and a failing pointer leaves the PCM in XRUN with no event bit:
            // polling again would wake on the plugin's timer for ever without an xrun seen.
            let state = snd_pcm_state(pcm)
            if state == SND_PCM_STATE_DISCONNECTED { throw classify(-ENODEV, doing: "polling") }
            if state == SND_PCM_STATE_XRUN || state == SND_PCM_STATE_SUSPENDED { return .xrun }
        }
    }

    private func recover(_ pcm: OpaquePointer, code: Int32) throws(AudioError) {
        let now = Monotonic.now()
        if let lastRecovery, now - lastRecovery < earliestXrunNanoseconds { xrunsTooSoon += 1 } else { xrunsTooSoon = 0 }
        lastRecovery = now
        if xrunsTooSoon >= Self.xrunsTooSoonForLoss {
            throw AudioError(.deviceLost, code: code,
                             message: "\(xrunsTooSoon + 1) xruns in a row, each sooner than the device can run: the device or its server stopped",
                             operation: "recovering ALSA PCM '\(pcmName)'")
        }
        var err = snd_pcm_recover(pcm, code, 1)
        if err >= 0, isCapture { err = snd_pcm_start(pcm) }
        if err < 0 {
            if err == -ENODEV { throw classify(err, doing: "recovering") }
            throw AudioError(.unrecoverable, code: err, message: String(cString: snd_strerror(err)), operation: "recovering ALSA PCM '\(pcmName)' from an xrun")
        }
    }

    private func classify(_ code: Int32, doing: String) -> AudioError {
        let kind: AudioError.Kind = (code == -ENODEV || code == -EBADFD || code == -ENOTTY) ? .deviceLost : .io
        return AudioError(kind, code: code, message: String(cString: snd_strerror(code)), operation: "\(doing) ALSA PCM '\(pcmName)'")
    }

    func drain(wake: EventSignal) throws(AudioError) {
        guard let pcm else { return }
        // Draining is bounded by the buffer (tens of milliseconds); blocking mode makes
        // snd_pcm_drain wait for the last sample instead of returning EAGAIN.
        snd_pcm_nonblock(pcm, 0)
        let err = snd_pcm_drain(pcm)
        snd_pcm_nonblock(pcm, 1)
        if err < 0, err != -EPIPE { throw classify(err, doing: "draining") }
    }

    func flush() {
        if let pcm { snd_pcm_drop(pcm) }
    }

    func latencyFrames() -> Int? {
        guard let pcm else { return nil }
        var delay: snd_pcm_sframes_t = 0
        return snd_pcm_delay(pcm, &delay) >= 0 ? Int(delay) : nil
    }
}
