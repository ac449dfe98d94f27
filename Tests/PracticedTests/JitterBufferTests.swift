import Foundation
import PracticeControl
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// The adaptive jitter buffer through the whole kiosk: practice-sim over TCP delivering
/// replies steadily, then in Wi-Fi bursts (one event per 250 ms with 1.0-1.2 × 250 ms of
/// audio, each up to 300 ms late), the daemon as a process, the sound through PulseAudio.
/// Each `reply.finished` reports its underruns and its lead.
final class JitterBufferTests: XCTestCase {
    var rig: KioskRig!

    override func tearDown() {
        rig?.stop()
        rig = nil
    }

    private func converse(turns: Int, variant: Int, control: ControlClient, watcher: EventWatcher) throws {
        for turn in 0..<turns {
            let mark = watcher.count
            let id = try XCTUnwrap(rig.speakHandsFree(ProofRun.speech(seconds: 1, variant: variant + turn), control: control, watcher: watcher))
            XCTAssertNotNil(watcher.outcome(of: id, after: mark, timeout: 40, accepting: ["reply.finished"]), "turn \(turn) unanswered")
            XCTAssertNotNil(watcher.waitForStage("ready", after: mark, timeout: 30))
        }
    }

    func testBurstyWiFiUnderrunsAtMostOncePerReplyAfterTheFirstAndASteadyBackendStartsWithinItsLeadAndAPeriod() throws {
        rig = try KioskRig { $0.pace = 1 }
        let watcher = try rig.watcher()
        let control = try rig.daemon.client()

        // A steady backend: the greeting and two turns start at the 50 ms lead.
        var mark = watcher.count
        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel"])
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark, timeout: 30))
        try converse(turns: 2, variant: 0, control: control, watcher: watcher)
        let steady = watcher.all(Event.ReplyFinished.self, after: mark)
        XCTAssertEqual(steady.count, 3)
        var expectedLead = 50
        for reply in steady {
            XCTAssertEqual(reply["underruns"]?.intValue, 0, "\(reply)")
            // The greeting starts at the configured 50 ms. Each later reply starts with the lead
            // the one before it handed on: its latest chunk's lateness and two periods, never
            // below 50. On a loaded machine a steady backend's chunk can still come 35 ms late
            // (a clean clone's CI run saw 55 ms), so the rule is asserted, not a constant.
            let lead = try XCTUnwrap(reply["lead_ms"]?.intValue, "\(reply)")
            XCTAssertEqual(lead, expectedLead, "the lead a steady reply starts with is the one handed on: \(reply)")
            let next = try XCTUnwrap(reply["next_lead_ms"]?.intValue, "\(reply)")
            XCTAssertTrue((50...120).contains(next), "a steady backend's reply hands on at most 120 ms: \(reply)")
            expectedLead = next
            // The lead, the device's 10 ms period, and 5 ms for the scheduler: a clean clone's
            // CI run saw 60.2 and 61.4 ms against a bound of exactly 60 (the lead and a period,
            // no slack), on code that does not touch this path.
            let firstSound = try XCTUnwrap(reply["first_audio_to_sound_ms"]?.doubleValue)
            XCTAssertLessThanOrEqual(firstSound, Double(lead) + 15, "first audio → sound on a steady backend")
        }

        // Wi-Fi in bursts, from the next reply on.
        rig.sim.simulator.faults.burstMs = 250
        rig.sim.simulator.faults.burstJitterMs = 300
        mark = watcher.count
        try converse(turns: 6, variant: 2, control: control, watcher: watcher)
        let bursty = watcher.all(Event.ReplyFinished.self, after: mark)
        XCTAssertEqual(bursty.count, 6)
        for (i, reply) in bursty.enumerated() {
            let underruns = reply["underruns"]?.intValue ?? -1
            ProofRun.report("bursty reply \(i + 1): \(underruns) underruns, lead \(reply["lead_ms"]?.intValue ?? -1) ms → \(reply["next_lead_ms"]?.intValue ?? -1) ms")
            if i > 0 { XCTAssertLessThanOrEqual(underruns, 1, "reply \(i + 1) of the bursty network") }
            XCTAssertNotNil(reply["lead_ms"]?.intValue)
            XCTAssertNotNil(reply["next_lead_ms"]?.intValue)
        }
        XCTAssertGreaterThan(bursty.compactMap { $0["next_lead_ms"]?.intValue }.max() ?? 0, 50, "the lead never grew")
    }
}
