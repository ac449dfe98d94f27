@testable import PracticeKit
import XCTest

/// `speech.barge_in_echo_loss_db` sets the level speech over the tutor must reach: a value
/// outside 0–60 dB, or not a number, would silence barge-in or let the echo through.
final class BargeInEchoLossKeyTests: XCTestCase {
    func testOnlyDecibelsFrom0To60AreTakenAndReachTheRecorder() throws {
        let key = try XCTUnwrap(ConfigurationKey.all.first { $0.name == "speech.barge_in_echo_loss_db" })
        for hostile in ["nan", "NaN", "inf", "-inf", "-1", "60.5", "1e309", "", " 12", "12dB", "<b>12</b>"] {
            var configuration = DaemonConfiguration(environment: [:])
            XCTAssertFalse(key.apply(&configuration, hostile), "'\(hostile)' was taken")
            XCTAssertEqual(configuration.bargeInEchoLossDecibels, 12, "'\(hostile)' changed the setting")
        }
        for (text, value) in [("0", 0.0), ("10", 10), ("12.5", 12.5), ("60", 60)] {
            var configuration = DaemonConfiguration(environment: [:])
            XCTAssertTrue(key.apply(&configuration, text), text)
            XCTAssertEqual(configuration.recorder.detector.bargeInEchoLossDecibels, value, text)
        }
    }
}
