import Foundation

/// A PulseAudio server run headless for a test: private runtime and home folders, a unix
/// socket with anonymous auth, and a null sink `kiosk` (PCM16 24 kHz mono, `norewinds=1` so
/// it paces in real time) whose monitor `kiosk.monitor` records what is played.
public final class PulseAudioServer: @unchecked Sendable {
    public let directory: URL
    public var socketPath: String { directory.appendingPathComponent("native").path }
    /// The server address for libpulse (`pa_simple_new`, `pa_context_connect`).
    public var address: String { "unix:\(socketPath)" }
    private var process: ChildProcess?

    public init() throws {
        directory = try makeTemporaryDirectory()
        for sub in ["run", "home"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
    }

    /// Starts the server and waits (with a deadline) until it answers.
    public func start() throws {
        try? FileManager.default.removeItem(atPath: socketPath)
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = directory.appendingPathComponent("run").path
        environment["HOME"] = directory.appendingPathComponent("home").path
        environment.removeValue(forKey: "PULSE_SERVER")
        let process = try ChildProcess(executable: "/usr/bin/pulseaudio", arguments: [
            "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--disable-shm=yes",
            "--log-target=file:\(directory.appendingPathComponent("pulse.log").path)",
            "--load=module-native-protocol-unix socket=\(socketPath) auth-anonymous=1",
            "--load=module-null-sink sink_name=kiosk format=s16le rate=24000 channels=1 norewinds=1",
        ], environment: environment)
        self.process = process
        let deadline = Date().addingTimeInterval(15)
        while (try? pactl(["info"])) == nil {
            guard process.isRunning else { throw ToolError(command: "pulseaudio", status: -1, stderr: log) }
            guard Date() < deadline else { throw ToolError(command: "pulseaudio (no answer in 15 s)", status: -1, stderr: log) }
            usleep(20_000)  // polling the server's readiness, bounded by the deadline above
        }
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    public func kill() {
        process?.terminate(signal: SIGKILL)
        process = nil
    }

    /// Stops the server and removes its folders.
    public func stop() {
        process?.terminate()
        process = nil
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

    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("pulse.log"), encoding: .utf8)) ?? ""
    }
}

/// Runs a command line tool and returns its standard output; fails the test on a
/// non-zero exit.
@discardableResult
public func runTool(_ executable: String, _ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let output = out.fileHandleForReading.readDataToEndOfFile()
    let errors = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw ToolError(command: ([executable] + arguments).joined(separator: " "),
                        status: process.terminationStatus,
                        stderr: String(decoding: errors, as: UTF8.self))
    }
    return String(decoding: output, as: UTF8.self)
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
