import AudioKernel
import XCTest

/// The jitter buffer's rules as a table: no device, no clock, only what was played.
/// At 24 kHz mono a millisecond is 24 samples; the defaults are a 50 ms floor, a 500 ms
/// ceiling, a 200 ms step and 4 ms of decay per second played.
final class JitterLeadTests: XCTestCase {
    private let ms = 24

    private func lead() -> JitterLead { JitterLead(configuration: StreamingPlayerConfiguration(), samplesPerMillisecond: 24) }

    func testAnUnderrunDoublesTheLeadOrCoversTheGapAndAStepWhicheverIsMore() {
        // (lead before, gap) → lead after, in ms.
        let table: [(before: Int, gap: Int, after: Int)] = [
            (50, 10, 210),    // gap + step (210) beats double (100)
            (50, 0, 200),     // a gap of nothing still grows by the step
            (220, 10, 440),   // double (440) beats gap + step (210)
            (220, 290, 490),  // gap + step
            (300, 40, 500),   // double (600) held at the ceiling
            (50, 400, 500),   // gap + step (600) held at the ceiling
        ]
        for row in table {
            var lead = lead()
            if row.before > 50 { lead.replyFinished(peakDelay: row.before * ms - 2 * lead.margin) }
            XCTAssertEqual(lead.milliseconds(lead.target), row.before, "set-up of \(row)")
            lead.grow(afterGap: row.gap * ms)
            XCTAssertEqual(lead.milliseconds(lead.target), row.after, "\(row)")
        }
    }

    func testSteadyPlaybackTakesFourMillisecondsASecondBackDownToTheFloor() {
        var lead = lead()
        lead.grow(afterGap: 10 * ms)  // 210 ms
        // (seconds played since, lead in ms)
        let table: [(seconds: Double, lead: Int)] = [(0.5, 210), (1, 206), (10, 170), (40, 50), (100, 50)]
        var played = 0.0
        for row in table {
            // Played in 10 ms periods, as a device takes them.
            while played < row.seconds - 1e-9 {
                lead.playedSteadily(10 * ms)
                played += 0.01
            }
            XCTAssertEqual(lead.milliseconds(lead.target), row.lead, "after \(row.seconds) s")
        }
    }

    func testAnUnderrunRestartsTheSteadyCount() {
        var lead = lead()
        lead.grow(afterGap: 10 * ms)
        lead.playedSteadily(900 * ms)
        lead.underran()
        lead.playedSteadily(900 * ms)
        XCTAssertEqual(lead.milliseconds(lead.target), 210, "0.9 s and 0.9 s with an underrun between are no steady second")
        lead.playedSteadily(100 * ms)
        XCTAssertEqual(lead.milliseconds(lead.target), 206)
    }

    func testAReplysWorstLatenessSetsTheNextLeadWithTwoPeriodsOfMargin() {
        // (lead before, the reply's worst lateness) → lead after, in ms: it only grows.
        let table: [(before: Int, late: Int, after: Int)] = [(50, 0, 50), (50, 29, 50), (50, 31, 51), (50, 120, 140), (200, 120, 200), (50, 900, 500)]
        for row in table {
            var lead = lead()
            if row.before > 50 { lead.grow(afterGap: (row.before - 200) * ms) }
            XCTAssertEqual(lead.milliseconds(lead.target), row.before, "set-up of \(row)")
            lead.replyFinished(peakDelay: row.late * ms)
            XCTAssertEqual(lead.milliseconds(lead.target), row.after, "\(row)")
        }
    }

    func testAFloorAboveTheCeilingIsTheCeilingAndStereoCountsBothChannels() {
        var configuration = StreamingPlayerConfiguration()
        configuration.prebufferMilliseconds = 600
        let high = JitterLead(configuration: configuration, samplesPerMillisecond: 24)
        XCTAssertEqual(high.maximum, high.minimum, "the ceiling is never under the floor")
        let stereo = JitterLead(configuration: StreamingPlayerConfiguration(), samplesPerMillisecond: 96)  // 48 kHz stereo
        XCTAssertEqual(stereo.target, 50 * 96)
        XCTAssertEqual(stereo.milliseconds(stereo.target), 50)
    }
}
