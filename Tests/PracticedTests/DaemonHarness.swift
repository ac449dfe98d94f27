import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport
import XCTest

/// One `practiced` process for a test: its own directory (socket, state, spool), the null
/// microphone and a WAV file as the speaker, a notification socket to learn when it is
/// ready, and its stderr kept for the test to read.
final class DaemonHarness {
    let directory: String
    let socketPath: String
    let stderrPath: String
    let notify: NotifyListener
    let process: ChildProcess
    /// Messages read from the notification socket up to READY=1.
    let startupMessages: [String]
    /// Leave the directory (spool, state) for a daemon started after this one.
    var keepsDirectory = false

    static var buildDirectory: URL { URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent() }
    /// The daemon and client under test: this build's, or the shipped ones (see
    /// ``ShippedBinaries``: CI runs the process suites on the release build too).
    static var practiced: String { ShippedBinaries.path(of: "practiced") }
    static var practicectl: String { ShippedBinaries.path(of: "practicectl") }

    /// A fresh world-traversable directory (clients under other uids must reach the socket).
    static func makeDirectory() -> String {
        let path = "/tmp/practiced-test-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return path
    }

    /// Starts the daemon and waits for READY=1. `arguments` come after the defaults and
    /// override them. `pinsEndpoint`: the suites written for the level rule run on it unless
    /// their arguments name a `--speech-endpoint`; false leaves the shipped default (`model`).
    init(backend: URL? = nil, arguments: [String] = [], environment: [String: String] = [:], directory: String? = nil,
         socketPath: String? = nil, passing: [(Int32, Int32)] = [], viaShell: Bool = false, waitReady: Bool = true,
         namesSpool: Bool = true, openFileLimit: Int? = nil, softOpenFileLimit: Int? = nil, pinsEndpoint: Bool = true) throws {
        // Every line a test reads from this daemon is checked against the protocol's schema.
        ProtocolConformance.install()
        self.directory = directory ?? Self.makeDirectory()
        self.socketPath = socketPath ?? "\(self.directory)/run/control.sock"
        stderrPath = "\(self.directory)/daemon.log"
        notify = try NotifyListener(path: "\(self.directory)/notify.sock")
        var env = ["PATH": "/usr/bin:/bin", "HOME": self.directory, "NOTIFY_SOCKET": notify.path, "PRACTICED_CONFIG": "\(self.directory)/practiced.conf"]
        if !FileManager.default.fileExists(atPath: "\(self.directory)/practiced.conf") {
            _ = FileManager.default.createFile(atPath: "\(self.directory)/practiced.conf", contents: Data("# test\n".utf8))
        }
        // A sanitized build's daemon writes its reports where CI looks for them.
        for key in ["TSAN_OPTIONS", "ASAN_OPTIONS", "LSAN_OPTIONS"] {
            if let value = ProcessInfo.processInfo.environment[key] { env[key] = value }
        }
        for (key, value) in environment { env[key] = value }
        let spool = namesSpool ? ["--spool-dir", "\(self.directory)/state/spool"] : []
        // The suites written for the level rule pin it; the shipped default (`model`) is
        // tested where a test asks for it (LearnedEndpointingTests, KioskUITests, the proofs).
        let endpoint = !pinsEndpoint || arguments.contains("--speech-endpoint") ? [] : ["--speech-endpoint", "hangover"]
        let defaults = [
            "--socket-path", self.socketPath, "--state-dir", "\(self.directory)/state"] + spool + endpoint + [
            "--capture-device", "null:", "--playback-device", "file:\(self.directory)/speaker.wav?realtime",
            "--backend-url", (backend ?? URL(string: "http://127.0.0.1:9")!).absoluteString, "--log-level", "debug",
        ]
        // RLIMIT_NOFILE as `LimitNOFILE=` or a busy kiosk would leave it: both limits, or
        // the soft one only (systemd's default: 1,024 soft, 524,288 hard).
        let limit = (openFileLimit.map { "ulimit -n \($0) && " } ?? "") + (softOpenFileLimit.map { "ulimit -S -n \($0) && " } ?? "")
        if viaShell || !limit.isEmpty {
            // systemd sets LISTEN_PID and WATCHDOG_PID to the daemon's pid; a shell that
            // execs keeps its pid, so $$ is that pid.
            let quoted = ([Self.practiced] + defaults + arguments).map { "'\($0)'" }.joined(separator: " ")
            let activation = viaShell ? "export LISTEN_PID=$$ WATCHDOG_PID=$$; " : ""
            process = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "\(limit)\(activation)exec \(quoted)"],
                                       environment: env, stderrPath: stderrPath, passing: passing)
        } else if let wrapper = ProcessInfo.processInfo.environment["PRACTICED_TEST_WRAPPER"], !wrapper.isEmpty {
            // A profiler around the daemon (`heaptrack -o /tmp/practiced`, `valgrind`); the
            // figures read from /proc are then the wrapper's.
            let command = wrapper.split(separator: " ").map(String.init) + [Self.practiced] + defaults + arguments
            process = try ChildProcess(executable: command[0], arguments: Array(command.dropFirst()), environment: env,
                                       stderrPath: stderrPath, passing: passing)
        } else {
            process = try ChildProcess(executable: Self.practiced, arguments: defaults + arguments, environment: env,
                                       stderrPath: stderrPath, passing: passing)
        }
        if waitReady {
            guard let messages = notify.wait(for: "READY=1", timeout: 20) else {
                throw HarnessError(message: "practiced did not become ready:\n\(Self.read(stderrPath))")
            }
            startupMessages = messages
        } else {
            startupMessages = []
        }
    }

    deinit {
        // A daemon that crashed under a test says so here, with its log kept: otherwise the
        // test sees only a refused connection or a broken pipe, and the reason is gone.
        if let status = process.status, [SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT, SIGFPE].contains(status - 128) {
            FileHandle.standardError.write(Data("practiced (pid \(process.pid)) died of signal \(status - 128) during the test; its directory is kept: \(directory)\n\(String(log.suffix(4_000)))\n".utf8))
            keepsDirectory = true
        }
        process.terminate(signal: SIGKILL)
        if !keepsDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }

    func client(timeout: Double = 10) throws -> ControlClient { try ControlClient(path: socketPath, timeout: timeout) }

    var log: String { Self.read(stderrPath) }

    /// Waits until the speech models are loaded (`status.speech.models` is `ready`): they load
    /// beside a session's start, 0.3 s in a release build and most of a minute in a debug one,
    /// and a hands-free turn begun before ends by the hangover rule.
    func waitForModels(timeout: Double = 120) -> Bool {
        guard let client = try? client() else { return false }
        return Poll.until(timeout: timeout) { (try? client.request(Command.Status.self))?["speech"]?["models"] == "ready" }
    }

    /// Waits until the daemon's log holds `text` (re-reading the file; no event tells us).
    func waitForLog(_ text: String, timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if log.contains(text) { return true }
            usleep(10_000)
        }
        return log.contains(text)
    }

    /// Runs a program to its end (at most `timeout` seconds) with a minimal environment plus
    /// `environment`; its exit status and output.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                    timeout: Double = 30) throws -> (status: Int32, stdout: String, stderr: String) {
        let out = "/tmp/practiced-run-\(UUID().uuidString)", err = out + ".err"
        defer {
            unlink(out)
            unlink(err)
        }
        let process = try ChildProcess(executable: executable, arguments: arguments,
                                       environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp"].merging(environment) { $1 },
                                       stdoutPath: out, stderrPath: err)
        guard let status = process.waitForExit(timeout: timeout) else { throw HarnessError(message: "\(executable) \(arguments) hung") }
        return (status, read(out), read(err))
    }

    static func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// Runs practicectl (as another user with `asUser`); its exit status and output.
    static func practicectl(_ arguments: [String], socket: String, asUser: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let out = "/tmp/practicectl-\(UUID().uuidString).out", err = out + ".err"
        defer {
            unlink(out)
            unlink(err)
        }
        let command = [practicectl, "--socket", socket] + arguments
        // A sanitized build's practicectl runs under CI's options, as the daemon does: without
        // them LeakSanitizer checks at exit and turns exit(77) into 1 over a 24-byte value
        // alive in main when exit() is called (CI's ASan step, ControlErrorTests). Run as
        // another user it takes no option that names a file, and reports to stderr: CI's
        // clone may be a folder that user cannot enter, and the runtime then exits ("Can't
        // create directory" for the reports, "failed to read suppressions file").
        var environment = ["PATH": "/usr/bin:/bin"]
        let namingFiles = ["log_path=", "suppressions="]
        for key in ["TSAN_OPTIONS", "ASAN_OPTIONS", "LSAN_OPTIONS"] {
            guard let value = ProcessInfo.processInfo.environment[key] else { continue }
            environment[key] = asUser == nil ? value
                : value.split(separator: ":").filter { option in !namingFiles.contains { option.hasPrefix($0) } }.joined(separator: ":")
        }
        let process: ChildProcess
        if let user = asUser {
            process = try ChildProcess(executable: "/usr/bin/setpriv", arguments: ["--reuid=\(user)", "--regid=\(user)", "--clear-groups"] + command,
                                       environment: environment, stdoutPath: out, stderrPath: err)
        } else {
            process = try ChildProcess(executable: command[0], arguments: Array(command.dropFirst()), environment: environment,
                                       stdoutPath: out, stderrPath: err)
        }
        guard let status = process.waitForExit(timeout: 30) else { throw HarnessError(message: "practicectl \(arguments) hung") }
        return (status, read(out), read(err))
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

extension ControlClient {
    /// Command `C`, which must fail; its error.
    func failure<C: ControlCommand>(_ command: C.Type, _ args: JSONValue = .object([]), file: StaticString = #filePath, line: UInt = #line) -> ControlError? {
        failure(C.name, args, file: file, line: line)
    }

    /// A request that must fail; its error (a name the protocol does not have, or a hostile one).
    func failure(_ command: String, _ args: JSONValue = .object([]), file: StaticString = #filePath, line: UInt = #line) -> ControlError? {
        do {
            let result = try request(command, args)
            XCTFail("\(command) succeeded: \(result.serialized(.compact))", file: file, line: line)
            return nil
        } catch {
            guard case .command(let failure) = error else {
                XCTFail("\(command): \(error)", file: file, line: line)
                return nil
            }
            return failure
        }
    }

    /// Events until an `E` arrives (nil at the deadline).
    func waitForEvent<E: ProtocolEvent>(_ event: E.Type, timeout: Double = 10) -> JSONValue? { waitForEvent(E.name, timeout: timeout) }

    /// Events until one named `name` arrives (nil at the deadline).
    func waitForEvent(_ name: String, timeout: Double = 10) -> JSONValue? {
        let deadline = Date().addingTimeInterval(timeout)
        while let event = try? nextEvent(timeout: max(0.01, deadline.timeIntervalSinceNow)) {
            if event["event"]?.stringValue == name { return event }
            if Date() > deadline { return nil }
        }
        return nil
    }
}
