import Foundation
import TestSupport
import XCTest

/// The learner UI's state functions (js/conversation-state.js, js/cues/answer-state.js) under Node's
/// own test runner (Debian's `nodejs`, no npm): `Tests/kiosk-ui/*.test.mjs` feed them a
/// conversation's recorded events and cases built by hand, without a browser. Here so that the
/// suite's one command runs them too.
final class KioskUIStateTests: XCTestCase {
    func testTheUIsStateUnderNodesTestRunner() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        // A failure's output is in the thrown error (ToolError names the command and its stderr).
        let output = try runTool("node", ["--experimental-default-type=module", "--test", "--test-reporter=tap",
                                          root.appendingPathComponent("Tests/kiosk-ui").path], timeout: 120)
        let count = { (label: String) in output.firstMatch(of: try! Regex("# \(label) ([0-9]+)"))?.output[1].substring.flatMap { Int($0) } }
        XCTAssertEqual(count("fail"), 0, output)
        XCTAssertGreaterThanOrEqual(count("pass") ?? 0, 22, "fewer state tests ran than there are: \(output)")
    }
}
