import AudioKernel
import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport
import XCTest

/// Hearing the tutor again, slower (issue 69), with every part real (``KioskRig``): the
/// release daemon, PulseAudio headless (or PipeWire), practice-sim over TCP, the speaker's
/// monitor heard by the rig.
final class ReplayTests: XCTestCase {
    var rig: KioskRig!

    override func tearDown() {
        rig?.stop()
        rig = nil
    }

    /// The greeting is heard, then heard again at 0.75: the replay sounds at once (its first
    /// piece is stretched in a millisecond and it waits for no jitter lead), lasts 4/3 as
    /// long, and sounds as loud as often as the greeting did, stretched.
    func testTheGreetingPlaysAgainSlowerOnTheSpeaker() throws {
        rig = try KioskRig()
        let watcher = try rig.watcher()
        let control = try rig.daemon.client()
        XCTAssertEqual(control.failure(Command.ReplyReplay.self)?.code, .invalidState, "no session, nothing to replay")
        let loudBefore = rig.loudSamples
        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel", "mode": "conversation"])
        let greeted = try XCTUnwrap(watcher.wait(for: Event.ReplyFinished.self, where: { $0["greeting"] == true }))
        let greetingBytes = try XCTUnwrap(greeted["data"]?["audio_bytes"]?.intValue)
        XCTAssertNotNil(watcher.waitForStage("ready"))
        // The monitor's last samples of the greeting arrive after reply.finished.
        XCTAssertTrue(rig.heard.wait(timeout: 5) { $0.loud - loudBefore > 24_000 })
        let greetingLoud = rig.loudSamples - loudBefore
        let onsetsBefore = rig.soundOnsets.value.count

        let mark = watcher.count
        let asked = DispatchTime.now().uptimeNanoseconds
        let replay = try control.request(Command.ReplyReplay.self, ["rate": .double(0.75)])
        XCTAssertEqual(replay["rate"], .double(0.75))
        XCTAssertEqual(replay["greeting"], true)
        let expected = Double(greetingBytes) / 48_000 / 0.75
        XCTAssertEqual(try XCTUnwrap(replay["duration_s"]?.doubleValue), expected, accuracy: 0.01)
        XCTAssertNotNil(watcher.wait(for: Event.ReplyReplaying.self, after: mark))
        XCTAssertTrue(rig.soundOnsets.wait(timeout: 5) { $0.count > onsetsBefore }, "the replay was not heard")
        let onset = rig.soundOnsets.value[onsetsBefore]
        let latency = Double(onset - asked) / 1e6
        print("figures: reply.replay at 0.75 → first loud period on the speaker's monitor \(String(format: "%.1f", latency)) ms")
        let finished = try XCTUnwrap(watcher.wait(for: Event.ReplyReplayFinished.self, after: mark, timeout: 30))
        XCTAssertEqual(finished["data"]?["interrupted"], false)
        XCTAssertEqual(finished["data"]?["sound"], replay["sound"])
        XCTAssertEqual(try XCTUnwrap(finished["data"]?["played_s"]?.doubleValue), expected, accuracy: 0.1)
        XCTAssertTrue(rig.heard.wait(timeout: 5) { Double($0.loud - loudBefore - greetingLoud) > Double(greetingLoud) / 0.75 * 0.85 })
        let replayLoud = rig.loudSamples - loudBefore - greetingLoud
        print("figures: loud samples on the monitor: greeting \(greetingLoud), its replay at 0.75 \(replayLoud) (× \(String(format: "%.2f", Double(replayLoud) / Double(greetingLoud))))")
        XCTAssertEqual(Double(replayLoud) / Double(greetingLoud), 1 / 0.75, accuracy: 0.15)
        XCTAssertFalse(watcher.names(after: mark).contains(Event.SessionStage.name), "a replay leaves the stage as it was (ready)")
        // The command plays the first sample within a period or two of the device, plus the
        // monitor's period: well under the lead a streamed reply waits for.
        XCTAssertLessThan(latency, 500)
    }

    /// A replay gives way as a reply does: to `turn.start` (the recording is the learner's,
    /// the replay told interrupted), to `playback.stop`; in a recording it is refused; a bad
    /// rate is refused by name; the daemon stays whole.
    func testAReplayStopsForATurnAndPlaybackStopAndBadRatesAreRefused() throws {
        rig = try KioskRig()
        let watcher = try rig.watcher()
        let control = try rig.daemon.client()
        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel", "mode": "conversation"])
        XCTAssertNotNil(watcher.wait(for: Event.ReplyFinished.self, where: { $0["greeting"] == true }))
        XCTAssertNotNil(watcher.waitForStage("ready"))

        for rate: JSONValue in [0, -1, 10, .double(1e308), .double(0.49), "slow", true] {
            let error = control.failure(Command.ReplyReplay.self, ["rate": rate])
            XCTAssertEqual(error?.code, .badArguments, "\(rate)")
        }
        XCTAssertEqual(try control.request(Command.Ping.self)["pong"], true)

        var mark = watcher.count
        let first = try control.request(Command.ReplyReplay.self, ["rate": .double(0.5)])
        XCTAssertNotNil(watcher.wait(for: Event.ReplyReplaying.self, after: mark))
        _ = try control.request(Command.TurnStart.self)
        let stopped = try XCTUnwrap(watcher.wait(for: Event.ReplyReplayFinished.self, after: mark))
        XCTAssertEqual(stopped["data"]?["interrupted"], true)
        XCTAssertEqual(stopped["data"]?["sound"], first["sound"])
        XCTAssertNotNil(watcher.waitForStage("recording", after: mark))
        let refused = control.failure(Command.ReplyReplay.self)
        XCTAssertEqual(refused?.code, .invalidState, "a replay over the learner's own turn")
        _ = try control.request(Command.TurnCancel.self)
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark))

        mark = watcher.count
        _ = try control.request(Command.ReplyReplay.self)
        XCTAssertNotNil(watcher.wait(for: Event.ReplyReplaying.self, after: mark))
        XCTAssertEqual(try control.request(Command.PlaybackStop.self)["stopped"], true)
        let stoppedAgain = try XCTUnwrap(watcher.wait(for: Event.ReplyReplayFinished.self, after: mark))
        XCTAssertEqual(stoppedAgain["data"]?["interrupted"], true)
        // Twice in a row: the first gives way to the second, one of each end told.
        mark = watcher.count
        let a = try control.request(Command.ReplyReplay.self, ["rate": .double(2.0)])
        let b = try control.request(Command.ReplyReplay.self, ["rate": .double(2.0)])
        XCTAssertNotEqual(a["sound"], b["sound"])
        let ends = { watcher.all(Event.ReplyReplayFinished.self, after: mark) }
        XCTAssertTrue(Poll.until(timeout: 20) { ends().count == 2 })
        XCTAssertEqual(ends().map { $0["interrupted"] ?? .null }, [true, false])
        XCTAssertEqual(ends().map { $0["sound"] ?? .null }, [a["sound"] ?? .null, b["sound"] ?? .null])
    }

    /// "Hear me": the learner's push-to-talk turn plays on the speaker as it was sent (as
    /// many loud samples on the monitor as in the turn practice-sim received); in a new
    /// session neither it nor the last learner's turn still pending in the spool can be
    /// played; hostile arguments are refused by name.
    func testTheLearnersOwnTurnIsHeardAndNoOtherSessionsTurnIs() throws {
        rig = try KioskRig(arguments: ["--turn-retry-s", "2"])
        let watcher = try rig.watcher()
        let control = try rig.daemon.client()
        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel", "mode": "conversation"])
        XCTAssertNotNil(watcher.wait(for: Event.ReplyFinished.self, where: { $0["greeting"] == true }))
        XCTAssertNotNil(watcher.waitForStage("ready"))
        XCTAssertEqual(control.failure(Command.TurnReplay.self)?.code, .invalidState, "no turn yet")

        var mark = watcher.count
        try rig.pushToTalk(control)
        let id = try XCTUnwrap(watcher.wait(for: Event.TurnSpooled.self, after: mark)?["data"]?["turn_id"]?.stringValue)
        XCTAssertNotNil(watcher.wait(for: Event.ReplyFinished.self, after: mark, timeout: 30))
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark))
        let sent = try WAVDecoder.decode(try XCTUnwrap(rig.sim.simulator.lastTurnAudio)).samples
        let sentLoud = sent.reduce(0) { $0 + (abs(Int($1)) > 500 ? 1 : 0) }

        let loudBefore = rig.loudSamples
        mark = watcher.count
        let played = try control.request(Command.TurnReplay.self)
        XCTAssertEqual(played["turn_id"]?.stringValue, id)
        XCTAssertEqual(played["rate"], .double(1))
        XCTAssertEqual(try XCTUnwrap(played["duration_s"]?.doubleValue), Double(sent.count) / 24_000, accuracy: 0.01)
        XCTAssertEqual(try XCTUnwrap(watcher.wait(for: Event.TurnReplaying.self, after: mark))["data"]?["turn_id"]?.stringValue, id)
        let finished = try XCTUnwrap(watcher.wait(for: Event.TurnReplayFinished.self, after: mark, timeout: 30))
        XCTAssertEqual(finished["data"]?["interrupted"], false)
        XCTAssertTrue(rig.heard.wait(timeout: 5) { $0.loud - loudBefore >= sentLoud * 9 / 10 })
        print("figures: hear me: \(sentLoud) loud samples in the turn sent, \(rig.loudSamples - loudBefore) on the speaker's monitor")
        XCTAssertEqual(Double(rig.loudSamples - loudBefore), Double(sentLoud), accuracy: Double(sentLoud) * 0.1)
        for args: JSONValue in [["rate": 0], ["rate": "slow"], ["rate": .double(2.5)], ["turn_id": "../../etc/passwd"], ["turn_id": 7],
                                ["turn_id": .string(String(repeating: "a", count: 10_000))]] {
            XCTAssertEqual(control.failure(Command.TurnReplay.self, args)?.code, .badArguments, "\(args)")
        }

        // A turn left pending in the spool (the backend away), then a new learner's session.
        rig.sim.goDown()
        mark = watcher.count
        try rig.pushToTalk(control)
        let pending = try XCTUnwrap(watcher.wait(for: Event.TurnPending.self, after: mark, timeout: 40)?["data"]?["turn_id"]?.stringValue)
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark))
        XCTAssertEqual(try control.request(Command.TurnReplay.self, ["turn_id": .string(pending)])["turn_id"]?.stringValue, pending,
                       "the learner hears a turn not yet delivered")
        _ = try control.request(Command.SessionClose.self)
        try rig.sim.comeBack()
        mark = watcher.count
        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel", "mode": "conversation"])
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark, timeout: 30))
        XCTAssertEqual(try control.request(Command.SpoolList.self)["turns"]?.arrayValue?.map { $0["id"]?.stringValue }, [pending])
        for other in [id, pending] {
            let refused = control.failure(Command.TurnReplay.self, ["turn_id": .string(other)])
            XCTAssertEqual(refused?.code, .badArguments, "the last session's turn \(other)")
            XCTAssertEqual(refused?.message, "no turn '\(other)' in this session")
        }
        XCTAssertEqual(control.failure(Command.TurnReplay.self)?.code, .invalidState, "the new session has no turn of its own yet")
        XCTAssertEqual(try control.request(Command.Ping.self)["pong"], true)
    }

    /// `playback.rate 0.75`: the next reply streams slower, whole; status and the snapshot
    /// carry it; a bad rate is refused; the visit's end sets it back to 1.0 for the next
    /// learner.
    func testThePlaybackRateSlowsTheNextReplyAndTheVisitsEndResetsIt() throws {
        rig = try KioskRig()
        let watcher = try rig.watcher(topics: ["session", "playback", "visit"])
        let control = try rig.daemon.client()
        XCTAssertEqual(try control.request(Command.PlaybackRate.self)["rate"], .double(1))
        for rate: JSONValue in [0, .double(-0.5), .double(2.5), .double(1e308), "fast"] {
            XCTAssertEqual(control.failure(Command.PlaybackRate.self, ["rate": rate])?.code, .badArguments, "\(rate)")
        }
        _ = try control.request(Command.VisitTouch.self)
        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel", "mode": "conversation"])
        XCTAssertNotNil(watcher.wait(for: Event.ReplyFinished.self, where: { $0["greeting"] == true }))
        XCTAssertNotNil(watcher.waitForStage("ready"))

        var mark = watcher.count
        XCTAssertEqual(try control.request(Command.PlaybackRate.self, ["rate": .double(0.75)])["rate"], .double(0.75))
        XCTAssertEqual(try XCTUnwrap(watcher.wait(for: Event.PlaybackRateChanged.self, after: mark))["data"]?["rate"], .double(0.75))
        XCTAssertEqual(try control.request(Command.Status.self)["playback"]?["rate"], .double(0.75))
        mark = watcher.count
        _ = try control.request(Command.Say.self, ["text": "I went to Paris last summer"])
        let reply = try XCTUnwrap(watcher.wait(for: Event.ReplyFinished.self, after: mark, timeout: 30))
        XCTAssertEqual(reply["data"]?["interrupted"], false)
        let bytes = try XCTUnwrap(reply["data"]?["audio_bytes"]?.intValue)
        let played = try XCTUnwrap(reply["data"]?["played_s"]?.doubleValue)
        print("figures: a reply of \(Double(bytes) / 48_000) s played in \(played) s at playback.rate 0.75")
        XCTAssertEqual(played, Double(bytes) / 48_000 / 0.75, accuracy: 0.15)
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark))

        mark = watcher.count
        _ = try control.request(Command.VisitEnd.self)
        XCTAssertNotNil(watcher.wait(for: Event.VisitEnded.self, after: mark, timeout: 30))
        XCTAssertEqual(try XCTUnwrap(watcher.wait(for: Event.PlaybackRateChanged.self, after: mark))["data"]?["rate"], .double(1))
        XCTAssertEqual(try control.request(Command.PlaybackRate.self)["rate"], .double(1))
    }
}
