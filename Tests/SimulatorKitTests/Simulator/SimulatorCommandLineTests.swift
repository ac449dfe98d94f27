import PracticeKit
import PracticeNet
import SimulatorKit
import XCTest

final class SimulatorCommandLineTests: XCTestCase {
    func testFlagsSetConfigurationAndFaults() throws {
        let options = try SimulatorCommandLine.parse([
            "--port", "0", "--seed", "42", "--fast", "--connecting-ms", "10", "--latency-ms", "5", "--fail-count", "2",
            "--fail-status", "500", "--start-504", "--drop-after-events", "4", "--drip", "16:3", "--malformed-sse",
            "--omit-done", "--odd-chunks", "--review-fails", "--correction-fails", "--no-control", "--burst", "250:300",
        ])
        XCTAssertEqual(options.port, 0)
        XCTAssertFalse(options.controlRoutes)
        let c = options.configuration
        XCTAssertEqual(c.seed, 42)
        XCTAssertEqual(c.pace, 0)
        XCTAssertEqual(c.connectingMs, 10)
        var f = SimulatorFaults()
        f.latencyMs = 5; f.failCount = 2; f.failStatus = 500; f.start504 = true; f.dropAfterEvents = 4
        f.dripBytes = 16; f.dripMs = 3; f.malformedSSE = true; f.omitDone = true; f.oddChunks = true
        f.reviewFails = true; f.correctionFails = true; f.burstMs = 250; f.burstJitterMs = 300
        XCTAssertEqual(c.faults, f)
    }

    func testBadValuesNameTheFlag() {
        for (arguments, fragment) in [(["--port", "70000"], "--port"), (["--pace", "x"], "--pace"), (["--drip", "0:5"], "--drip"),
                                      (["--burst", "0"], "--burst"), (["--burst", "250:x"], "--burst"), (["--burst", "250:1:2"], "--burst"),
                                      (["--fail-status", "200"], "--fail-status"), (["--seed"], "needs a value"), (["--bogus"], "unknown option")] {
            XCTAssertThrowsError(try SimulatorCommandLine.parse(arguments)) { XCTAssertTrue("\($0)".contains(fragment), "\($0)") }
        }
    }

    func testFaultsDecodeFromSnakeCaseWithDefaultsAndRangeChecks() throws {
        let faults = try JSONDecoder().decode(SimulatorFaults.self, from: Data(#"{"drop_after_events": 2, "unknown": 1}"#.utf8))
        XCTAssertEqual(faults.dropAfterEvents, 2)
        XCTAssertEqual(faults.failStatus, 503)
        XCTAssertThrowsError(try JSONDecoder().decode(SimulatorFaults.self, from: Data(#"{"latency_ms": -1}"#.utf8)))
    }

    func testJSONInPythonAndCompactStyles() {
        let value: JSONValue = ["text": "Café 你好 🎉 \"q\"\n", "n": 1, "x": .double(2), "list": [true, .null]]
        XCTAssertEqual(value.serialized(.python), #"{"text": "Caf\u00e9 \u4f60\u597d \ud83c\udf89 \"q\"\n", "n": 1, "x": 2.0, "list": [true, null]}"#)
        XCTAssertEqual(value.serialized(.compact), "{\"text\":\"Café 你好 🎉 \\\"q\\\"\\n\",\"n\":1,\"x\":2.0,\"list\":[true,null]}")
    }
}
