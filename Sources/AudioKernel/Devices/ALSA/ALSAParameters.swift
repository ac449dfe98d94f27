internal import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// What an ALSA PCM was granted by its hardware parameters.
struct ALSAGrant {
    /// The rate, channels and sample format the device runs.
    let format: StreamFormat
    /// The period the engine moves (the requested duration at the granted rate).
    let periodFrames: Int
    /// The period and buffer the device granted, in frames.
    let devicePeriodFrames: Int
    let bufferFrames: Int
}

/// The set-up of an open PCM, as MPD's `Alsa::SetupHw` and `SetupSw` do it: each step a
/// function that throws what the device refused, so the PCM's opener closes it in one place.
enum ALSAParameters {
    /// Hardware parameters. alsa-lib's own resampling is switched off (`plug` would
    /// interpolate linearly): a rate the hardware does not run is converted by the engine.
    /// Each of rate, channels and sample format is the one forced by the stream; else the
    /// engine's own when the device runs it (nothing to convert); else the device's nearest
    /// (rate, channels) or best (format). Period and buffer are near the requested duration
    /// at the granted rate.
    static func setUpHardware(_ pcm: OpaquePointer, name: String, configuration: AudioStreamConfiguration) throws(AudioError) -> ALSAGrant {
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        func refuse(_ err: Int32, _ what: String) -> AudioError {
            AudioError(.unsupportedFormat, code: err, message: "\(String(cString: snd_strerror(err))); \(what)",
                       operation: "setting hardware parameters of ALSA PCM '\(name)'")
        }
        var err = snd_pcm_hw_params_any(pcm, hw)
        if err >= 0 { err = snd_pcm_hw_params_set_rate_resample(pcm, hw, 0) }
        if err >= 0 { err = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED) }
        if err < 0 { throw refuse(err, "the device offers no interleaved read/write access") }
        let request = configuration.device
        let engine = configuration.engineFormat
        let sampleFormat: SampleFormat
        if let forced = request.sampleFormat {
            sampleFormat = forced
        } else if snd_pcm_hw_params_test_format(pcm, hw, ALSAPCM.alsaFormat(engine.sampleFormat)) == 0 {
            sampleFormat = engine.sampleFormat
        } else if let best = [SampleFormat.float, .s32, .s24, .s24_3, .s16].first(where: { snd_pcm_hw_params_test_format(pcm, hw, ALSAPCM.alsaFormat($0)) == 0 }) {
            sampleFormat = best
        } else {
            throw refuse(-EINVAL, "the device runs none of S16_LE, S24_LE, S24_3LE, S32_LE, FLOAT_LE")
        }
        err = snd_pcm_hw_params_set_format(pcm, hw, ALSAPCM.alsaFormat(sampleFormat))
        if err < 0 { throw refuse(err, "the device cannot run \(sampleFormat)") }
        var channelCount = UInt32(request.channels ?? engine.channels)
        err = request.channels != nil ? snd_pcm_hw_params_set_channels(pcm, hw, channelCount)
                                      : snd_pcm_hw_params_set_channels_near(pcm, hw, &channelCount)
        if err < 0 { throw refuse(err, "the device cannot run \(channelCount) channels") }
        var rate = UInt32(request.sampleRate ?? engine.sampleRate)
        if request.sampleRate != nil {
            err = snd_pcm_hw_params_set_rate(pcm, hw, rate, 0)
        } else if snd_pcm_hw_params_test_rate(pcm, hw, rate, 0) == 0 {
            err = snd_pcm_hw_params_set_rate(pcm, hw, rate, 0)
        } else {
            rate = 48_000
            err = snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, nil)
        }
        if err < 0 { throw refuse(err, "the device cannot run \(rate) Hz") }
        guard (8_000...192_000).contains(Int(rate)), (1...8).contains(Int(channelCount)) else {
            throw refuse(-EINVAL, "the device runs \(rate) Hz, \(channelCount) channels, outside 8-192 kHz and 1-8 channels")
        }
        let format = StreamFormat(sampleRate: Int(rate), channels: Int(channelCount), sampleFormat: sampleFormat)
        let wantedPeriod = configuration.periodFrames(atRate: format.sampleRate)
        var period = snd_pcm_uframes_t(wantedPeriod)
        var buffer = snd_pcm_uframes_t(wantedPeriod * configuration.periods)
        err = snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, nil)
        if err >= 0 { err = snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer) }
        if err >= 0 { err = snd_pcm_hw_params(pcm, hw) }
        if err >= 0 { err = snd_pcm_hw_params_get_period_size(hw, &period, nil) }
        if err >= 0 { err = snd_pcm_hw_params_get_buffer_size(hw, &buffer) }
        if err < 0 {
            throw AudioError(.unsupportedFormat, code: err, message: String(cString: snd_strerror(err)),
                             operation: "setting period and buffer of ALSA PCM '\(name)'")
        }
        return ALSAGrant(format: format, periodFrames: wantedPeriod, devicePeriodFrames: Int(period), bufferFrames: Int(buffer))
    }

    /// Software parameters: woken once a period is free or filled; playback starts after two
    /// periods, capture at once; the stop threshold is the boundary (an underrun never stops
    /// the stream) and the played area is refilled with silence, so a late period is heard
    /// as silence rather than as stale audio.
    static func setUpSoftware(_ pcm: OpaquePointer, name: String, capture: Bool, grant: ALSAGrant) throws(AudioError) {
        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        var boundary: snd_pcm_uframes_t = 0
        var err = snd_pcm_sw_params_current(pcm, sw)
        if err >= 0 { err = snd_pcm_sw_params_get_boundary(sw, &boundary) }
        if err >= 0 { err = snd_pcm_sw_params_set_avail_min(pcm, sw, snd_pcm_uframes_t(grant.periodFrames)) }
        if err >= 0 {
            let start = capture ? 1 : min(snd_pcm_uframes_t(grant.bufferFrames), 2 * snd_pcm_uframes_t(grant.periodFrames))
            err = snd_pcm_sw_params_set_start_threshold(pcm, sw, start)
        }
        if err >= 0 { err = snd_pcm_sw_params_set_stop_threshold(pcm, sw, boundary) }
        if err >= 0, !capture {
            err = snd_pcm_sw_params_set_silence_threshold(pcm, sw, 0)
            if err >= 0 { err = snd_pcm_sw_params_set_silence_size(pcm, sw, boundary) }
        }
        if err >= 0 { err = snd_pcm_sw_params(pcm, sw) }
        if err < 0 {
            throw AudioError(.openFailed, code: err, message: String(cString: snd_strerror(err)),
                             operation: "setting software parameters of ALSA PCM '\(name)' for \(capture ? "capture" : "playback")")
        }
    }
}
