import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeProtocol
import Synchronization

// The devices' events (``DeviceKeeper`` opens and closes them), passed on to the practice
// flow and the clients.
extension PracticeDaemon {
    /// Whether both devices are open (commands that need them open them first, ``ControlCommand/needsDevices``).
    var devicesOpen: Bool { devices.isOpen }

    /// The flow under way (a session in any stage, an answer recording), a sound playing, or
    /// a client watching the input level.
    var devicesNeeded: Bool {
        flow?.needsDevices == true || player?.isActive == true || server?.hasSubscribers(to: .level) == true
    }

    /// The speech models were loaded, let go or failed: told to clients and the metrics.
    func hearingChanged(_ hearing: SpeechHearing) {
        metrics.set(.speechEndpointDegraded, to: hearing.models == .failed ? 1 : 0)
        server?.publish(Event.SpeechModels(hearing: hearing))
    }

    func deviceStateChanged(_ direction: AudioDirection, _ state: DeviceKeeper.State) {
        let device = lock.withLock { direction == .capture ? configuration.captureDevice : configuration.playbackDevice }
        switch state {
        case .failed(let why): logger.error("\(direction) device \(device): \(why)")
        default: logger.info("\(direction) device \(device): \(state)")
        }
        server?.publish(Event.DeviceState(direction: direction, device: "\(device)", state: state.wire, error: state.error))
    }

    /// On the capture thread: levels are only stored and signalled (no allocation); the
    /// rare speech events are posted.
    func recorderEvent(_ event: RecorderEvent) {
        switch event {
        case .level(let rms, let peak):
            lock.withLock { latestLevel = (rms, peak) }
            // Nobody watching, nobody woken: the control queue would publish to no one.
            if server?.isFollowed(.level) == true { levelSignal?.add(data: 1) }
        case .speechStarted(let recording, let again):
            // Clients heard this speech start when it did; a listen taking it is not news.
            if !again { server?.publish(Event.SpeechStarted()) }
            visits?.noticed(begins: false)  // the learner speaking is the learner being there
            flow?.speechStarted(recording: recording)
        case .speechStopped:
            server?.publish(Event.SpeechStopped())
        case .speechPaused(let probability, let waiting, let after):
            metrics.observe(.turnModel, seconds: after)
            metrics.increment(.turnModelAnswers, waiting ? "wait" : "end")
            server?.publish(Event.SpeechPaused(probability: (Double(probability) * 1000).rounded() / 1000, waiting: waiting))
        case .turn(let turn):
            if let wait = turn.endWait { metrics.observe(.turnEndWait, seconds: wait) }
            flow?.recorded(turn)
        }
    }

    func publishLevel() {
        let level = lock.withLock { latestLevel }
        server?.publish(Event.Level(rmsDbfs: (level.rms * 10).rounded() / 10, peakDbfs: (level.peak * 10).rounded() / 10))
    }

    func playerEvent(_ event: PlayerEvent) {
        // Published before the flow hears of it, so that a client always sees
        // `playback.finished` before the `reply.finished` and `ready` it leads to.
        defer { flow?.playerEvent(event) }
        switch event {
        case .started(let latency, let reply):
            server?.publish(Event.PlaybackStarted(latencyMs: latency * 1000 / 24_000, sound: reply, mixed: false))
        case .underrun(let total):
            metrics.increment(.playbackUnderruns)
            server?.publish(Event.PlaybackUnderrun(total: total))
        case .finished(let report), .mixFinished(let report):
            visits?.noticed(begins: false)  // idle counts from the end of what the kiosk said
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
            metrics.increment(.xruns, direction.rawValue)
            server?.publish(Event.DeviceXrun(direction: direction, total: total))
        case .deviceLost(let error):
            metrics.increment(.deviceLosses, direction.rawValue)
            if direction == .capture {
                flow?.captureFailed(error.description)
            }
            server?.publish(Event.DeviceLost(direction: direction, message: error.description))
        case .deviceRestored(let attempts):
            server?.publish(Event.DeviceRestored(direction: direction, attempts: attempts))
        }
    }
}
