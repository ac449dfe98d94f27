import Foundation

/// The sound server a test runs: PulseAudio itself, or PipeWire with its PulseAudio layer
/// (`pipewire-pulse`) and its session manager (`wireplumber`), as Raspberry Pi OS and
/// current desktops ship it. `PRACTICED_SOUND_SERVER=pipewire` makes every suite that
/// runs a `PulseAudioServer` run on PipeWire; `.ci/run` runs the device and conversation
/// suites both ways.
public enum SoundServerKind: String, Sendable {
    case pulseaudio, pipewire

    /// The kind the environment asks for; PulseAudio when it says nothing.
    public static var configured: SoundServerKind {
        ProcessInfo.processInfo.environment["PRACTICED_SOUND_SERVER"].flatMap(SoundServerKind.init(rawValue:)) ?? .pulseaudio
    }
}

/// A sound server run headless for a test, reached through the PulseAudio protocol on a
/// private unix socket (anonymous auth), with a null sink `kiosk` (PCM16 24 kHz mono, paced
/// in real time) whose monitor `kiosk.monitor` records what is played.
///
/// - PulseAudio: one `pulseaudio -n` process with only the modules the tests need.
/// - PipeWire: a private session bus (wireplumber will not run without one), `pipewire`,
///   `wireplumber` and `pipewire-pulse`, each with its own log; the sink is made through
///   `pactl load-module`, as a kiosk's setup script would. `pipewireSocketPath` is the
///   native PipeWire socket, for ALSA's `pipewire` PCM.
public final class PulseAudioServer: @unchecked Sendable {
    public let kind: SoundServerKind
    public let directory: URL
    public var socketPath: String {
        switch kind {
        case .pulseaudio: directory.appendingPathComponent("native").path
        // pipewire-pulse listens on "unix:native", relative to $XDG_RUNTIME_DIR/pulse.
        case .pipewire: directory.appendingPathComponent("run/pulse/native").path
        }
    }
    /// PipeWire's own socket (the `server` of ALSA's `pipewire` PCM).
    public var pipewireSocketPath: String { directory.appendingPathComponent("run/pipewire-0").path }
    /// The server address for libpulse (`pa_simple_new`, `pa_context_connect`).
    public var address: String { "unix:\(socketPath)" }
    private var processes: [ChildProcess] = []
    private var sessionBus: ChildProcess?

    public init(kind: SoundServerKind = .configured) throws {
        self.kind = kind
        directory = try makeTemporaryDirectory()
        for sub in ["run", "home"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
    }

    private var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = directory.appendingPathComponent("run").path
        environment["HOME"] = directory.appendingPathComponent("home").path
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(directory.appendingPathComponent("bus").path)"
        for key in ["PULSE_SERVER", "PIPEWIRE_REMOTE", "PIPEWIRE_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY"] {
            environment.removeValue(forKey: key)
        }
        return environment
    }

    /// Starts the server and waits (with a deadline) until it answers with its `kiosk` sink.
    public func start() throws {
        try? FileManager.default.removeItem(atPath: socketPath)
        switch kind {
        case .pulseaudio:
            processes = [try ChildProcess(executable: "/usr/bin/pulseaudio", arguments: [
                // No shared memory with clients, as .ci/sound-server.sh runs it: PulseAudio
                // 16.1 aborted in its memfd import as a client it had served was stopped.
                "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--disable-shm=yes",
                "--log-target=file:\(logPath("pulse"))",
                "--load=module-native-protocol-unix socket=\(socketPath) auth-anonymous=1",
                "--load=module-null-sink sink_name=kiosk format=s16le rate=24000 channels=1 norewinds=1",
            ], environment: environment)]
            try waitUntilAnswering()
        case .pipewire:
            try? FileManager.default.removeItem(atPath: pipewireSocketPath)
            if sessionBus == nil {
                sessionBus = try ChildProcess(executable: "/usr/bin/dbus-daemon", arguments: [
                    "--session", "--nofork", "--nopidfile", "--address=unix:path=\(directory.appendingPathComponent("bus").path)",
                ], environment: environment, stderrPath: logPath("dbus"))
            }
            // PipeWire first: the session manager and the PulseAudio layer are its clients.
            // The graph's scheduling at info level (only that topic): how the daemon reports
            // a node that missed its cycle (``graphXruns``).
            var daemonEnvironment = environment
            daemonEnvironment["PIPEWIRE_DEBUG"] = "2,pw.node:3"
            processes = [try ChildProcess(executable: "/usr/bin/pipewire", arguments: [], environment: daemonEnvironment,
                                          stderrPath: logPath("pipewire"))]
            try waitFor("pipewire's socket") { FileManager.default.fileExists(atPath: self.pipewireSocketPath) }
            processes.append(try ChildProcess(executable: "/usr/bin/wireplumber", arguments: [], environment: environment,
                                              stderrPath: logPath("wireplumber")))
            processes.append(try ChildProcess(executable: "/usr/bin/pipewire-pulse", arguments: [], environment: environment,
                                              stderrPath: logPath("pipewire-pulse")))
            try waitUntilAnswering()
            try pactl(["load-module", "module-null-sink", "sink_name=kiosk", "format=s16le", "rate=24000", "channels=1"])
            // The sink is a PipeWire node that wireplumber makes ready; wait until PulseAudio
            // clients see it and its monitor.
            try waitFor("the kiosk sink") {
                let sources = (try? self.pactl(["list", "short", "sources"])) ?? ""
                return sources.contains("kiosk.monitor")
            }
        }
    }

    private func waitUntilAnswering() throws {
        try waitFor("an answer to pactl info") { (try? self.pactl(["info"])) != nil }
    }

    private func waitFor(_ what: String, timeout: TimeInterval = 15, _ ready: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !ready() {
            if let dead = processes.first(where: { !$0.isRunning }) {
                throw ToolError(command: "\(kind.rawValue) (process \(dead.pid) exited)", status: -1, stderr: log)
            }
            guard Date() < deadline else { throw ToolError(command: "\(kind.rawValue) (no \(what) in \(Int(timeout)) s)", status: -1, stderr: log) }
            usleep(20_000)  // polling the server's readiness, bounded by the deadline above
        }
    }

    /// Kills the server at once (SIGKILL), as a crash would: every process of it.
    public func kill() {
        processes.forEach { $0.terminate(signal: SIGKILL) }
        processes = []
    }

    /// Stops the server and removes its folders.
    public func stop() {
        // The PulseAudio layer and the session manager before PipeWire itself.
        processes.reversed().forEach { $0.terminate() }
        processes = []
        sessionBus?.terminate()
        sessionBus = nil
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs pactl against this server.
    @discardableResult
    public func pactl(_ arguments: [String]) throws -> String {
        try runTool("env", ["PULSE_SERVER=\(address)", "pactl"] + arguments)
    }

    /// Loads a module that makes source `source` (a null sink's monitor, an echo
    /// canceller's output) and waits until clients see it: PipeWire makes the node through
    /// wireplumber a moment after pactl returns. The module's index.
    @discardableResult
    public func loadModule(_ arguments: [String], makingSource source: String) throws -> String {
        let index = try pactl(["load-module"] + arguments).trimmingCharacters(in: .whitespacesAndNewlines)
        try waitFor("the source \(source)") {
            let sources = (try? self.pactl(["list", "short", "sources"])) ?? ""
            return sources.split(separator: "\n").contains { $0.split(separator: "\t").dropFirst().first == Substring(source) }
        }
        return index
    }

    /// ALSA configuration defining PCM `name` on this server, the way ALSA programs reach it:
    /// alsa-plugins' `pulse` PCM on PulseAudio, the `pipewire` PCM of pipewire-alsa on
    /// PipeWire. `pulseOptions` are added to the `pulse` PCM only.
    public func alsaPCM(named name: String, sink: String, source: String? = nil, pulseOptions: String = "") throws -> String {
        switch kind {
        case .pulseaudio:
            return "pcm.\(name) { type pulse server \"\(address)\" device \"\(source ?? sink)\" \(pulseOptions) }"
        case .pipewire:
            return """
                pcm_type.pipewire { lib "\(try Self.pipewireALSAPlugin())" }
                pcm.\(name) { type pipewire server "\(pipewireSocketPath)" playback_node "\(sink)" capture_node "\(source ?? sink + ".monitor")" }
                """
        }
    }

    /// pipewire-alsa's PCM plugin. Debian's `pipewire-alsa` conflicts with `pulseaudio` (it
    /// makes PipeWire ALSA's default device), so CI unpacks the package's plugin where
    /// `.ci/setup` says rather than installing it; an installed one is used when present.
    public static func pipewireALSAPlugin() throws -> String {
        let candidates = [
            ProcessInfo.processInfo.environment["PRACTICED_PIPEWIRE_ALSA_PLUGIN"],
            "/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pipewire.so",
            "/usr/lib/aarch64-linux-gnu/alsa-lib/libasound_module_pcm_pipewire.so",
            "/opt/practiced-ci/pipewire-alsa/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pipewire.so",
            "/opt/practiced-ci/pipewire-alsa/usr/lib/aarch64-linux-gnu/alsa-lib/libasound_module_pcm_pipewire.so",
        ].compactMap { $0 }
        guard let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw ToolError(command: "pipewire-alsa", status: -1, stderr: "no libasound_module_pcm_pipewire.so; run .ci/setup")
        }
        return found
    }

    /// The graph xruns PipeWire has logged so far: cycles in which a node (a PulseAudio
    /// client's stream in pipewire-pulse, the null sink) had not finished when the next one
    /// began. The sink then mixes one quantum of silence in place of that node's data and
    /// plays the data a quantum later, so a sound recorded through the monitor has a hole
    /// and is shifted after it, while no client is told (pipewire-pulse's underflow notice
    /// is for its own buffer running dry, which did not happen). PipeWire 0.3.65 logs "client
    /// too slow!", later versions "graph xrun", both at info level on `pw.node`, rate-limited.
    /// Always empty on PulseAudio, whose null sink renders a late cycle late, not short.
    public var graphXruns: [String] {
        guard kind == .pipewire, let text = try? String(contentsOfFile: logPath("pipewire"), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").filter { $0.contains("client too slow") || $0.contains("graph xrun") }.map(String.init)
    }

    /// Stops pipewire-pulse's process (SIGSTOP) for `milliseconds`, real-time threads and
    /// all, as a machine too busy to schedule it would: its nodes miss the graph's cycles.
    public func stallPulseLayer(milliseconds: Int) {
        guard kind == .pipewire, let layer = processes.last else { return }
        layer.send(signal: SIGSTOP)
        usleep(UInt32(milliseconds) * 1_000)  // the stall itself, not a wait for an event
        layer.send(signal: SIGCONT)
    }

    /// Runs `attempt` again (up to `attempts` times in all) while the server logged a graph
    /// xrun during it (``graphXruns``), and returns the first result the server did not
    /// spoil: a test that measures the sound through PipeWire's monitor holds the player to
    /// what it controls, and a stall of the server's own real-time threads (a loaded or
    /// virtual machine) is not the player's gap. Every discarded attempt is printed with the
    /// server's words. When every attempt is spoiled, one is still returned (see below), so that
    /// its assertions fail if the server stalled every time.
    ///
    /// `spoiledOnPipeWire` names what else, on PipeWire only, spoils a take the server's log
    /// did not (nil: nothing): its rate-limited log misses a stall early in a take, which
    /// pipewire-alsa's PCM then reports to the client as an xrun.
    ///
    /// Ten attempts: on a two-core AMD Zen 3 host under CI's parallel suites PipeWire's graph
    /// stalled in two takes running and the third failed on a hole (2026-11-28), and once
    /// (2026-11-29) it logged a stall every 2.1 s, the limiter's rate, for 47 s, and four tests
    /// used up five takes each. A take the server did not spoil ends the retries at once.
    ///
    /// `loggedStallsSpoil: false` leaves the verdict to `spoiledOnPipeWire` alone, for a take
    /// long and busy enough that the log nearly always shows a stall somewhere in it while the
    /// test measures what a stall would spoil itself: the echo-cancelling room's barge-ins
    /// (loopback, canceller and the learner's stream, a graph cycle of 5.3 ms) logged one in
    /// 18 of 20 takes on this host idle, three barge-ins taking 218 s; judged by the learner's
    /// words alone the same test ran in 55 s.
    ///
    /// When every take is spoiled, the last one whose own measurement (`spoiledOnPipeWire`)
    /// found nothing wrong is returned, stalls logged or not, and the last take only when
    /// every measurement failed: CI's PipeWire step on cc44f1d logged a stall in all ten
    /// takes of the hands-free turns (30 s each) and asserted the tenth, the one whose words
    /// a stall had actually reached (27.4 dB), though earlier takes may have been whole.
    ///
    /// And `seconds` in all (240 unless told): once the takes have run that long, the take that
    /// ends past it is the last. Ten takes of the 72 s barge-in room, or of a 36 s hands-free
    /// test, are 6 to 12 minutes a test on a host whose graph stalls in every take; four such
    /// tests on CI's loaded PipeWire step (556667c) held it past CI's 90 minutes.
    public func retryingGraphXruns<T>(attempts: Int = 10, seconds: Double = 240, loggedStallsSpoil: Bool = true,
                                      spoiledOnPipeWire: (T) -> String? = { _ in nil },
                                      _ attempt: () throws -> T) rethrows -> T {
        var number = 1
        var measuredWhole: (number: Int, result: T)?
        let started = Date()
        while true {
            if loggedStallsSpoil { waitOutTheLogsLimiter() }
            let before = graphXruns.count
            let result = try attempt()
            var stalls = loggedStallsSpoil ? Array(graphXruns.dropFirst(before)) : []
            let measured = kind == .pipewire ? spoiledOnPipeWire(result) : nil
            if let measured { stalls.append(measured) } else { measuredWhole = (number, result) }
            if stalls.isEmpty { return result }
            if number >= attempts || Date().timeIntervalSince(started) >= seconds {
                if let whole = measuredWhole, measured != nil {
                    print("attempt \(number), the last, spoiled too (\(stalls.joined(separator: "; "))); attempt \(whole.number) kept: PipeWire logged a stall in it, but it measured whole")
                    return whole.result
                }
                print("attempt \(number), the last, kept although PipeWire's graph stalled during it too (\(stalls.joined(separator: "; ")))")
                return result
            }
            print("attempt \(number) discarded: PipeWire's graph stalled during it (\(stalls.joined(separator: "; ")))")
            number += 1
        }
    }

    /// PipeWire logs one graph xrun in 2 s (a limiter per context): a stall early in an
    /// attempt that began less than 2 s after a logged one (the graph's first cycles as the
    /// server starts, a discarded attempt's) would go unlogged, and its hole would count
    /// against the client. So an attempt starts once that window has passed since the last
    /// stall logged; the log's times are CLOCK_MONOTONIC seconds. This waits out the
    /// limiter's window, not an event.
    private func waitOutTheLogsLimiter() {
        guard let line = graphXruns.last, let open = line.firstIndex(of: "]"),
              let close = line[line.index(after: open)...].firstIndex(of: "]"),
              let logged = Double(line[line.index(open, offsetBy: 2)..<close]) else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let remaining = logged + 2.1 - (Double(now.tv_sec) + Double(now.tv_nsec) / 1e9)
        if remaining > 0 { usleep(UInt32(remaining * 1e6)) }
    }

    private func logPath(_ name: String) -> String { directory.appendingPathComponent("\(name).log").path }

    /// The server's logs, the last 4 KB of each.
    public var log: String {
        ["pulse", "dbus", "pipewire", "wireplumber", "pipewire-pulse"].compactMap { name -> String? in
            guard let text = try? String(contentsOfFile: logPath(name), encoding: .utf8), !text.isEmpty else { return nil }
            return "--- \(name).log\n" + String(text.suffix(4096))
        }.joined(separator: "\n")
    }
}

/// Runs a command line tool and returns its standard output; throws on a non-zero exit, and
/// when the tool has not finished after `timeout` seconds (it is killed, and the error names
/// it: a hung tool fails its test instead of holding the whole suite). The tool is started
/// with posix_spawn (``ChildProcess``) and writes to files, not pipes: a tool that filled its
/// stderr pipe while stdout was being drained blocked for ever, and Foundation's `Process`
/// has hung in `waitUntilExit` of a child that had ended.
@discardableResult
public func runTool(_ executable: String, _ arguments: [String], timeout: Double = 600,
                    file: StaticString = #filePath, line: UInt = #line) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tool-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let outPath = directory.appendingPathComponent("stdout").path
    let errPath = directory.appendingPathComponent("stderr").path
    let command = ([executable] + arguments).joined(separator: " ")
    let child = try ChildProcess(executable: "/usr/bin/env", arguments: [executable] + arguments,
                                 environment: ProcessInfo.processInfo.environment, stdoutPath: outPath, stderrPath: errPath)
    let errors = { (try? String(contentsOfFile: errPath, encoding: .utf8)).map { String($0.suffix(4096)) } ?? "" }
    guard let status = child.waitForExit(timeout: timeout) else {
        child.terminate(signal: SIGKILL)
        throw ToolError(command: command, status: -1, stderr: "did not finish in \(Int(timeout)) s and was killed; its stderr: \(errors())")
    }
    guard status == 0 else { throw ToolError(command: command, status: status, stderr: errors()) }
    return String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(), as: UTF8.self)
}

public struct ToolError: Error, CustomStringConvertible {
    public let command: String
    public let status: Int32
    public let stderr: String
    public var description: String { "\(command) exited \(status): \(stderr)" }
}

/// A fresh temporary folder for one test, removed by the caller's `addTeardownBlock`.
public func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("audiokernel-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
