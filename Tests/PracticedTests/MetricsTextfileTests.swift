import Foundation
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// `metrics.textfile` read by the fleet's own tools: Debian's `prometheus-node-exporter`
/// with its textfile collector on the file's directory serves practiced's series, and
/// `promtool check metrics` (Debian's `prometheus`) accepts the text as written.
final class MetricsTextfileTests: XCTestCase {
    /// `command` in sh; its status and its output and errors together.
    private func shell(_ command: String) throws -> (status: Int32, output: String) {
        let result = try DaemonHarness.run("/bin/sh", ["-c", command])
        return (result.status, result.stdout + result.stderr)
    }

    /// The file is written by a timer in another process: there is no event to wait on.
    private func eventually(_ condition: () -> Bool) -> Bool { Poll.until(timeout: 10, condition) }

    func testNodeExporterServesTheDaemonsSeriesAndPromtoolAcceptsThem() throws {
        for tool in ["/usr/bin/prometheus-node-exporter", "/usr/bin/promtool"] {
            XCTAssertTrue(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run .ci/setup")
        }
        let sim = try SimulatorHarness()
        let textfiles = DaemonHarness.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: textfiles) }
        let file = "\(textfiles)/practiced.prom"
        // A link planted where the file goes: the rename replaces the link, never the target.
        let victim = "\(textfiles)/victim"
        try "untouched\n".write(toFile: victim, atomically: true, encoding: .utf8)
        XCTAssertEqual(symlink(victim, file), 0)

        var daemon: DaemonHarness? = try DaemonHarness(backend: sim.baseURL, arguments: ["--metrics-textfile", file, "--metrics-textfile-interval-s", "1"])
        let client = try daemon!.client()
        _ = try client.request(Command.Status.self)
        XCTAssertThrowsError(try client.request("no.such.command"))  // an error reply: practiced_control_errors_total
        XCTAssertTrue(eventually { ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").contains("practiced_control_errors_total{code=") },
                      "the textfile was not written with the error counter:\n\(daemon!.log)")
        var info = stat()
        XCTAssertEqual(lstat(file, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFREG, "the link is replaced by a regular file")
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "untouched\n")

        let check = try shell("promtool check metrics < '\(file)'")
        XCTAssertEqual(check.status, 0, check.output)
        XCTAssertEqual(check.output, "", "promtool check metrics")

        let port = try XCTUnwrap(SimulatorHarness.closedPortURL().port)
        let exporter = try ChildProcess(executable: "/usr/bin/prometheus-node-exporter",
                                        arguments: ["--web.listen-address=127.0.0.1:\(port)", "--collector.disable-defaults", "--collector.textfile",
                                                    "--collector.textfile.directory=\(textfiles)"],
                                        environment: ["PATH": "/usr/bin:/bin"], stderrPath: "\(textfiles)/exporter.log")
        defer { _ = exporter.terminate(signal: SIGKILL) }
        var scraped = ""
        XCTAssertTrue(eventually {
            scraped = (try? RawHTTP.exchange(URL(string: "http://127.0.0.1:\(port)")!, "GET", "/metrics", timeout: 5)).map { String(decoding: $0.body, as: UTF8.self) } ?? ""
            return scraped.contains("practiced_uptime_seconds")
        }, "node_exporter did not serve practiced's series:\n\(scraped)\n\(DaemonHarness.read("\(textfiles)/exporter.log"))")
        for series in ["node_textfile_scrape_error 0", "# TYPE practiced_uptime_seconds gauge", "# TYPE practiced_control_errors_total counter",
                       "practiced_control_requests_total{command=\"status\"", "practiced_device_periods_total{direction=\"capture\"}",
                       "node_textfile_mtime_seconds{file=\"\(file)\"}"] {
            XCTAssertTrue(scraped.contains(series), "\(series) not in node_exporter's /metrics")
        }

        // Stopped, the daemon removes its file (a stale file would be served for ever), and
        // leaves no temporary one behind.
        let process = daemon!.process
        _ = process.terminate(signal: SIGTERM)
        XCTAssertEqual(process.waitForExit(timeout: 10), 0)
        daemon = nil
        XCTAssertFalse(FileManager.default.fileExists(atPath: file))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: textfiles).sorted(), ["exporter.log", "victim"])
    }

    func testAMissingDirectoryIsLoggedOnceAndTheFileWrittenWhenItAppears() throws {
        let parent = DaemonHarness.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let file = "\(parent)/textfiles/practiced.prom"
        let daemon = try DaemonHarness(arguments: ["--metrics-textfile", file, "--metrics-textfile-interval-s", "1"])
        XCTAssertTrue(daemon.waitForLog("metrics textfile not written"), daemon.log)
        // Three intervals at least pass before the directory appears.
        let client = try daemon.client()
        XCTAssertTrue(eventually { ((try? client.request(Command.Status.self))?["uptime_s"]?.doubleValue ?? 0) >= 3.5 })
        XCTAssertEqual(daemon.log.components(separatedBy: "metrics textfile not written").count - 1, 1, "logged once, not every interval:\n\(daemon.log)")
        try FileManager.default.createDirectory(atPath: "\(parent)/textfiles", withIntermediateDirectories: false)
        XCTAssertTrue(eventually { FileManager.default.fileExists(atPath: file) }, daemon.log)
        XCTAssertTrue(daemon.waitForLog("metrics textfile \(file) written again"), daemon.log)

        // An invalid path is a configuration error, not a daemon writing somewhere odd.
        let check = try shell("'\(DaemonHarness.practiced)' --config /dev/null --metrics-textfile /tmp/practiced.txt --check-config")
        XCTAssertEqual(check.status, 78)
        XCTAssertTrue(check.output.contains("invalid metrics.textfile"), check.output)
    }
}
