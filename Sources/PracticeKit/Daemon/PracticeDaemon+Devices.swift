import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

// The microphone and the speaker: opened at start and when needed, closed when idle,
// reopened when they fail, and their events passed on to the session and the clients.
extension PracticeDaemon {
    /// Whether both devices are open (commands that need them open them first, ``ControlCommand/needsDevices``).
    var devicesOpen: Bool { lock.withLock { openRecorder != nil && openPlayer != nil } }

    /// On `audioQueue`: opens what is not open.
    func openDevices() {
        devicesLastNeeded = DispatchTime.now().uptimeNanoseconds
        let configuration = lock.withLock { self.configuration }
        if recorder == nil { openCapture(configuration) }
        if player == nil { openPlayback(configuration) }
    }

    /// Every 2 s on `audioQueue` (the daemon's only periodic wake-up besides the control
    /// server's idle check): a needed device that failed is tried again; devices nothing
    /// needed for `audio.idle_close_s` are closed, so that an idle kiosk neither wakes
    /// 100 times a second for empty periods nor keeps the sound card from others.
    func startDeviceKeeper() {
        let timer = DispatchSource.makeTimerSource(queue: audioQueue)
        timer.schedule(deadline: .now() + 2, repeating: 2, leeway: .milliseconds(500))
        timer.setEventHandler { [weak self] in self?.keepDevices() }
        timer.resume()
        deviceKeeper = timer
    }

    func keepDevices() {
        let closeAfter = lock.withLock { configuration.deviceIdleCloseSeconds }
        let now = DispatchTime.now().uptimeNanoseconds
        if closeAfter == 0 || devicesNeeded { devicesLastNeeded = now }
        if closeAfter > 0, now - devicesLastNeeded >= UInt64(closeAfter) * 1_000_000_000 {
            if recorder != nil || player != nil {
                logger.info("devices unused for \(closeAfter) s: closing them")
                closeDevices(state: .idle)
            }
        } else if recorder == nil || player == nil {
            openDevices()
        }
    }

    /// A session (any stage), a sound playing, or a client watching the input level.
    var devicesNeeded: Bool {
        session?.isIdle == false || player?.isActive == true || server?.hasSubscribers(to: "level") == true
    }

    /// On `audioQueue`.
    func closeDevices(state: DeviceState) {
        let (recorder, player) = lock.withLock {
            defer { openRecorder = nil; openPlayer = nil }
            return (openRecorder, openPlayer)
        }
        audio.attach(recorder: nil)
        audio.attach(player: nil)
        recorder?.stop()
        player?.shutdown()
        setState(capture: state, playback: state)
    }

    func openCapture(_ configuration: DaemonConfiguration) {
        do {
            let recorder = try Recorder(device: configuration.captureDevice.name, stream: configuration.stream(for: configuration.captureDevice), configuration: configuration.recorder) { [weak self] event in
                self?.recorderEvent(event)
            }
            try recorder.start { [weak self] event in self?.deviceEvent(event, direction: .capture) }
            lock.withLock { openRecorder = recorder }
            audio.attach(recorder: recorder)
            recorder.follow(player)
            setState(capture: .running)
        } catch {
            setState(capture: .failed(error.description))
        }
    }

    func openPlayback(_ configuration: DaemonConfiguration) {
        do {
            let player = try StreamingPlayer(device: configuration.playbackDevice.name, stream: configuration.stream(for: configuration.playbackDevice), configuration: configuration.player) { [weak self] event in
                self?.playerEvent(event)
            }
            player.volume = Float(lock.withLock { volume })
            try player.start { [weak self] event in self?.deviceEvent(event, direction: .playback) }
            lock.withLock { openPlayer = player }
            audio.attach(player: player)
            recorder?.follow(player)
            setState(playback: .running)
        } catch {
            setState(playback: .failed(error.description))
        }
    }

    func setState(capture: DeviceState? = nil, playback: DeviceState? = nil) {
        let (changedCapture, changedPlayback): (Bool, Bool) = lock.withLock {
            defer {
                if let capture { captureState = capture }
                if let playback { playbackState = playback }
            }
            return (capture.map { $0 != captureState } ?? false, playback.map { $0 != playbackState } ?? false)
        }
        if let capture, changedCapture { deviceStateChanged(.capture, capture) }
        if let playback, changedPlayback { deviceStateChanged(.playback, playback) }
    }

    func deviceStateChanged(_ direction: AudioDirection, _ state: DeviceState) {
        let device = lock.withLock { direction == .capture ? configuration.captureDevice : configuration.playbackDevice }
        switch state {
        case .failed(let why): logger.error("\(direction) device \(device): \(why)")
        default: logger.info("\(direction) device \(device): \(state)")
        }
        server?.publish(Event.DeviceState(direction: direction, device: "\(device)", state: "\(state)"))
    }

    /// On the capture thread: levels are only stored and signalled (no allocation); the
    /// rare speech events are posted.
    func recorderEvent(_ event: RecorderEvent) {
        switch event {
        case .level(let rms, let peak):
            latestLevel.withLock { $0 = (rms, peak) }
            // Nobody watching, nobody woken: the control queue would publish to no one.
            if server?.isFollowed("level") == true { levelSignal?.add(data: 1) }
        case .speechStarted(let recording):
            server?.publish(Event.SpeechStarted())
            session?.speechStarted(recording: recording)
            cue?.speechStarted(recording: recording)
        case .speechStopped:
            server?.publish(Event.SpeechStopped())
        case .turn(let turn):
            // The recorder serves one recording at a time: a cue answer's number says whose it is.
            if cue?.owns(recording: turn.recording) == true { cue?.recorded(turn) } else { session?.recorded(turn) }
        }
    }

    func publishLevel() {
        let level = latestLevel.withLock { $0 }
        server?.publish(Event.Level(rmsDbfs: (level.rms * 10).rounded() / 10, peakDbfs: (level.peak * 10).rounded() / 10))
    }

    func playerEvent(_ event: PlayerEvent) {
        // Published before the session hears of it, so that a client always sees
        // `playback.finished` before the `reply.finished` and `ready` it leads to.
        defer { session?.playerEvent(event) }
        switch event {
        case .started(let latency, let reply):
            server?.publish(Event.PlaybackStarted(latencyMs: latency * 1000 / 24_000, sound: reply, mixed: false))
        case .underrun(let total):
            metrics.increment("practiced_playback_underruns_total", help: "Replies that ran dry before their end.")
            server?.publish(Event.PlaybackUnderrun(total: total))
        case .finished(let report), .mixFinished(let report):
            server?.publish(Event.PlaybackFinished(playedS: (report.playedSeconds * 1000).rounded() / 1000, interrupted: report.interrupted,
                                                   underruns: report.underruns, sound: report.reply, mixed: event.isMixLayer))
        case .mixStarted(let mix):
            server?.publish(Event.PlaybackStarted(latencyMs: (player?.deviceStatistics?.latencyFrames ?? 0) * 1000 / 24_000, sound: mix, mixed: true))
        }
    }

    func deviceEvent(_ event: AudioDeviceEvent, direction: AudioDirection) {
        switch event {
        case .started, .endOfInput:
            break
        case .xrun(let total):
            metrics.increment("practiced_xruns_total", help: "Device overruns and underruns recovered.", labels: "direction=\"\(direction.rawValue)\"")
            server?.publish(Event.DeviceXrun(direction: direction, total: total))
        case .deviceLost(let error):
            metrics.increment("practiced_device_losses_total", help: "Devices that went away.", labels: "direction=\"\(direction.rawValue)\"")
            if direction == .capture {
                session?.captureFailed(error.description)
                cue?.captureFailed(error.description)
            }
            server?.publish(Event.DeviceLost(direction: direction, message: error.description))
        case .deviceRestored(let attempts):
            server?.publish(Event.DeviceRestored(direction: direction, attempts: attempts))
        }
    }
}
