import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

// The daemon's own commands (the session's go to ``SessionController``): health, status,
// devices, sounds, configuration, metrics.
extension PracticeDaemon {
    public func snapshot() -> DaemonSnapshot {
        let (capture, playback) = lock.withLock { (captureState, playbackState) }
        return DaemonSnapshot(version: Self.version, capture: "\(capture)", playback: "\(playback)", playing: player?.isActive ?? false,
                              session: session?.snapshot ?? .idle)
    }

    public func handle(_ request: ControlRequest, client: ControlClientInfo, reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void) {
        metrics.increment("practiced_control_requests_total", help: "Control requests by command.",
                          labels: "command=\"\(Self.commands.contains(request.command) ? request.command : "unknown")\"")
        if Self.deviceCommands.contains(request.command), !devicesOpen {
            // Closed while idle: opened (a few tens of milliseconds) before the command runs.
            return audioQueue.async { [self] in
                openDevices()
                run(request, client: client, reply: reply)
            }
        }
        run(request, client: client, reply: reply)
    }

    func run(_ request: ControlRequest, client: ControlClientInfo, reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void) {
        if cue.handle(request, reply: reply) { return }
        if SessionController.commands.contains(request.command) {
            guard backendKind == .talkco else {
                return reply(.failure(ControlError(.invalidState, "'\(request.command)' needs backend.kind = talkco (this daemon practises Chatterbox's cues)")))
            }
            return session.handle(request, reply: reply)
        }
        do throws(ControlError) {
            switch request.command {
            case Command.Ping.name:
                CommandReply<Command.Ping>(reply).succeed(.init(pong: true, uptimeS: uptime))
            case Command.Status.name:
                status(CommandReply(reply))
            case Command.Devices.name:
                listDevices(CommandReply(reply))
            case Command.Play.name:
                // Off the control queue: it asks the session's queue whether a reply plays,
                // and the control queue must never wait on another queue (one client's
                // request would delay every other client's).
                let arguments = try request.arguments(Command.Play.self)
                let answer = CommandReply<Command.Play>(reply)
                workQueue.async { [self] in
                    do throws(ControlError) { try play(path: arguments.path, mixed: arguments.mix ?? false, client: client, answer) } catch { answer.fail(error) }
                }
            case Command.PlaybackStop.name:
                // Barge-in on a reply drains its stream; otherwise a clip stops.
                workQueue.async { [self] in
                    let stopped = session.stopPlayback() || audio.stopAll()
                    CommandReply<Command.PlaybackStop>(reply).succeed(.init(stopped: stopped))
                }
            case Command.VolumeGet.name:
                CommandReply<Command.VolumeGet>(reply).succeed(VolumeLevel(level: lock.withLock { volume }))
            case Command.VolumeSet.name:
                let arguments = try request.arguments(Command.VolumeSet.self)
                let level: Double
                switch (arguments.level, arguments.db) {
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
                let answer = CommandReply<Command.VolumeSet>(reply)
                workQueue.async { [self] in
                    do throws(ControlError) { answer.succeed(try setVolume(level)) } catch { answer.fail(error) }
                }
            case Command.LevelWatch.name:
                let enabled = try request.arguments(Command.LevelWatch.self).enabled ?? true
                if enabled { server?.subscribe(client: client.id, to: [EventTopic.level.rawValue, EventTopic.speech.rawValue]) }
                let (capture, interval) = lock.withLock { (captureState, configuration.levelIntervalMilliseconds) }
                CommandReply<Command.LevelWatch>(reply).succeed(.init(watching: enabled, intervalMs: interval, capture: "\(capture)"))
            case Command.ConfigGet.name:
                CommandReply<Command.ConfigGet>(reply).succeed(ConfigurationListing(lock.withLock { configuration }))
            case Command.Metrics.name:
                CommandReply<Command.Metrics>(reply).succeed(.init(format: "prometheus-text-0.0.4", text: metricsText()))
            default:
                throw ControlError(.unknownCommand, "unknown command '\(request.command)'; commands are \(Self.commands.joined(separator: ", "))")
            }
        } catch {
            reply(.failure(error))
        }
    }

    var uptime: Double { (Double(DispatchTime.now().uptimeNanoseconds - startTime.uptimeNanoseconds) / 1e9 * 10).rounded() / 10 }

    func status(_ reply: CommandReply<Command.Status>) {
        let probe = lock.withLock { backendProbe }
        let stale = probe.checkedAt.map { DispatchTime.now().uptimeNanoseconds - $0.uptimeNanoseconds > 10_000_000_000 } ?? true
        guard stale else { return reply.succeed(currentStatus()) }
        // Check the backend (TalkCo's GET /topics or Chatterbox's app_config, 3 s at most, no retries), then answer.
        checkBackend { [self] in reply.succeed(currentStatus()) }
    }

    func checkBackend(then done: @escaping @Sendable () -> Void) {
        var probeConfiguration = lock.withLock { configuration.backend }
        probeConfiguration.requestTimeout = 3
        probeConfiguration.retry = .none
        let kind = backendKind
        let client = BackendClient(configuration: probeConfiguration)
        let cueClient = ChatterboxClient(configuration: probeConfiguration, tokens: chatterbox.tokens)
        Task { [self] in
            let start = DispatchTime.now()
            var probe = BackendProbe()
            do {
                // Each kind's cheapest call that needs no learner: TalkCo's topics, Chatterbox's app_config.
                if kind == .chatterbox { _ = try await cueClient.appConfig() } else { _ = try await client.topics() }
                probe.reachable = true
                metrics.observe("practiced_backend_probe_seconds", help: "Time of the backend reachability check.",
                                seconds: Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
            } catch {
                probe.reachable = false
                probe.error = "\(error)"
            }
            probe.checkedAt = .now()
            lock.withLock { backendProbe = probe }
            done()
        }
    }

    func currentStatus() -> DaemonStatus {
        let (configuration, probe, capture, playback, user) = lock.withLock { (self.configuration, backendProbe, captureState, playbackState, userID) }
        let control = server?.statisticsSnapshot ?? ControlServerStatistics()
        func device(_ name: AudioDeviceURI, _ state: DeviceState, _ format: StreamFormat?, _ statistics: AudioDeviceStatistics?,
                    echoCancelled: Bool? = nil) -> DaemonStatus.Device {
            DaemonStatus.Device(name: "\(name)", state: "\(state)", format: format.map { "\($0)" },
                                periods: statistics?.periods, xruns: statistics?.xruns, reopens: statistics?.reopens, parks: statistics?.parks,
                                echoCancelled: echoCancelled)
        }
        return DaemonStatus(
            version: Self.version, protocol: ControlProtocol.identifier, pid: Int(getpid()), uptimeS: uptime, userId: user,
            backend: .init(kind: backendKind.rawValue, url: configuration.backendURL.absoluteString, reachable: probe.reachable, error: probe.error),
            devices: .init(capture: device(configuration.captureDevice, capture, recorder?.deviceFormat, recorder?.deviceStatistics,
                                           echoCancelled: recorder.flatMap { $0.deviceFormat == nil ? nil : $0.inputIsEchoCancelled }),
                           playback: device(configuration.playbackDevice, playback, player?.deviceFormat, player?.deviceStatistics)),
            playback: .init(active: player?.isActive ?? false, positionS: ((player?.position ?? 0) * 1000).rounded() / 1000),
            session: session?.snapshot ?? .idle,
            learner: backendKind == .chatterbox ? cue?.snapshot : nil,
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
    func play(path: String, mixed: Bool, client: ControlClientInfo, _ reply: CommandReply<Command.Play>) throws(ControlError) {
        guard let player else {
            let state = lock.withLock { playbackState }
            throw ControlError(.deviceError, "the playback device is not open (\(state))", retryable: true)
        }
        guard mixed || session.speakerIsFree else {
            throw ControlError(.invalidState, "a reply is playing; playback.stop first, or play with mix: true", retryable: true)
        }
        try clips.play(path: path, mixed: mixed, client: client, format: player.format, configuration: lock.withLock { configuration }, reply)
    }

    /// `cue.play`'s download, played as the daemon's own file (it wrote it in the state
    /// directory), as `play` would play it.
    func playRecording(_ path: String, _ done: @escaping @Sendable (Result<Double, ControlError>) -> Void) {
        let daemon = ControlClientInfo(id: 0, credentials: PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid()))
        let answer = CommandReply<Command.Play> { result in
            done(result.flatMap { json in
                guard let played = try? ProtocolDecoder.decode(Command.Play.Result.self, from: json) else { return .failure(ControlError(.internalError, "play's answer")) }
                return .success(played.durationS)
            })
        }
        workQueue.async { [self] in
            do throws(ControlError) { try play(path: path, mixed: false, client: daemon, answer) } catch { answer.fail(error) }
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
        metrics.set("practiced_clients", help: "Clients connected to the control socket.", Double(control.clients))
        metrics.set("practiced_uptime_seconds", help: "Seconds since start.", uptime)
        for (code, count) in control.errors {
            metrics.setCounter("practiced_control_errors_total", help: "Error replies by code.", labels: "code=\"\(code)\"", Double(count))
        }
        metrics.setCounter("practiced_slow_clients_dropped_total", help: "Clients disconnected for not reading.", Double(control.slowClientsDropped))
        for (direction, statistics) in [("capture", recorder?.deviceStatistics), ("playback", player?.deviceStatistics)] {
            guard let statistics else { continue }
            metrics.setCounter("practiced_device_periods_total", help: "Periods transferred by device.", labels: "direction=\"\(direction)\"",
                               Double(statistics.periods))
            metrics.setCounter("practiced_device_parks_total", help: "Times a device was parked because nobody needed it.",
                               labels: "direction=\"\(direction)\"", Double(statistics.parks))
        }
        return metrics.exposition()
    }
}
