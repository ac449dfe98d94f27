import Foundation
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// The launcher (cog, its default browser) as the unit runs it: cage headless (wlroots with the
/// pixman renderer), cog on the launch page read through its kiosk: scheme, the bridge, the
/// daemon as a process. The page must come up and talk to the daemon through the bridge, in
/// one web process, with the token on no command line and in none of the launcher's output,
/// and a SIGTERM to the launcher, or a crashed web process, must leave no process and no
/// folder behind.
final class KioskCogLauncherTests: XCTestCase {
    /// The launcher as the unit starts it, and the daemon it shows.
    private struct Run {
        let daemon: DaemonHarness
        let launcher: ChildProcess
        let folder: String, port: UInt16, output: String, errors: String
        /// What the unit sends to the journal: cog's log (through the launcher's filter) and the bridge's.
        func journal() -> String { DaemonHarness.read(output) + DaemonHarness.read(errors) }
    }

    private func startLauncher() throws -> Run {
        // cage will not run as root: the launcher runs as nobody (65534), as the unit runs it as
        // practiced-ui, a member of the socket's group. Its UI and the bridge are copied where
        // that user can read them (CI's clone may be a folder it cannot enter).
        let daemon = try DaemonHarness(arguments: ["--socket-group", "nogroup"])
        // X's socket folder as a booted system has it (tmpfiles.d/x11.conf: root's, 1777).
        // Without it Xwayland, as nobody, made it nobody's 0700, and the next `.ci/run` on the
        // same machine found it so (the install test checks it).
        if access("/tmp/.X11-unix", F_OK) != 0 {
            XCTAssertEqual(mkdir("/tmp/.X11-unix", 0o1777), 0)
            XCTAssertEqual(chmod("/tmp/.X11-unix", 0o1777), 0)
        }
        let ui = "\(daemon.directory)/ui", bridge = "\(daemon.directory)/practiced-kiosk-bridge"
        try FileManager.default.copyItem(atPath: KioskUITests.uiDirectory, toPath: ui)
        try FileManager.default.copyItem(atPath: ShippedBinaries.path(of: "practiced-kiosk-bridge"), toPath: bridge)
        let runtime = "\(daemon.directory)/xdg"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        XCTAssertEqual(chown(runtime, 65534, 65534), 0)
        let output = "\(daemon.directory)/launcher.out", errors = "\(daemon.directory)/launcher.err"
        let port = try WebDriver.freePort()
        // No --browser: cog is the default.
        let launcher = try ChildProcess(executable: "/usr/bin/setpriv", arguments: [
            "--reuid=65534", "--regid=65534", "--clear-groups",
            "/bin/bash", "\(ui)/practiced-kiosk-ui", "--port", "\(port)", "--socket", daemon.socketPath, "--ui", ui,
        ], environment: [
            "PATH": "/usr/bin:/bin", "HOME": runtime, "XDG_RUNTIME_DIR": runtime,
            "WLR_BACKENDS": "headless", "WLR_LIBINPUT_NO_DEVICES": "1", "WLR_RENDERER": "pixman", "PRACTICED_KIOSK_BRIDGE": bridge,
        ], stdoutPath: output, stderrPath: errors)
        let run = Run(daemon: daemon, launcher: launcher, folder: "\(runtime)/practiced-kiosk-ui.65534", port: port, output: output, errors: errors)

        // The page ran its script: it opened the WebSocket through the bridge, said hello,
        // subscribed and asked for the daemon's status (the daemon counts the requests it
        // answers by command; this test's own client asks only for the metrics).
        let client = try daemon.client()
        let deadline = Date().addingTimeInterval(60)
        var asked = 0.0
        while asked < 1 && Date() < deadline && launcher.isRunning {
            let metrics = try client.request(Command.Metrics.self)["text"]?.stringValue ?? ""
            asked = metrics.split(separator: "\n").first { $0.hasPrefix("practiced_control_requests_total{command=\"status\"}") }
                .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            if asked < 1 { usleep(200_000) }
        }
        XCTAssertGreaterThanOrEqual(asked, 1, "the page never asked for the status: \(run.journal())")
        XCTAssertTrue(run.journal().contains("WebSocket open"), run.journal())
        return run
    }

    /// The web processes the launcher started.
    private func webProcesses(of run: Run) -> [Int32] {
        commandLines().filter { pid, arguments in
            arguments.hasPrefix("/usr/lib/x86_64-linux-gnu/wpe-webkit") && arguments.contains("WPEWebProcess") && isDescendant(pid, of: run.launcher.pid)
        }.map(\.pid)
    }

    /// After a failed test too: the launcher stopped as the unit stops it, and whatever of
    /// its run is still there killed (a SIGKILL to the launcher alone left cage and cog
    /// running, which skewed every later measurement of WebKit's memory).
    private func stop(_ run: Run) {
        if run.launcher.isRunning { run.launcher.terminate(signal: SIGTERM, grace: 15) }
        for (pid, arguments) in commandLines() where arguments.contains(run.folder) || arguments.contains("--listen 127.0.0.1:\(run.port)") {
            kill(pid, SIGKILL)
        }
    }

    /// Nothing of the launcher's left: its folder, its processes.
    private func assertNothingLeft(by run: Run, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(FileManager.default.fileExists(atPath: run.folder), "the run's folder outlived the launcher", file: file, line: line)
        let left = commandLines().map(\.arguments).filter { $0.contains(run.folder) || $0.contains("--listen 127.0.0.1:\(run.port)") }
        XCTAssertEqual(left, [], "processes of the launcher's outlived it", file: file, line: line)
    }

    func testCogShowsThePageInOneWebProcessWithTheTokenNowhereAndStopsClean() throws {
        let run = try startLauncher()
        defer { stop(run) }

        // The token: in the launch page only.
        let page = DaemonHarness.read("\(run.folder)/launch.html")
        let token = try XCTUnwrap(page.firstMatch(of: /token=([0-9a-f]{64})/).map { String($0.1) }, page)
        for (_, arguments) in commandLines() {
            XCTAssertFalse(arguments.contains(token), "the token is on a command line: \(arguments)")
        }
        XCTAssertEqual(webProcesses(of: run).count, 1, "the launch page and the UI in one web process")
        XCTAssertFalse(run.journal().contains(token), "the token reached the launcher's output (the journal)")
        XCTAssertTrue(run.journal().contains("token=(hidden)"), "cog's log of the address, token blotted out")

        // SIGTERM: the launcher ends cog, cage and the bridge, and removes its folder.
        run.launcher.send(signal: SIGTERM)
        XCTAssertEqual(run.launcher.waitForExit(timeout: 30), 0, "the launcher did not end cleanly on SIGTERM (the unit's stop)")
        assertNothingLeft(by: run)
    }

    /// A web process that crashes ends cog (`--webprocess-failure=exit`), and so the launcher,
    /// with a failure, for the unit to restart the whole (`Restart=always`): no error page
    /// left up, nothing left behind.
    func testACrashedWebProcessEndsTheLauncherForTheUnitToRestart() throws {
        let run = try startLauncher()
        defer { stop(run) }
        let web = try XCTUnwrap(webProcesses(of: run).first, "no web process")
        // Killed as the kernel's OOM killer would kill it.
        XCTAssertEqual(kill(web, SIGKILL), 0)
        let status = run.launcher.waitForExit(timeout: 30)
        XCTAssertNotNil(status, "the launcher outlived its crashed web process: \(run.journal().split(separator: "\n").filter { !$0.contains("output test failed") }.suffix(30).joined(separator: "\n"))")
        XCTAssertNotEqual(status, 0, "the launcher ended as if all were well: the unit would not count a failure")
        XCTAssertTrue(run.journal().contains("the browser ended"), "the launcher did not say why it stopped")
        assertNothingLeft(by: run)
    }

    /// Every process's command line, its arguments joined by spaces.
    private func commandLines() -> [(pid: Int32, arguments: String)] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
            guard let pid = Int32(entry), let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
            return (pid, String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self))
        }
    }

    /// Whether `pid` is `ancestor` or one of its descendants (by /proc's parent links).
    private func isDescendant(_ pid: Int32, of ancestor: Int32) -> Bool {
        var current = pid
        for _ in 0..<64 {
            if current == ancestor { return true }
            guard current > 1, let stat = FileManager.default.contents(atPath: "/proc/\(current)/stat"),
                  let text = String(data: stat, encoding: .utf8), let close = text.lastIndex(of: ")") else { return false }
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count > 1, let parent = Int32(fields[1]) else { return false }
            current = parent
        }
        return false
    }
}
