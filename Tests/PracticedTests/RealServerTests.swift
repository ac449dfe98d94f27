import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport
import XCTest

/// The daemon as a process against the real server's recorded answers (``TraceReplayServer``
/// over TCP), with clients on its socket: each defect found against the real TalkCo server
/// has its test here. The session is the recorded one (`8074418d-…`), so every path the
/// daemon asks for is a recorded path.
final class RealServerTests: XCTestCase {
    private let session = "8074418d-b3a9-4639-bb71-697456bcdbc2"
    private var replay: TraceReplayServer!
    private var daemon: DaemonHarness!

    override func tearDown() {
        daemon = nil
        replay?.stop()
        replay = nil
    }

    private func startDaemon(timeScale: Double = 0, arguments: [String] = []) throws -> (ControlClient, EventWatcher) {
        daemon = try DaemonHarness(backend: replay.baseURL, arguments: ["--review-poll-ms", "100", "--kiosk-visits", "personal", "--user-id", "630478590", "--user-name", "Mei"] + arguments)
        let control = try daemon.client()
        return (control, try EventWatcher(client: try daemon.client(), topics: ["session", "playback"]))
    }

    private func path(_ suffix: String) -> String { "/sessions/\(session)\(suffix)" }

    /// Creates the recorded session and plays its recorded greeting.
    private func startSession(_ control: ControlClient, _ watcher: EventWatcher) throws {
        _ = try control.request(Command.SessionStart.self, ["topic_id": "daily_life", "mode": "conversation"])
        XCTAssertNotNil(watcher.waitForStage("ready"))
    }

    /// Talks until `reviewed`: a typed turn (07), DELETE (17), polls (18, 19).
    private func talkAndEnd(_ control: ControlClient, _ watcher: EventWatcher) throws {
        try startSession(control, watcher)
        let mark = watcher.count
        _ = try control.request(Command.Say.self, ["text": "I very like cooking, especially beef noodles."])
        XCTAssertEqual(watcher.wait(for: Event.ReplyFinished.self, after: mark, where: { $0["greeting"] == false })?["data"]?["outcome"], "answered")
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark))
        XCTAssertEqual(try control.request(Command.SessionEnd.self)["status"], "reviewing")
        XCTAssertNotNil(watcher.wait(for: Event.ReviewReady.self, after: mark))
        XCTAssertNotNil(watcher.waitForStage("reviewed", after: mark))
    }

    // MARK: - Defect 1: a review with a correction, the summary, a session already completed

    func testAReviewWithACorrectionIsReadAndTheSessionCompletes() throws {
        replay = try TraceReplayServer()
        try replay.queue("02", "03", "07", "17", "18", "19", "20", "21", "24", "25", "26", "27")
        let (control, watcher) = try startDaemon()
        try talkAndEnd(control, watcher)
        let correction = try control.request(Command.CorrectionAsk.self, ["segment_id": 19, "message": "這句怎麼說比較自然？"])
        XCTAssertEqual(correction["segment_id"], 19)
        // The review now holds the correction without segment_id: it must still be read.
        let review = try control.request(Command.ReviewGet.self)
        XCTAssertEqual(review["stale"], false, "the review was not read: \(review)")
        XCTAssertEqual(review["review"]?["segments"]?.arrayValue?.first?["corrections"]?.arrayValue?.first?["id"], 4)
        let mark = watcher.count
        _ = try control.request(Command.ReviewFinish.self)
        guard let completed = watcher.wait(for: Event.SessionCompleted.self, after: mark) else { return }
        XCTAssertEqual(completed["data"]?["note"], "summary ready")
        XCTAssertEqual(completed["data"]?["summary"], try Trace.load("27").json?["summary"])
        XCTAssertNotNil(watcher.waitForStage("completed", after: mark))
        XCTAssertTrue(watcher.all(Event.ReviewFinishFailed.self, after: mark).isEmpty)
    }

    /// A finish whose polling fails leaves a way forward; the server's "already completed"
    /// completes the session; `--wait-for session.completed` ends at the failure (defect 4);
    /// a correction answered 500 is `backend_error` with the status (defect 5).
    func testAFailedFinishLeavesAWayForwardAndACompletedSessionIsCompleted() throws {
        replay = try TraceReplayServer()
        try replay.queue("02", "03", "07", "17", "18", "19", "44", "24", "28")
        // 500 text/plain answers the polls after /end: three polls in a row fail, each after
        // the client's own retries of an idempotent GET (6 attempts).
        let failure = try Trace.load("44")
        for _ in 0..<(3 * RetryPolicy().maxAttempts) { replay.queue(failure, method: "GET", path: path("/review")) }
        replay.queue(try Trace.load("27"))
        let (control, watcher) = try startDaemon()
        try talkAndEnd(control, watcher)

        // Defect 5: an answered 500 is not "unreachable".
        let refused = try XCTUnwrap(control.failure(Command.CorrectionAsk.self, ["segment_id": 19, "message": "可以再解釋一次嗎？"]))
        XCTAssertEqual(refused.code, .backendError)
        XCTAssertEqual(refused.status, 500)
        XCTAssertTrue(refused.retryable)

        // Defect 4: practicectl waits for the summary, the finish fails: exit 1 at once.
        let started = Date()
        let waited = try DaemonHarness.practicectl(["--wait-for", "session.completed", "--timeout", "60", "finish"], socket: daemon.socketPath)
        XCTAssertEqual(waited.status, 1, "practicectl: \(waited.stdout) \(waited.stderr)")
        // Three failed polls take about 18 s (the client's backoff); the timeout is 60 s.
        XCTAssertLessThan(Date().timeIntervalSince(started), 40, "the wait went on after review.finish_failed")
        XCTAssertTrue(waited.stdout.contains("review.finish_failed"), waited.stdout)
        guard let failed = watcher.wait(for: Event.ReviewFinishFailed.self) else { return }
        XCTAssertEqual(failed["data"]?["actions"], ["review.get", "review.finish", "session.close"])
        XCTAssertNotNil(watcher.waitForStage("reviewed", after: watcher.position(of: Event.ReviewFinishFailed.self) ?? 0))

        // Defect 1: the server completed it meanwhile; a second finish hears "Session
        // already completed" (400) and the session is completed, with its summary.
        let mark = watcher.count
        let finished = try control.request(Command.ReviewFinish.self)
        XCTAssertEqual(finished["status"], "completed")
        guard let completed = watcher.wait(for: Event.SessionCompleted.self, after: mark) else { return }
        XCTAssertEqual(completed["data"]?["summary"]?["overall"], try Trace.load("27").json?["summary"]?["overall"])
        XCTAssertNotNil(watcher.waitForStage("completed", after: mark))
        XCTAssertEqual(try control.request(Command.SessionGet.self)["stage"], "completed")
    }

    // MARK: - Defect 2: the empty answers, each its own outcome

    func testTurnsAnsweredWithoutAnAnswerAreToldApart() throws {
        replay = try TraceReplayServer()
        try replay.queue("02", "03", "07", "10", "13", "12")
        replay.queue(try Trace.load("54"), path: path("/chat/text"))  // recorded on another session
        let (control, watcher) = try startDaemon()
        try startSession(control, watcher)
        var outcomes: [String] = []
        for text in ["I very like cooking.", "What do you like to eat?", "Is there any news about the weather this weekend?",
                     "Sorry, let me say that again.", "  我很喜歡 travel  "] {
            let mark = watcher.count
            _ = try control.request(Command.Say.self, ["text": .string(text)])
            guard let finished = watcher.wait(for: Event.ReplyFinished.self, after: mark, where: { $0["greeting"] == false }) else { return }
            let outcome = finished["data"]?["outcome"]?.stringValue ?? "?"
            outcomes.append(outcome)
            if outcome == "answered" {
                XCTAssertGreaterThan(finished["data"]?["audio_bytes"]?.intValue ?? 0, 0)
                XCTAssertTrue(watcher.all(Event.TurnUnanswered.self, after: mark).isEmpty)
            } else {
                let unanswered = watcher.all(Event.TurnUnanswered.self, after: mark)
                XCTAssertEqual(unanswered.count, 1, "an empty answer must be told: \(watcher.names(after: mark))")
                XCTAssertEqual(unanswered.first?["outcome"]?.stringValue, outcome)
                XCTAssertFalse(unanswered.first?["hint"]?.stringValue?.isEmpty ?? true)
                XCTAssertEqual(finished["data"]?["saved"], false)
                XCTAssertTrue(watcher.all(Event.ReplyText.self, after: mark).isEmpty)
            }
            XCTAssertNotNil(watcher.waitForStage("ready", after: mark))
        }
        XCTAssertEqual(outcomes, ["answered", "no_audio", "no_audio", "no_audio", "answered"])
        XCTAssertEqual(watcher.all(Event.Transcript.self).last?["text"], "我很喜歡 travel")
        let metrics = try control.request(Command.Metrics.self)["text"]?.stringValue ?? ""
        XCTAssertTrue(metrics.contains("practiced_turns_total{outcome=\"no_audio\"} 3"), metrics)
        XCTAssertTrue(metrics.contains("practiced_turns_total{outcome=\"answered\"} 2"), metrics)
        XCTAssertFalse(metrics.contains("outcome=\"delivered\""), "an empty turn was counted delivered")
    }

    /// A second /start (16): headers, 30 s of nothing, `timing done`. The greeting is told
    /// missing, and the learner can talk.
    func testAGreetingThatNeverComesIsTold() throws {
        replay = try TraceReplayServer(timeScale: 0.02)
        try replay.queue("02", "16")
        let (control, watcher) = try startDaemon()
        _ = try control.request(Command.SessionStart.self, ["topic_id": "daily_life", "mode": "conversation"])
        guard let unanswered = watcher.wait(for: Event.GreetingUnanswered.self) else { return }
        XCTAssertEqual(unanswered["data"]?["outcome"], "no_audio")
        XCTAssertNotNil(watcher.waitForStage("ready"))
    }

    // MARK: - Defect 3: talking during the greeting

    /// The greeting streams slowly (recorded times); the learner presses talk while it
    /// plays. The sound stops, but the greeting's stream is read to its end before the next
    /// upload, so the next turn is not sent on top of it (which the server answers empty,
    /// traces 09–12, or with pieces of the greeting) and gets its real reply.
    func testTalkingDuringTheGreetingThenTheNextTurnGetsARealReply() throws {
        // Twice the recorded times: the greeting streams for 1.8 s.
        replay = try TraceReplayServer(timeScale: 2)
        try replay.queue("02", "03", "07")
        replay.busyAnswer = try Trace.load("12")
        let (control, watcher) = try startDaemon()
        _ = try control.request(Command.SessionStart.self, ["topic_id": "daily_life", "mode": "conversation"])
        XCTAssertNotNil(watcher.wait(for: Event.ReplyAudioStarted.self))
        // Talk: a barge-in. The null microphone records silence, which the gate drops.
        var mark = watcher.count
        _ = try control.request(Command.TurnStart.self)
        _ = try control.request(Command.TurnStop.self)
        XCTAssertEqual(watcher.wait(for: Event.TurnDiscarded.self, after: mark)?["data"]?["reason"], "no_speech")
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark))
        mark = watcher.count
        _ = try control.request(Command.Say.self, ["text": "I very like cooking, especially beef noodles."])
        guard let finished = watcher.wait(for: Event.ReplyFinished.self, after: mark, where: { $0["greeting"] == false }) else { return }
        XCTAssertEqual(finished["data"]?["outcome"], "answered", "events: \(watcher.names(after: mark))")
        XCTAssertEqual(finished["data"]?["audio_bytes"]?.intValue, try Trace.load("07").audio.count)
        XCTAssertEqual(watcher.wait(for: Event.ReplyText.self, after: mark)?["data"]?["text"], try Trace.load("07").text(of: "response").map { .string($0) })
        XCTAssertEqual(replay.requests.last?.answeredWith, "07-chat-text", "the turn overlapped the greeting upstream")
        // The greeting's stream ended before the turn was sent.
        let greeting = try XCTUnwrap(replay.requests.first { $0.path.hasSuffix("/start") })
        let turn = try XCTUnwrap(replay.requests.last)
        let recordedEnd = try 2 * Trace.load("03").completeMilliseconds
        XCTAssertGreaterThan(Double(turn.arrivedAt - greeting.arrivedAt) / 1e6, recordedEnd - 5)
    }

    /// A stopped reply whose stream never ends holds the next upload only `reply.drain_ms`:
    /// then it is hung up and the turn goes out.
    func testTheDrainIsBounded() throws {
        replay = try TraceReplayServer(timeScale: 1)
        try replay.queue("02", "16", "07")
        let (control, watcher) = try startDaemon(arguments: ["--reply-drain-ms", "300"])
        _ = try control.request(Command.SessionStart.self, ["topic_id": "daily_life", "mode": "conversation"])
        XCTAssertTrue(replay.waitForRequests(2, timeout: 10))
        var mark = watcher.count
        XCTAssertEqual(try control.request(Command.PlaybackStop.self)["stopped"], true)
        XCTAssertNotNil(watcher.waitForStage("ready", after: mark))
        mark = watcher.count
        _ = try control.request(Command.Say.self, ["text": "I very like cooking, especially beef noodles."])
        guard let drained = watcher.wait(for: Event.ReplyDrained.self, after: mark) else { return }
        XCTAssertEqual(drained["data"]?["timed_out"], true)
        XCTAssertEqual(drained["data"]?["greeting"], true)
        XCTAssertEqual(watcher.wait(for: Event.ReplyFinished.self, after: mark, where: { $0["greeting"] == false })?["data"]?["outcome"], "answered")
    }

    // MARK: - Defect 6: nulls pass through

    func testAProfilesNullsReachTheClient() throws {
        replay = try TraceReplayServer()
        let trace = try Trace.load("29")
        replay.queue(trace, path: "/users/630478590/profile")
        let (control, _) = try startDaemon()
        let profile = try XCTUnwrap(try control.request(Command.Profile.self)["profile"])
        for key in ["user_name", "level", "learning_goal"] { XCTAssertEqual(profile[key], .null, "\(key) was dropped: \(profile)") }
        XCTAssertEqual(profile["profile_data"], trace.json?["profile_data"])
    }

    /// A shared kiosk against the real server's answers: each visit creates its sessions for a
    /// user id of its own, sends no name, and a new id is what the real backend answers with
    /// an empty profile (trace 29: it makes one on the fly). The first visitor's profile (trace
    /// 30: personal facts, weak points) is never asked for again.
    func testASharedKiosksSecondVisitIsANewLearnerWithAnEmptyProfile() throws {
        replay = try TraceReplayServer()
        try replay.queue("02", "03")
        let learned = try Trace.load("30"), empty = try Trace.load("29")
        replay.queue(learned, path: "/users/*/profile")
        replay.queue(empty, path: "/users/*/profile")
        daemon = try DaemonHarness(backend: replay.baseURL, arguments: ["--user-name", "Mei"])
        let control = try daemon.client()
        var users: [String] = []
        var profiles: [JSONValue] = []
        for _ in 0..<2 {
            _ = try control.request(Command.VisitTouch.self)
            let created = replay.requests.count
            _ = try control.request(Command.SessionStart.self, ["topic_id": "daily_life", "mode": "conversation"], timeout: 20)
            let body = try XCTUnwrap(replay.requests.dropFirst(created).first { $0.method == "POST" && $0.path == "/sessions" }?.json)
            XCTAssertEqual(body["user_name"] ?? JSONValue.null, JSONValue.null, "a shared kiosk sends no name")
            users.append(try XCTUnwrap(body["user_id"]?.stringValue))
            profiles.append(try XCTUnwrap(try control.request(Command.Profile.self)["profile"]))
            let asked = try XCTUnwrap(replay.requests.last { $0.path.hasSuffix("/profile") }?.path)
            XCTAssertEqual(asked, "/users/\(users.last!)/profile", "the profile of this visit's learner")
            _ = try control.request(Command.VisitEnd.self)
            XCTAssertTrue(Poll.until(timeout: 10) { (try? control.request(Command.Status.self))?["visit"]?["phase"] == "none" })
        }
        XCTAssertNotEqual(users[0], users[1], "the second visit is a new learner")
        XCTAssertEqual(users.map(\.count), [9, 9])
        XCTAssertNotEqual(profiles[0]["profile_data"]?["personal_facts"]?.arrayValue?.count ?? 0, 0, "the first visit's learned profile (trace 30)")
        XCTAssertEqual(profiles[1]["profile_data"]?["personal_facts"]?.arrayValue?.count, 0, "the new learner's profile is empty")
        XCTAssertEqual(profiles[1]["profile_data"]?["weak_points"], empty.json?["profile_data"]?["weak_points"])
    }
}
