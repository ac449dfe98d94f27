import Foundation
import PracticeSupport
import XCTest

/// The daemon links FoundationEssentials only; the paths and the number formatting it took
/// from Foundation's NSString bridge it now does itself. Foundation (which the tests still
/// link) is the reference each replacement is checked against.
final class FoundationReplacementTests: XCTestCase {
    func testPathsAreJoinedSplitAndNormalisedAsNSStringDid() {
        for (directory, name) in [("/var/lib/practiced", "volume"), ("/var/lib/practiced/", "user-id"), ("relative", "x")] {
            XCTAssertEqual(FilePaths.join(directory, name), (directory as NSString).appendingPathComponent(name))
        }
        for path in ["/run/practiced/control.sock", "/control.sock", "/a/b/", "relative/file", "file"] {
            XCTAssertEqual(FilePaths.parent(of: path), (path as NSString).deletingLastPathComponent, path)
        }
        for path in ["/var/lib/prometheus/node-exporter/practiced.prom", "/a/b/", "/", "relative/file", "file"] {
            XCTAssertEqual(FilePaths.lastComponent(of: path), (path as NSString).lastPathComponent, path)
        }
        // Lexical normalisation (paths that do not exist, so that NSString resolves nothing).
        for path in ["/nonexistent/a/./b//c", "/nonexistent/a/../../b", "/nonexistent/../../../etc/passwd", "/nonexistent/a/b/.."] {
            XCTAssertEqual(FilePaths.normalized(path), (path as NSString).standardizingPath, path)
        }
        XCTAssertEqual(FilePaths.normalized("/srv/sounds/../../etc/shadow"), "/etc/shadow", "a climb out is seen as one")
        XCTAssertEqual(FilePaths.home(environment: ["HOME": "/home/kiosk"]), "/home/kiosk")
        XCTAssertFalse(FilePaths.home(environment: [:]).isEmpty, "the password database's when $HOME is not set")
    }

    func testNumbersAreFormattedAsFoundationDid() {
        for value in [0.5, 1.0, 1e-7, 12345.678, -3.25, 0.1 + 0.2] {
            for format in ["%g", "%.1f", "%.3f", " (%.1f dB)"] {
                XCTAssertEqual(String.printf(format, value), String(format: format, value), "\(format) of \(value)")
            }
        }
    }
}
