import Foundation
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// Where the daemon keeps recorded turns, as a process: under `--state-dir` unless told
/// otherwise, created with its parents, and never silently in memory only.
final class SpoolPlacementTests: XCTestCase {
    func testStateDirectoryAloneCarriesTheSpool() throws {
        let directory = DaemonHarness.makeDirectory()
        // The state directory's parents do not exist yet either.
        let daemon = try DaemonHarness(arguments: ["--state-dir", "\(directory)/deep/state"], directory: directory, namesSpool: false)
        let status = try daemon.client().request(Command.Status.self)
        XCTAssertEqual(status["session"]?["spool"]?["durable"], true, "\(status)")
        var isDirectory: ObjCBool = false
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(directory)/deep/state/spool/new", isDirectory: &isDirectory) && isDirectory.boolValue)
        XCTAssertFalse(daemon.log.contains("sent from memory only"), daemon.log)
    }

    func testADaemonThatCannotKeepTurnsRefusesToStart() throws {
        let daemon = try DaemonHarness(arguments: ["--spool-dir", "/proc/practiced-cannot-be-here/spool"], waitReady: false)
        let status = try XCTUnwrap(daemon.process.waitForExit(timeout: 20), "the daemon started without a spool")
        XCTAssertEqual(status, 78)
        XCTAssertTrue(daemon.log.contains("spool.dir"), daemon.log)
        XCTAssertTrue(daemon.log.contains("spool.required = false"), daemon.log)
    }

    func testWithoutASpoolWhenToldStatusAndEveryTurnSaySo() throws {
        let daemon = try DaemonHarness(arguments: ["--spool-dir", "/proc/practiced-cannot-be-here/spool", "--spool-required", "false"])
        let spool = try daemon.client().request(Command.Status.self)["session"]?["spool"]
        XCTAssertEqual(spool?["durable"], false)
        XCTAssertFalse(spool?["error"]?.stringValue?.isEmpty ?? true, "\(String(describing: spool))")
    }
}
