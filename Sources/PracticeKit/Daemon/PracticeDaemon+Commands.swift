import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeControl
import PracticeNet
import PracticeProtocol
import Synchronization

// The daemon's own commands (the practice flow's go to it, ``PracticeFlow``): health,
// status, devices, sounds, the spool's listing, configuration, metrics.
extension PracticeDaemon {
    public func snapshot() -> DaemonSnapshot {
        let (capture, playback) = devices.states
        return DaemonSnapshot(version: Self.version, capture: capture.wire, playback: playback.wire, playing: player?.isActive ?? false,
                              session: flow?.sessionSnapshot ?? .idle, speech: devices.models.hearing, visit: visits?.state,
                              playbackRate: audio.playbackRate)
    }

    /// Routes a request through the command table (the other flow's commands are refused
    /// there, ``CommandTable/refuse(route:_:)``); devices closed while idle are opened first
    /// when the command needs them.
    public func handle(_ request: ControlRequest, client: ControlClientInfo, reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void) {
        let entry = commandTable.entry(for: request.command)
        metrics.increment(.controlRequests, entry == nil ? "unknown" : request.command)
        guard let entry else {
            return reply(.failure(ControlError(.unknownCommand, "unknown command '\(request.command)'; commands are \(Self.commands.joined(separator: ", "))")))
        }
        if entry.command.needsDevices, !entry.refuses, !devicesOpen {
            // Closed while idle: opened (a few tens of milliseconds) before the command runs.
            return audioQueue.async { [self] in
                devices.open()
                commandTable.run(entry, request, client: client, reply)
                visitNoticed(entry.command)
                if entry.command.hearsLearner { devices.provideModels(asked: true) }
            }
        }
        commandTable.run(entry, request, client: client, reply)
        if !entry.refuses { visitNoticed(entry.command) }
        // The speech models are loaded beside the session's start (its greeting plays meanwhile).
        if entry.command.hearsLearner, !entry.refuses { audioQueue.async { [self] in devices.provideModels(asked: true) } }
    }

    /// The daemon's own commands.
    func registerCommands(into table: CommandTable) {
        table.register(Command.Ping.self) { [unowned self] _, reply in reply.succeed(.init(pong: true, uptimeS: uptime)) }
        table.register(Command.Status.self) { [unowned self] _, reply in status(reply) }
        table.register(Command.Devices.self) { [unowned self] _, reply in listDevices(reply) }
        // Off the control queue: it asks the session's queue whether a reply plays, and the
        // control queue must never wait on another queue (one client's request would delay
        // every other client's).
        table.register(Command.Play.self, on: workQueue) { [unowned self] args, reply in
            try play(path: args.path, mixed: args.mix ?? false, client: reply.client ?? Self.ownClient, reply)
        }
        // Barge-in on a reply drains its stream; otherwise a clip stops.
        table.register(Command.PlaybackStop.self, on: workQueue) { [unowned self] _, reply in
            reply.succeed(.init(stopped: flow.stopPlayback() || audio.stopAll()))
        }
        // The flow's spool: off the control queue, since it waits for the flow's queue.
        table.register(Command.SpoolList.self, on: workQueue) { [unowned self] _, reply in
            let listing = flow.spoolListing()
            let setAside = listing.setAside.sorted { ($0.setAsideAt, $0.id) < ($1.setAsideAt, $1.id) }
            reply.succeed(.init(turns: listing.turns, dir: listing.directory, answers: listing.answers, setAside: setAside))
        }
        table.register(Command.PlaybackRate.self) { [unowned self] args, reply in
            guard let rate = args.rate else { return reply.succeed(.init(rate: audio.playbackRate)) }
            guard rate.isFinite, Command.playbackRates.contains(rate) else {
                throw ControlError(.badArguments, "'rate' must be from \(Command.playbackRates.lowerBound) to \(Command.playbackRates.upperBound) (got \(rate))")
            }
            setPlaybackRate(rate, because: "asked")
            reply.succeed(.init(rate: rate))
        }
        table.register(Command.VolumeGet.self) { [unowned self] _, reply in reply.succeed(VolumeLevel(level: lock.withLock { volume })) }
        table.register(Command.VolumeSet.self) { [unowned self] args, reply in
            let level: Double
            switch (args.level, args.db) {
            case (let value?, nil):
                guard value.isFinite, (0...1).contains(value) else { throw ControlError(.badArguments, "'level' must be from 0 to 1") }
                level = value
            case (nil, let decibels?):
                guard decibels.isFinite, (VolumeLevel.minimumDecibels...0).contains(decibels) else {
                    throw ControlError(.badArguments, "'db' must be from -100 to 0")
                }
                level = VolumeLevel.gain(decibels: decibels)
            default:
                throw ControlError(.badArguments, "give exactly one of 'level' (0 to 1) and 'db' (-100 to 0)")
            }
            // Off the control queue: keeping the level syncs a file.
            workQueue.async { [self] in
                do throws(ControlError) { reply.succeed(try setVolume(level)) } catch { reply.fail(error) }
            }
        }
        table.register(Command.LevelWatch.self) { [unowned self] args, reply in
            let enabled = args.enabled ?? true
            // Unwatching leaves `level`, whose followers keep the microphone open
            // (``devicesNeeded``); before, `enabled: false` answered `watching: false` and
            // changed nothing, and a page that stopped watching kept the microphone open.
            if let client = reply.client {
                if enabled { server?.subscribe(client: client.id, to: [.level, .speech]) } else { server?.unsubscribe(client: client.id, from: [.level]) }
            }
            let (capture, interval) = (devices.states.capture, lock.withLock { configuration.levelIntervalMilliseconds })
            reply.succeed(.init(watching: enabled, intervalMs: interval, capture: capture.wire))
        }
        table.register(Command.ConfigGet.self) { [unowned self] _, reply in reply.succeed(ConfigurationListing(lock.withLock { configuration })) }
        table.register(Command.Metrics.self) { [unowned self] _, reply in
            reply.succeed(.init(format: "prometheus-text-0.0.4", text: metricsText()))
        }
    }

    /// Replies play at `rate` from their next chunk on (a replay keeps the rate it began
    /// with); told when it changed.
    func setPlaybackRate(_ rate: Double, because reason: String) {
        let before = audio.playbackRate
        do { try audio.setPlaybackRate(rate) } catch { return logger.error("playback rate \(rate) refused: \(error)") }
        guard before != rate else { return }
        logger.info("replies play at \(rate)× (\(reason); was \(before)×)")
        server?.publish(Event.PlaybackRateChanged(rate: rate))
    }

    /// The daemon itself as a client: what it plays of its own (cue practice's recordings).
    static var ownClient: ControlClientInfo { ControlClientInfo(id: 0, credentials: PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid())) }

    var uptime: Double { (Double(clock.now - startTime) / 1e9 * 10).rounded() / 10 }

    func status(_ reply: CommandReply<Command.Status>) {
        let probe = lock.withLock { backendProbe }
        let stale = probe.checkedAt.map { clock.now - $0 > 10_000_000_000 } ?? true
        guard stale else { return reply.succeed(currentStatus()) }
        // Check the backend (TalkCo's GET /topics or Chatterbox's app_config, 3 s at most, no retries), then answer.
        checkBackend { [self] in reply.succeed(currentStatus()) }
    }

    func checkBackend(then done: @escaping @Sendable () -> Void) {
        var probeConfiguration = lock.withLock { configuration.backend }
        probeConfiguration.requestTimeout = 3
        probeConfiguration.retry = .none
        let flow = flow!
        Task { [self] in
            let start = clock.now
            var probe = BackendProbe()
            do {
                // The flow's cheapest call that needs no learner: TalkCo's topics, Chatterbox's app_config.
                try await flow.probeBackend(probeConfiguration)
                probe.reachable = true
                metrics.observe(.backendProbe,
                                seconds: Double(clock.now - start) / 1e9)
            } catch {
                probe.reachable = false
                probe.error = "\(error)"
            }
            probe.checkedAt = clock.now
            lock.withLock { backendProbe = probe }
            done()
        }
    }

    func currentStatus() -> DaemonStatus {
        let (configuration, probe, user) = lock.withLock { (self.configuration, backendProbe, userID) }
        let (capture, playback) = devices.states
        let control = server?.statisticsSnapshot ?? ControlServerStatistics()
        func device(_ name: AudioDeviceURI, _ state: DeviceKeeper.State, _ format: StreamFormat?, _ statistics: AudioDeviceStatistics?,
                    echoCancelled: Bool? = nil) -> DaemonStatus.Device {
            DaemonStatus.Device(name: "\(name)", state: state.wire, error: state.error, format: format.map { "\($0)" },
                                periods: statistics?.periods, xruns: statistics?.xruns, reopens: statistics?.reopens, parks: statistics?.parks,
                                echoCancelled: echoCancelled)
        }
        return DaemonStatus(
            version: Self.version, protocol: ControlProtocol.identifier, pid: Int(getpid()), uptimeS: uptime, userId: user,
            backend: .init(kind: backendKind.rawValue, url: configuration.backendURL.absoluteString, reachable: probe.reachable, error: probe.error),
            devices: .init(capture: device(configuration.captureDevice, capture, recorder?.deviceFormat, recorder?.deviceStatistics,
                                           echoCancelled: recorder.flatMap { $0.deviceFormat == nil ? nil : $0.inputIsEchoCancelled }),
                           playback: device(configuration.playbackDevice, playback, player?.deviceFormat, player?.deviceStatistics)),
            speech: devices.models.hearing,
            playback: .init(active: player?.isActive ?? false, positionS: ((player?.position ?? 0) * 1000).rounded() / 1000, rate: audio.playbackRate),
            session: flow?.sessionSnapshot ?? .idle,
            learner: flow?.learnerSnapshot,
            visit: visits?.state,
            clients: control.clients,
            counters: .init(connections: control.connectionsAccepted, refused: control.connectionsRefused,
                            slowClientsDropped: control.slowClientsDropped, throttled: control.clientsThrottled,
                            requests: control.requests, errors: control.errors.values.reduce(0, +)))
    }

    /// One enumeration at a time, its answer shared by every `devices` request that came
    /// meanwhile: a flood of them costs one walk of ALSA and PulseAudio, not one each.
    func listDevices(_ reply: CommandReply<Command.Devices>) {
        let first: Bool = lock.withLock {
            deviceListWaiters.append(reply)
            return deviceListWaiters.count == 1
        }
        guard first else { return }
        workQueue.async { [self] in
            let listing = Self.deviceListing()
            let waiting = lock.withLock {
                defer { deviceListWaiters.removeAll() }
                return deviceListWaiters
            }
            for waiter in waiting { waiter.succeed(listing) }
        }
    }

    static func deviceListing() -> Command.Devices.Result {
        let listing = AudioDeviceList.all()
        func list(_ direction: AudioDeviceInfo.Direction) -> [Command.Devices.Device] {
            listing.devices.filter { $0.direction == direction }.map { .init(name: "\($0.name)", description: $0.description) }
        }
        return .init(capture: list(.capture), playback: list(.playback), errors: listing.errors.map(\.description))
    }

    /// `play`: refused while the speaker is not open, or while a reply owns it unless the
    /// clip is mixed over it; otherwise the ``ClipPlayer`` opens, checks, converts and
    /// streams the file.
    func play(path: String, mixed: Bool, client: ControlClientInfo, rate: Double = 1, _ reply: CommandReply<Command.Play>) throws(ControlError) {
        guard let player else {
            let state = devices.states.playback
            throw ControlError(.deviceError, "the playback device is not open (\(state))", retryable: true)
        }
        guard mixed || flow.speakerIsFree else {
            throw ControlError(.invalidState, "a reply is playing; playback.stop first, or play with mix: true", retryable: true)
        }
        try clips.play(path: path, mixed: mixed, rate: rate, client: client, format: player.format, configuration: lock.withLock { configuration }, reply)
    }

    /// `cue.play`'s download, played as the daemon's own file (it wrote it in the state
    /// directory), as `play` would play it, at `rate` (the same pitch).
    func playRecording(_ path: String, rate: Double, _ done: @escaping @Sendable (Result<Double, ControlError>) -> Void) {
        let daemon = Self.ownClient
        let answer = CommandReply<Command.Play> { result in
            done(result.flatMap { json in
                guard let played = try? ProtocolDecoder.decode(Command.Play.Result.self, from: json) else { return .failure(ControlError(.internalError, "play's answer")) }
                return .success(played.durationS)
            })
        }
        workQueue.async { [self] in
            do throws(ControlError) { try play(path: path, mixed: false, client: daemon, rate: rate, answer) } catch { answer.fail(error) }
        }
    }

    /// Sets the speaker's volume: applied at once with the player's ramp, kept in the state
    /// directory, told to clients. A level that cannot be kept is still applied, and the
    /// error says it will not survive a restart.
    func setVolume(_ level: Double) throws(ControlError) -> VolumeLevel {
        let (store, changed) = lock.withLock { () -> (VolumeStore, Bool) in
            defer { volume = level }
            return (VolumeStore(stateDirectory: configuration.stateDirectory), volume != level)
        }
        player?.volume = Float(level)
        let result = VolumeLevel(level: level)
        if changed {
            logger.info("volume \(String.printf("%.3f", level))\(result.db.map { String.printf(" (%.1f dB)", $0) } ?? " (silent)")")
            server?.publish(Event.VolumeChanged(result))
        }
        do {
            try store.save(level)
        } catch {
            logger.error("volume \(level) applied but not kept in \(store.path): \(error)")
            throw ControlError(.internalError, "the volume is applied but could not be kept for the next start (\(store.path): \(error))")
        }
        return result
    }

    func metricsText() -> String {
        let control = server?.statisticsSnapshot ?? ControlServerStatistics()
        metrics.set(.clients, to: Double(control.clients))
        metrics.set(.uptime, to: uptime)
        for (code, count) in control.errors {
            metrics.setCounter(.controlErrors, code, to: Double(count))
        }
        metrics.setCounter(.slowClientsDropped, to: Double(control.slowClientsDropped))
        for (direction, statistics) in [("capture", recorder?.deviceStatistics), ("playback", player?.deviceStatistics)] {
            guard let statistics else { continue }
            metrics.setCounter(.devicePeriods, direction, to: Double(statistics.periods))
            metrics.setCounter(.deviceParks, direction, to: Double(statistics.parks))
        }
        return metrics.exposition()
    }
}
