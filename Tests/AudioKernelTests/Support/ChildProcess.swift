import Foundation

/// A long-running child process (a server for a test), started with posix_spawn and reaped
/// with waitpid by its owner. Foundation's `Process` is kept for short tools only: with a
/// long-lived `Process` child alive, its monitor thread on Linux stopped reaping other
/// children and `waitUntilExit` of a finished `pactl` hung.
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    private var reaped = false

    /// Starts `executable` with `arguments` and `environment`; stdin, stdout and stderr go
    /// to /dev/null.
    init(executable: String, arguments: [String], environment: [String: String]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, nil, argv, envp)
        guard result == 0 else { throw ToolError(command: executable, status: result, stderr: String(cString: strerror(result))) }
        pid = child
    }

    /// Whether the child is still running (reaps it if it has exited).
    var isRunning: Bool {
        guard !reaped else { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid {
            reaped = true
            return false
        }
        return true
    }

    /// Sends `signal` and waits for the child to exit.
    func terminate(signal: Int32 = SIGTERM) {
        guard !reaped else { return }
        kill(pid, signal)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        reaped = true
    }

    deinit { terminate(signal: SIGKILL) }
}
