import Foundation
import PracticeKit
import TestSupport
import XCTest

/// The launcher with `--browser cog` as the unit runs it: cage headless (wlroots with the
/// pixman renderer), cog on the launch page read through its kiosk: scheme, the bridge, the
/// daemon as a process. The page must come up and talk to the daemon through the bridge, in
/// one web process, with the token on no command line and in none of the launcher's output,
/// and a SIGTERM to the launcher must leave no process and no folder behind.
final class KioskCogLauncherTests: XCTestCase {
    func testCogShowsThePageInOneWebProcessWithTheTokenNowhereAndStopsClean() throws {
        // cage will not run as root: the launcher runs as nobody (65534), as the unit runs it as
        // practiced-ui, a member of the socket's group. Its UI and the bridge are copied where
        // that user can read them (CI's clone may be a folder it cannot enter).
        let daemon = try DaemonHarness(arguments: ["--socket-group", "nogroup"])
        let ui = "\(daemon.directory)/ui", bridge = "\(daemon.directory)/practiced-kiosk-bridge"
        try FileManager.default.copyItem(atPath: KioskUITests.uiDirectory, toPath: ui)
        try FileManager.default.copyItem(atPath: ShippedBinaries.path(of: "practiced-kiosk-bridge"), toPath: bridge)
        let runtime = "\(daemon.directory)/xdg"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        XCTAssertEqual(chown(runtime, 65534, 65534), 0)
        let output = "\(daemon.directory)/launcher.out", errors = "\(daemon.directory)/launcher.err"
        let port = try WebDriver.freePort()
        let launcher = try ChildProcess(executable: "/usr/bin/setpriv", arguments: [
            "--reuid=65534", "--regid=65534", "--clear-groups",
            "/bin/bash", "\(ui)/practiced-kiosk-ui", "--browser", "cog", "--port", "\(port)", "--socket", daemon.socketPath, "--ui", ui,
        ], environment: [
            "PATH": "/usr/bin:/bin", "HOME": runtime, "XDG_RUNTIME_DIR": runtime,
            "WLR_BACKENDS": "headless", "WLR_LIBINPUT_NO_DEVICES": "1", "WLR_RENDERER": "pixman", "PRACTICED_KIOSK_BRIDGE": bridge,
        ], stdoutPath: output, stderrPath: errors)
        // What the unit sends to the journal: cog's log (through the launcher's filter) and the bridge's.
        func journal() -> String { DaemonHarness.read(output) + DaemonHarness.read(errors) }
        var stopped = false
        defer { if !stopped { launcher.terminate(signal: SIGKILL) } }
        let folder = "\(runtime)/practiced-kiosk-ui.65534"

        // The page ran its script: it opened the WebSocket through the bridge, said hello,
        // subscribed and asked for the daemon's status (the daemon counts the requests it
        // answers by command; this test's own client asks only for the metrics).
        let client = try daemon.client()
        let deadline = Date().addingTimeInterval(60)
        var asked = 0.0
        while asked < 1 && Date() < deadline && launcher.isRunning {
            let metrics = try client.request("metrics")["text"]?.stringValue ?? ""
            asked = metrics.split(separator: "\n").first { $0.hasPrefix("practiced_control_requests_total{command=\"status\"}") }
                .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            if asked < 1 { usleep(200_000) }
        }
        XCTAssertGreaterThanOrEqual(asked, 1, "the page never asked for the status: \(journal())")
        XCTAssertTrue(journal().contains("WebSocket open"), journal())

        // The token: in the launch page only.
        let page = DaemonHarness.read("\(folder)/launch.html")
        let token = try XCTUnwrap(page.firstMatch(of: /token=([0-9a-f]{64})/).map { String($0.1) }, page)
        var webProcesses = 0
        for (pid, arguments) in commandLines() {
            XCTAssertFalse(arguments.contains(token), "the token is on a command line: \(arguments)")
            if arguments.hasPrefix("/usr/lib/x86_64-linux-gnu/wpe-webkit") && arguments.contains("WPEWebProcess"),
               isDescendant(pid, of: launcher.pid) {
                webProcesses += 1
            }
        }
        XCTAssertEqual(webProcesses, 1, "the launch page and the UI in one web process")
        XCTAssertFalse(journal().contains(token), "the token reached the launcher's output (the journal)")
        XCTAssertTrue(journal().contains("token=(hidden)"), "cog's log of the address, token blotted out")

        // SIGTERM: the launcher ends cog, cage and the bridge, and removes its folder.
        launcher.terminate(signal: SIGTERM)
        XCTAssertNotNil(launcher.waitForExit(timeout: 30), "the launcher did not end on SIGTERM")
        stopped = true
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder), "the run's folder outlived the launcher")
        let left = commandLines().map(\.arguments).filter { $0.contains(folder) || $0.contains("--listen 127.0.0.1:\(port)") }
        XCTAssertEqual(left, [], "processes of the launcher's outlived it")
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
