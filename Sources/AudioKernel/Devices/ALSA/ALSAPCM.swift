internal import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// An open ALSA PCM, set up the way mature engines do it:
/// - hardware parameters set explicitly: interleaved S16_LE at the stream's rate and
///   channels, period and buffer near the requested sizes; a rate the device cannot run is an
///   error that points at `plughw:`/`plug` rather than a silent mismatch;
/// - software parameters: playback starts after two periods, the stop threshold is the
///   boundary (an underrun never stops the stream) and the played area is refilled with
///   silence, so a late period is heard as silence rather than as stale audio;
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
    private let channels: Int
    private let periodFrames: Int
    /// The buffer size the device granted, in frames.
    let bufferFrames: Int
    /// The period size the device granted, in frames.
    let grantedPeriodFrames: Int
    /// Poll descriptors: the PCM's, then the eventfd. Allocated once at open.
    private var pollDescriptors: UnsafeMutableBufferPointer<pollfd>
    private let pcmDescriptorCount: Int

    init(name: String, capture: Bool, configuration: AudioStreamConfiguration) throws(AudioError) {
        self.isCapture = capture
        self.pcmName = name
        self.channels = configuration.channels
        self.periodFrames = configuration.periodFrames
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
        pcm = handle
        config = localConfig

        // Hardware parameters.
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        var rate = UInt32(configuration.sampleRate)
        var period = snd_pcm_uframes_t(configuration.periodFrames)
        var buffer = snd_pcm_uframes_t(configuration.bufferFrames)
        err = snd_pcm_hw_params_any(handle, hw)
        if err >= 0 { err = snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED) }
        if err >= 0 { err = snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_S16_LE) }
        if err >= 0 { err = snd_pcm_hw_params_set_channels(handle, hw, UInt32(configuration.channels)) }
        if err >= 0 { err = snd_pcm_hw_params_set_rate_near(handle, hw, &rate, nil) }
        if err < 0 {
            snd_pcm_close(handle)
            if let localConfig { snd_config_delete(localConfig) }
            throw AudioError(.unsupportedFormat, code: err, message: "\(String(cString: snd_strerror(err))); the device cannot run S16_LE \(configuration.channels) ch, use a plughw: or plug PCM",
                             operation: "setting hardware parameters of ALSA PCM '\(name)'")
        }
        guard rate == UInt32(configuration.sampleRate) else {
            snd_pcm_close(handle)
            if let localConfig { snd_config_delete(localConfig) }
            throw AudioError(.unsupportedFormat, message: "the device runs at \(rate) Hz, not \(configuration.sampleRate) Hz; use a plughw: or plug PCM to resample",
                             operation: "setting hardware parameters of ALSA PCM '\(name)'")
        }
        err = snd_pcm_hw_params_set_period_size_near(handle, hw, &period, nil)
        if err >= 0 { err = snd_pcm_hw_params_set_buffer_size_near(handle, hw, &buffer) }
        if err >= 0 { err = snd_pcm_hw_params(handle, hw) }
        if err >= 0 { err = snd_pcm_hw_params_get_period_size(hw, &period, nil) }
        if err >= 0 { err = snd_pcm_hw_params_get_buffer_size(hw, &buffer) }
        if err < 0 {
            snd_pcm_close(handle)
            if let localConfig { snd_config_delete(localConfig) }
            throw fail(.unsupportedFormat, err, "setting period and buffer of")
        }
        grantedPeriodFrames = Int(period)
        bufferFrames = Int(buffer)

        // Software parameters.
        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        var boundary: snd_pcm_uframes_t = 0
        err = snd_pcm_sw_params_current(handle, sw)
        if err >= 0 { err = snd_pcm_sw_params_get_boundary(sw, &boundary) }
        if err >= 0 { err = snd_pcm_sw_params_set_avail_min(handle, sw, snd_pcm_uframes_t(configuration.periodFrames)) }
        if err >= 0 {
            let start = capture ? 1 : min(buffer, 2 * snd_pcm_uframes_t(configuration.periodFrames))
            err = snd_pcm_sw_params_set_start_threshold(handle, sw, start)
        }
        if err >= 0 { err = snd_pcm_sw_params_set_stop_threshold(handle, sw, boundary) }
        if err >= 0, !capture {
            err = snd_pcm_sw_params_set_silence_threshold(handle, sw, 0)
            if err >= 0 { err = snd_pcm_sw_params_set_silence_size(handle, sw, boundary) }
        }
        if err >= 0 { err = snd_pcm_sw_params(handle, sw) }
        if err < 0 {
            snd_pcm_close(handle)
            if let localConfig { snd_config_delete(localConfig) }
            throw fail(.openFailed, err, "setting software parameters of")
        }

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

    func read(into buffer: UnsafeMutableBufferPointer<Int16>, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        try transfer(wake: wake) { pcm, offset, frames in
            snd_pcm_readi(pcm, buffer.baseAddress! + offset * channels, snd_pcm_uframes_t(frames))
        }
    }

    func write(_ buffer: UnsafeBufferPointer<Int16>, wake: EventSignal) throws(AudioError) -> DeviceIOResult {
        try transfer(wake: wake) { pcm, offset, frames in
            snd_pcm_writei(pcm, buffer.baseAddress! + offset * channels, snd_pcm_uframes_t(frames))
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
            let r = poll(pollDescriptors.baseAddress, nfds_t(pcmDescriptorCount + 1), -1)
            if r < 0 {
                if errno == EINTR { continue }
                throw AudioError(.io, code: -errno, message: Errno.current.description, operation: "polling ALSA PCM '\(pcmName)'")
            }
            if pollDescriptors[pcmDescriptorCount].revents != 0 { return .woken }
            var revents: UInt16 = 0
            let err = snd_pcm_poll_descriptors_revents(pcm, pollDescriptors.baseAddress, UInt32(pcmDescriptorCount), &revents)
            if err < 0 { throw classify(err, doing: "polling") }
            if revents & UInt16(POLLERR) != 0 {
                let state = snd_pcm_state(pcm)
                if state == SND_PCM_STATE_DISCONNECTED { throw classify(-ENODEV, doing: "polling") }
                if state == SND_PCM_STATE_XRUN || state == SND_PCM_STATE_SUSPENDED { return .xrun }
            }
            if revents & UInt16(isCapture ? POLLIN : POLLOUT) != 0 { return .transferred }
        }
    }

    private func recover(_ pcm: OpaquePointer, code: Int32) throws(AudioError) {
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
