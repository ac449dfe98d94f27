import Foundation
import PracticeControl
import PracticeKit
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// One stranger after another: the daemon as a real process, practice-sim and the Chatterbox
/// simulator over real TCP, its clients on the control socket. Idle times are shortened
/// (a warning after 2 s, the reset 5 s later).
final class VisitTests: XCTestCase {
    private static let quick = ["--kiosk-idle-warning-s", "2", "--kiosk-idle-reset-s", "5"]

    private func watch(_ daemon: DaemonHarness) throws -> EventWatcher {
        try EventWatcher(client: daemon.client(), topics: ["visit", "session"])
    }

    /// The session a visit created at practice-sim, and who it was created for.
    private func learner(of watcher: EventWatcher, after index: Int, _ sim: SimulatorHarness) throws -> (userID: String, userName: String?) {
        let created = try XCTUnwrap(watcher.wait(for: Event.SessionCreated.self, after: index))
        let id = try XCTUnwrap(created["data"]?["session_id"]?.stringValue)
        return try XCTUnwrap(sim.simulator.learner(ofSession: id))
    }

    /// Two learners in a row on a shared kiosk: the first walks away mid-conversation, is
    /// warned, and reset; the second is a new learner to TalkCo (a new user id, no name, an
    /// empty profile) and the daemon keeps nothing of the first.
    func testASharedKioskForgetsALearnerWhoWalksAwayAndTheNextIsANewOne() throws {
        let sim = try SimulatorHarness()
        let daemon = try DaemonHarness(backend: sim.baseURL, arguments: Self.quick + ["--user-name", "Mei"])
        let control = try daemon.client()
        let watcher = try watch(daemon)
        XCTAssertEqual(try control.request(Command.Status.self)["visit"]?["phase"], "none", "nobody at the kiosk yet")

        // The first learner touches the attract screen, talks, and walks away.
        let touched = try control.request(Command.VisitTouch.self)
        XCTAssertEqual(touched["phase"], "active")
        XCTAssertEqual(touched["identity"], "shared")
        let firstVisit = try XCTUnwrap(touched["visit_id"]?.stringValue)
        XCTAssertNotNil(watcher.wait(for: Event.VisitStarted.self))
        _ = try control.request(Command.SessionStart.self, ["mode": "conversation", "topic_id": "travel"], timeout: 20)
        let first = try learner(of: watcher, after: 0, sim)
        XCTAssertNil(first.userName, "a shared kiosk sends no configured name")
        XCTAssertNotNil(watcher.waitForStage("ready", timeout: 30))
        _ = try control.request(Command.Say.self, ["text": "I like to cook dumplings with my grandmother"])
        XCTAssertNotNil(watcher.waitForStage("ready", after: watcher.count, timeout: 30))
        let profile = try control.request(Command.Profile.self, ["action": "get"])
        XCTAssertEqual(profile["profile"]?["user_id"]?.stringValue, first.userID)

        // Nobody touches or speaks: warned after 2 s, reset 5 s later.
        let warned = try XCTUnwrap(watcher.wait(for: Event.IdleWarning.self, timeout: 15))
        XCTAssertEqual(warned["data"]?["seconds_left"], .double(5))
        XCTAssertEqual(try control.request(Command.Status.self)["visit"]?["phase"], "warning")
        let ended = try XCTUnwrap(watcher.wait(for: Event.VisitEnded.self, timeout: 20))
        XCTAssertEqual(ended["data"]?["reason"], "idle")
        XCTAssertEqual(ended["data"]?["visit_id"]?.stringValue, firstVisit)
        XCTAssertNotNil(watcher.waitForStage("idle"), "the conversation left the kiosk")
        XCTAssertTrue(Poll.until(timeout: 10) { !sim.requests("DELETE", containing: "/sessions/").isEmpty },
                      "the conversation was ended at the backend as session.end ends it")
        let status = try control.request(Command.Status.self)
        XCTAssertEqual(status["visit"]?["phase"], "none")
        XCTAssertEqual(status["session"]?["stage"], "idle")
        XCTAssertNotEqual(status["user_id"]?.stringValue, first.userID, "the next learner is not the last one")
        XCTAssertEqual(KioskPageChecks.files(under: daemon.directory + "/state", holding: "dumplings", except: []), [], "a file of the daemon keeps the learner's words")
        XCTAssertFalse(FileManager.default.fileExists(atPath: daemon.directory + "/state/cache/\(first.userID)"), "the first learner's profile is still kept")

        // The second learner: a new TalkCo user, whose profile is empty.
        let index = watcher.count
        let second = try control.request(Command.VisitTouch.self)
        XCTAssertNotEqual(second["visit_id"]?.stringValue, firstVisit)
        _ = try control.request(Command.SessionStart.self, ["mode": "conversation", "topic_id": "food_dining"], timeout: 20)
        let next = try learner(of: watcher, after: index, sim)
        XCTAssertNotEqual(next.userID, first.userID)
        XCTAssertEqual(next.userID.count, 9)
        let fresh = try control.request(Command.Profile.self, ["action": "get"])
        XCTAssertEqual(fresh["profile"]?["user_id"]?.stringValue, next.userID)
        XCTAssertEqual(fresh["profile"]?["profile_data"]?["personal_facts"], .array([]), "the second learner sees nothing of the first")

        let metrics = try XCTUnwrap(try control.request(Command.Metrics.self)["text"]?.stringValue)
        XCTAssertTrue(metrics.contains("practiced_visits_total{ended=\"idle\"} 1"), metrics)
        XCTAssertTrue(metrics.contains("practiced_idle_warnings_total{outcome=\"reset\"} 1"), metrics)
        XCTAssertTrue(metrics.contains("practiced_visit_active 1"), metrics)
        XCTAssertTrue(metrics.contains("practiced_visit_seconds_count 1"), metrics)
    }

    /// "I'm done" while a (typed) turn is being delivered: the turn reaches the backend exactly
    /// once, its reply plays to nobody, and only then is the visit over. A spoken one, through
    /// the UI: KioskUITests.testTwoLearnersInARow.
    func testAVisitEndedDuringAnUploadDeliversTheTurnOnce() throws {
        let sim = try SimulatorHarness()
        let daemon = try DaemonHarness(backend: sim.baseURL)
        let control = try daemon.client()
        let watcher = try watch(daemon)
        _ = try control.request(Command.VisitTouch.self)
        _ = try control.request(Command.SessionStart.self, ["mode": "conversation", "topic_id": "travel"], timeout: 20)
        XCTAssertNotNil(watcher.waitForStage("ready", timeout: 30))
        // The backend takes 1.5 s to answer the turn.
        sim.simulator.faults.latencyMs = 1_500
        let chats = sim.requests("POST", containing: "/chat").count
        _ = try control.request(Command.Say.self, ["text": "one last thing"])
        XCTAssertNotNil(watcher.waitForStage("uploading", after: 0))
        XCTAssertEqual(try control.request(Command.VisitEnd.self)["phase"], "ending", "the end waits for the turn on its way")
        XCTAssertEqual(control.failure(Command.VisitTouch.self)?.retryable, true, "the next learner waits for the last visit's end")
        let ended = try XCTUnwrap(watcher.wait(for: Event.VisitEnded.self, timeout: 30))
        XCTAssertEqual(ended["data"]?["reason"], "done")
        let stages = watcher.all(Event.SessionStage.self).compactMap { $0["stage"]?.stringValue }
        XCTAssertEqual(Array(stages.drop { $0 != "uploading" }.prefix(3)), ["uploading", "replying", "idle"], "delivered, then closed")
        sim.simulator.faults.latencyMs = 0
        XCTAssertEqual(sim.requests("POST", containing: "/chat").count, chats + 1, "the turn reached the backend exactly once")
        XCTAssertEqual(try control.request(Command.SpoolList.self)["turns"], .array([]), "nothing left in the spool")
    }

    /// The end of a visit in the middle of things: during the greeting (its sound stops and
    /// the session closes), during a push-to-talk recording (dropped: the learner said they
    /// were done; nothing is uploaded), and "I'm done" twice at once (one end).
    func testAVisitEndsCleanlyDuringAReplyAndARecording() throws {
        let sim = try SimulatorHarness()
        let daemon = try DaemonHarness(backend: sim.baseURL)
        let control = try daemon.client()
        let watcher = try EventWatcher(client: daemon.client(), topics: ["visit", "session", "playback"])
        _ = try control.request(Command.SessionStart.self, ["mode": "conversation", "topic_id": "travel"], timeout: 20)
        XCTAssertNotNil(watcher.wait(for: Event.PlaybackStarted.self, timeout: 20), "the greeting plays")
        _ = try control.request(Command.VisitEnd.self)
        XCTAssertNotNil(watcher.wait(for: Event.VisitEnded.self))
        XCTAssertNotNil(watcher.wait(for: Event.PlaybackFinished.self, where: { $0["interrupted"] == true }), "the greeting was cut off")
        XCTAssertEqual(try control.request(Command.Status.self)["session"]?["stage"], "idle")

        let index = watcher.count
        _ = try control.request(Command.SessionStart.self, ["mode": "conversation", "topic_id": "travel"], timeout: 20)
        XCTAssertNotNil(watcher.waitForStage("ready", after: index, timeout: 30))
        _ = try control.request(Command.TurnStart.self)
        XCTAssertNotNil(watcher.waitForStage("recording", after: index))
        let chats = sim.requests("POST", containing: "/chat").count
        let ends = [try control.request(Command.VisitEnd.self), try control.request(Command.VisitEnd.self)]
        XCTAssertEqual(ends[0]["phase"], "ending")
        XCTAssertTrue(ends[1]["visit_id"] == ends[0]["visit_id"] || ends[1]["phase"] == "none",
                      "the second end is the same end, or finds it over: \(ends[1].serialized(.compact))")
        XCTAssertNotNil(watcher.wait(for: Event.VisitEnded.self, after: index))
        XCTAssertNotNil(watcher.waitForStage("idle", after: index))
        XCTAssertEqual(watcher.all(Event.VisitEnded.self, after: index).count, 1)
        XCTAssertEqual(sim.requests("POST", containing: "/chat").count, chats, "the recording cut off by the end was not uploaded")
        XCTAssertEqual(try control.request(Command.SpoolList.self)["turns"], .array([]))
    }

    /// The visit ends between the mailed code's request and its entry: the next learner finds
    /// nobody signed in (a code typed later signs in whoever types it, as a new visit).
    func testAVisitEndedDuringASignInByCode() throws {
        let cues = try ChatterboxHarness()
        let daemon = try DaemonHarness(backend: cues.baseURL, arguments: ["--backend-kind", "chatterbox"])
        let control = try daemon.client()
        _ = try control.request(Command.SignInRequestCode.self, ["email": "halfway@kiosk.invalid"])
        XCTAssertEqual(try control.request(Command.VisitEnd.self)["phase"], "ending")
        XCTAssertTrue(Poll.until(timeout: 10) { (try? control.request(Command.Status.self))?["visit"]?["phase"] == "none" })
        XCTAssertEqual(try control.request(Command.LearnerGet.self)["signed_in"], false)
        _ = try control.request(Command.SignInCode.self, ["email": "halfway@kiosk.invalid", "code": "123456"])
        let status = try control.request(Command.Status.self)
        XCTAssertEqual(status["visit"]?["phase"], "active", "the code's entry is a new visit")
        XCTAssertEqual(status["learner"]?["signed_in"], true)
    }

    /// A daemon killed mid-visit ends that visit at its next start: the next client finds
    /// the attract screen's state, and a Chatterbox learner's sign-in is gone.
    func testAVisitLeftByAKilledDaemonEndsAtTheNextStart() throws {
        let cues = try ChatterboxHarness()
        let arguments = ["--backend-kind", "chatterbox", "--cue-poll-ms", "100"]
        let first = try DaemonHarness(backend: cues.baseURL, arguments: arguments)
        first.keepsDirectory = true
        let control = try first.client()
        XCTAssertEqual(try control.request(Command.SignInRequestCode.self, ["email": "walker@kiosk.invalid"])["sent"], true)
        _ = try control.request(Command.SignInCode.self, ["email": "walker@kiosk.invalid", "code": "123456"])
        XCTAssertEqual(try control.request(Command.Status.self)["visit"]?["phase"], "active", "signing in began a visit")
        let tokens = first.directory + "/state/chatterbox-tokens.json"
        XCTAssertTrue(FileManager.default.fileExists(atPath: tokens))
        first.process.terminate(signal: SIGKILL)
        _ = first.process.waitForExit(timeout: 10)

        let next = try DaemonHarness(backend: cues.baseURL, arguments: arguments, directory: first.directory)
        let status = try next.client().request(Command.Status.self)
        XCTAssertEqual(status["visit"]?["phase"], "none")
        XCTAssertEqual(status["learner"]?["signed_in"], false, "the walked-away learner is signed out")
        XCTAssertFalse(FileManager.default.fileExists(atPath: tokens))
        XCTAssertFalse(FileManager.default.fileExists(atPath: first.directory + "/state/visit"))
        XCTAssertTrue(next.waitForLog("was under way when the daemon last stopped: ended now (restart)"))
        let metrics = try XCTUnwrap(try next.client().request(Command.Metrics.self)["text"]?.stringValue)
        XCTAssertTrue(metrics.contains("practiced_visits_total{ended=\"restart\"} 1"), metrics)
    }

    /// Signing out ends the visit (reason signout) on a shared kiosk, and "I'm done" signs a
    /// Chatterbox learner out: the tokens file goes, as `signout` removes it.
    func testSigningOutEndsTheVisitAndIAmDoneSignsOut() throws {
        let cues = try ChatterboxHarness()
        let daemon = try DaemonHarness(backend: cues.baseURL, arguments: ["--backend-kind", "chatterbox", "--cue-poll-ms", "100"])
        let control = try daemon.client()
        let watcher = try EventWatcher(client: daemon.client(), topics: ["visit", "cue"])
        let tokens = daemon.directory + "/state/chatterbox-tokens.json"
        for (round, ending) in [(0, Command.SignOut.name), (1, Command.VisitEnd.name)] {
            let index = watcher.count
            _ = try control.request(Command.SignInRequestCode.self, ["email": .string("round\(round)@kiosk.invalid")])
            _ = try control.request(Command.SignInCode.self, ["email": .string("round\(round)@kiosk.invalid"), "code": "123456"])
            XCTAssertNotNil(watcher.wait(for: Event.VisitStarted.self, after: index))
            XCTAssertTrue(FileManager.default.fileExists(atPath: tokens))
            _ = try control.request(ending)
            let ended = try XCTUnwrap(watcher.wait(for: Event.VisitEnded.self, after: index))
            XCTAssertEqual(ended["data"]?["reason"]?.stringValue, round == 0 ? "signout" : "done")
            XCTAssertFalse(FileManager.default.fileExists(atPath: tokens), "round \(round): the tokens stayed")
            XCTAssertEqual(try control.request(Command.LearnerGet.self)["signed_in"], false)
        }
    }

    /// A personal kiosk keeps its one learner: the configured id every visit.
    func testAPersonalKioskKeepsItsLearner() throws {
        let sim = try SimulatorHarness()
        let daemon = try DaemonHarness(backend: sim.baseURL, arguments: ["--kiosk-visits", "personal", "--user-id", "630478590", "--user-name", "Mei"])
        let control = try daemon.client()
        let watcher = try watch(daemon)
        for round in 0..<2 {
            let index = watcher.count
            _ = try control.request(Command.SessionStart.self, ["mode": "conversation", "topic_id": "travel"], timeout: 20)
            let learner = try learner(of: watcher, after: index, sim)
            XCTAssertEqual(learner.userID, "630478590", "round \(round)")
            XCTAssertEqual(learner.userName, "Mei")
            XCTAssertEqual(try control.request(Command.VisitEnd.self)["identity"], "personal")
            XCTAssertNotNil(watcher.wait(for: Event.VisitEnded.self, after: index, timeout: 20))
        }
    }

    /// Hostile idle settings: refused at start with the key, the value and what is allowed.
    func testBadIdleSettingsAndAnIdentityOnASharedKioskAreRefused() throws {
        let cases: [([String], String)] = [
            (["--kiosk-idle-warning-s", "-1"], "kiosk.idle_warning_s"), (["--kiosk-idle-warning-s", "soon"], "kiosk.idle_warning_s"),
            (["--kiosk-idle-warning-s", "99999999999999999999"], "kiosk.idle_warning_s"), (["--kiosk-idle-warning-s", "86401"], "kiosk.idle_warning_s"),
            (["--kiosk-idle-reset-s", "0"], "kiosk.idle_reset_s"), (["--kiosk-idle-reset-s", "1e3"], "kiosk.idle_reset_s"),
            (["--kiosk-idle-reset-s", ""], "kiosk.idle_reset_s"), (["--kiosk-visits", "public"], "kiosk.visits"),
            (["--user-id", "630478590"], "user.id"),
        ]
        for (arguments, key) in cases {
            let run = try DaemonHarness.run(DaemonHarness.practiced, ["--check-config", "--state-dir", "/tmp/practiced-visit-check"] + arguments)
            XCTAssertEqual(run.status, 78, "\(arguments): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains(key), "\(arguments) names \(key): \(run.stderr)")
        }
        let off = try DaemonHarness.run(DaemonHarness.practiced, ["--check-config", "--state-dir", "/tmp/practiced-visit-check", "--kiosk-idle-warning-s", "0"])
        XCTAssertEqual(off.status, 0, off.stderr)
        XCTAssertTrue(off.stdout.contains("kiosk.idle_warning_s = 0"), off.stdout)
    }
}
