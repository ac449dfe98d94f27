import Foundation

/// A long-running child process (a server or daemon under test), started with posix_spawn
/// and reaped with waitpid by its owner. Foundation's `Process` is kept for short tools
/// only: with a long-lived `Process` child alive, its monitor thread on Linux stopped
/// reaping other children and `waitUntilExit` of a finished `pactl` hung.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    private let lock = NSLock()
    private var exitStatus: Int32?
    /// The read end of the child's stdout, when it was asked for.
    private var stdoutFD: Int32 = -1
    private var pending: [UInt8] = []

    /// Starts `executable`; stdin reads /dev/null, stderr goes to a file (or /dev/null), and
    /// stdout to a file, or to a pipe read with ``readLine(timeout:)`` when `stdoutPath` is nil.
    /// `passing` lists descriptors to hand over, as (descriptor here, number in the child):
    /// a listening socket as fd 3 for socket activation.
    public init(executable: String, arguments: [String], environment: [String: String],
                stdoutPath: String? = "/dev/null", stderrPath: String = "/dev/null", passing: [(Int32, Int32)] = []) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var pipeFDs: [Int32] = [-1, -1]
        if let stdoutPath {
            posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        } else {
            // pipe2 needs _GNU_SOURCE; close-on-exec is set by hand (dup2 clears it on fd 1).
            guard pipe(&pipeFDs) == 0 else { throw SpawnError(executable: executable, code: errno) }
            for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)  // dup2 clears O_CLOEXEC
        }
        defer { if pipeFDs[1] >= 0 { close(pipeFDs[1]) } }
        stdoutFD = pipeFDs[0]
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        for (source, target) in passing {
            // dup2 onto itself keeps close-on-exec; clear it so the child inherits the fd.
            if source == target { _ = fcntl(source, F_SETFD, 0) }
            posix_spawn_file_actions_adddup2(&actions, source, target)
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, nil, argv, envp)
        guard result == 0 else { throw SpawnError(executable: executable, code: result) }
        pid = child
    }

    /// The next line the child writes on its stdout pipe, waiting at most `timeout` seconds
    /// (poll(2) on the pipe); nil at the deadline or at end of file.
    public func readLine(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            let remaining = deadline.timeIntervalSinceNow
            guard stdoutFD >= 0, remaining > 0 else { return nil }
            var descriptor = pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(remaining * 1000) + 1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = read(stdoutFD, &buffer, buffer.count)
            guard n > 0 else { return nil }
            pending += buffer[0..<n]
        }
    }

    /// Whether the child is still running (reaps it if it has exited).
    public var isRunning: Bool { reap(blocking: false) == nil }

    /// The exit status (or 128 + signal) once the child has ended; nil while it runs.
    public var status: Int32? { reap(blocking: false) }

    /// Waits for the child to end, at most `timeout` seconds (polling waitpid: a child
    /// has no descriptor to wait on); its status, or nil if it is still running.
    @discardableResult
    public func waitForExit(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let status = reap(blocking: false) { return status }
            usleep(5_000)
        }
        return reap(blocking: false)
    }

    /// Sends `signal` (SIGSTOP, SIGCONT) without waiting for anything.
    public func send(signal: Int32) {
        if reap(blocking: false) == nil { kill(pid, signal) }
    }

    /// Sends `signal` and waits for the child to exit; its status. A child still running
    /// `grace` seconds later (hung in its shutdown) is killed, and says so on the test's
    /// stderr: its status is then 128 + SIGKILL, which a test expecting a clean exit reports,
    /// instead of the suite waiting for it for ever.
    @discardableResult
    public func terminate(signal: Int32 = SIGTERM, grace: Double = 60) -> Int32 {
        if let status = reap(blocking: false) { return status }
        kill(pid, signal)
        if signal != SIGKILL, let status = waitForExit(timeout: grace) { return status }
        if signal != SIGKILL {
            FileHandle.standardError.write(Data("ChildProcess: pid \(pid) still running \(Int(grace)) s after signal \(signal); killed\n".utf8))
        }
        kill(pid, SIGKILL)
        return reap(blocking: true)!
    }

    private func reap(blocking: Bool) -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let exitStatus { return exitStatus }
        var raw: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &raw, blocking ? 0 : WNOHANG) } while result < 0 && errno == EINTR
        guard result == pid else { return nil }
        // WIFEXITED / WEXITSTATUS / WTERMSIG by hand: Glibc's macros do not import.
        let signal = raw & 0x7F
        exitStatus = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
        return exitStatus
    }

    deinit {
        terminate(signal: SIGKILL)
        if stdoutFD >= 0 { close(stdoutFD) }
    }
}

public struct SpawnError: Error, CustomStringConvertible {
    public var executable: String
    public var code: Int32
    public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
}
