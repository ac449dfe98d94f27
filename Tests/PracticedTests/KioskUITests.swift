import AudioKernel
import Foundation
import PracticeKit
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// The learner UI (samples/kiosk-ui) in Debian's chromium, headless, through its real
/// bridge (the launcher with practiced-kiosk-bridge, on loopback, with its per-start token) to the real
/// daemon on PulseAudio headless, the learner's espeak-ng voice in the microphone and
/// practice-sim behind it. Only the page is touched: taps, a held push-to-talk button, typed
/// text. Every line the page read from the daemon or wrote to it is checked against the
/// protocol's JSON Schema. Screenshots of each screen go to `.build/kiosk-ui-screenshots/`
/// (or `$PRACTICED_SCREENSHOTS`). The same tests run on cog, the browser the kiosk ships,
/// in ``KioskUITestsOnCog``.
class KioskUITests: XCTestCase {
    /// The browser the tests drive.
    class var browserKind: WebDriver.Browser { .chromium }
    /// Where the screenshots go: chromium's in the folder itself, cog's in `cog/`.
    var screenshots: String { Self.browserKind == .chromium ? Self.screenshotFolder : "\(Self.screenshotFolder)/cog" }

    private var rig: KioskRig!
    /// The real TalkCo server's recorded answers, and a daemon on them.
    private var replay: TraceReplayServer?
    private var replayDaemon: DaemonHarness?
    private var bridge: ChildProcess?
    private var bridgeOutput = ""
    var browser: WebDriver!
    /// The launch page's address (`file://…/launch.html`), as the launcher prints it.
    private var address = ""
    /// Console errors a test expects (substrings); any other fails it at tear-down.
    var expectedConsoleErrors: [String] = []

    static let uiDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("samples/kiosk-ui").path
    static let screenshotFolder: String = ProcessInfo.processInfo.environment["PRACTICED_SCREENSHOTS"]
        ?? URL(fileURLWithPath: uiDirectory).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/kiosk-ui-screenshots").path

    override func tearDown() {
        // The page logged no error and loaded every resource it asked for (a missing icon was
        // a SEVERE entry on every load).
        if let browser, let errors = try? browser.consoleErrors(allowing: expectedConsoleErrors) {
            XCTAssertEqual(errors, [], "the page's console errors")
        }
        browser = nil
        bridge?.terminate(signal: SIGTERM)
        rig?.stop()
        rig = nil
        replayDaemon = nil
        replay?.stop()
        replay = nil
        if !bridgeOutput.isEmpty { try? FileManager.default.removeItem(atPath: bridgeOutput) }
    }

    /// The rig, the bridge as the launcher starts it, and a browser on the page.
    func start(width: Int = 1280, height: Int = 800, browsing: Bool = true, visiting: Bool = true, arguments: [String] = [],
                       _ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
        rig = try KioskRig(arguments: arguments, configure)
        try openPage(socket: rig.daemon.socketPath, directory: rig.directory, width: width, height: height, browsing: browsing, visiting: visiting)
    }

    /// The bridge to `socket` as the launcher starts it (its files in `directory`), and a
    /// browser on the page.
    private func openPage(socket: String, directory: String, width: Int = 1280, height: Int = 800, browsing: Bool = true,
                          visiting: Bool = true) throws {
        let port = try WebDriver.freePort()
        bridgeOutput = "\(directory)/bridge.out"
        bridge = try ChildProcess(executable: "/bin/bash", arguments: [
            "\(Self.uiDirectory)/practiced-kiosk-ui", "--no-browser", "--port", "\(port)", "--socket", socket, "--ui", Self.uiDirectory,
        ], environment: ["PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": directory, "PRACTICED_KIOSK_BRIDGE": ShippedBinaries.path(of: "practiced-kiosk-bridge")],
                                   stdoutPath: bridgeOutput, stderrPath: "\(directory)/bridge.err")
        let deadline = Date().addingTimeInterval(20)
        while !DaemonHarness.read(bridgeOutput).hasPrefix("file://") {
            guard Date() < deadline else { throw HarnessError(message: "the bridge did not start: \(DaemonHarness.read("\(directory)/bridge.err"))") }
            usleep(50_000)
        }
        address = DaemonHarness.read(bridgeOutput).trimmingCharacters(in: .whitespacesAndNewlines)
        guard browsing else { return }
        browser = try WebDriver(width: width, height: height, browser: Self.browserKind)
        try browser.open(address)
        if visiting { try beginVisit() }
    }

    /// The attract screen, then the learner's touch that begins a visit.
    func beginVisit(file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertNotNil(try browser.wait(for: "#attract", timeout: 30), "no attract screen", file: file, line: line)
        try browser.click("#attract")
        XCTAssertTrue(try browser.wait(until: "return document.body.dataset.visit === 'active'", timeout: 20), "the touch began no visit",
                      file: file, line: line)
    }

    /// The session's stage as the page knows it.
    private func waitForStage(_ stage: String, timeout: Double = 30, file: StaticString = #filePath, line: UInt = #line) throws {
        let reached = try browser.wait(until: "return window.practicedKiosk && window.practicedKiosk.store.session.stage === '\(stage)'", timeout: timeout)
        let shown = try browser.run("return window.practicedKiosk && window.practicedKiosk.store.session.stage")
        XCTAssertTrue(reached, "the page never showed stage \(stage) (it shows \(shown))", file: file, line: line)
    }

    /// The `enabled` of each `level.watch` the page has sent, in order.
    private func levelWatches() throws -> [Bool] {
        let messages = try browser.run("return window.practicedKiosk.messages").arrayValue ?? []
        return messages.compactMap { entry in
            guard entry["direction"] == "out", entry["message"]?["command"] == "level.watch" else { return nil }
            return entry["message"]?["args"]?["enabled"]?.boolValue
        }
    }

    private func count(_ selector: String) throws -> Int { try browser.run("return document.querySelectorAll(arguments[0]).length", [.string(selector)]).intValue ?? 0 }

    /// The screen as it is, at both kiosk sizes (the 7" 800×480 and 1280×800), back to the
    /// size it had.
    private func shoot(_ name: String) throws {
        let width = try browser.run("return innerWidth").intValue ?? 1280
        let height = try browser.run("return innerHeight").intValue ?? 800
        for (w, h) in browser.kioskSizes {
            try browser.resize(width: w, height: h)
            // The conversation's newest line is in view at this size too (the page follows
            // a change of size; before, the 800×480 shots showed the first lines).
            let newestInView = try browser.wait(until: """
                const lines = document.getElementById('lines'); const newest = lines && lines.lastElementChild;
                return !newest || newest.getBoundingClientRect().bottom <= lines.getBoundingClientRect().bottom + 1;
                """, timeout: 5)
            XCTAssertTrue(newestInView, "\(name) at \(w)x\(h): the newest line is out of view")
            try browser.screenshot(to: "\(screenshots)/\(name)-\(w)x\(h).png")
        }
        try checkLongTexts(name)
        try browser.resize(width: width, height: height)
    }

    /// The screen with every backend text one unbroken word of 2,000 characters, at both
    /// sizes: nothing past the screen's right edge, nothing scrolls sideways.
    private func checkLongTexts(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try browser.stretchTexts()
        for (w, h) in browser.kioskSizes {
            try browser.resize(width: w, height: h)
            XCTAssertEqual(try browser.layoutProblems(), [], "\(name) at \(w)x\(h) with 2,000-character words", file: file, line: line)
            try browser.screenshot(to: "\(screenshots)/\(name)-long-words-\(w)x\(h).png")
        }
        try browser.restoreTexts()
    }

    /// Holds the push-to-talk button while the microphone hears `samples` (and `padding`
    /// more samples of silence), then lets go.
    private func holdToTalk(_ samples: [Int16], padding: Int = 4_800, byTouch: Bool = false) throws {
        let press = byTouch ? browser.touch : browser.pointer
        try press(true, "#talk")
        try waitForStage("recording")
        let from = rig.microphone.written.value
        rig.microphone.say(samples)
        XCTAssertTrue(rig.microphone.written.wait(timeout: 20) { $0 >= from + samples.count + padding })
        try press(false, "#talk")
    }

    /// Every line the page read and wrote, checked against the protocol's schema.
    private func checkMessagesAgainstTheSchema(refusalsExpected: Set<String> = [], file: StaticString = #filePath, line: UInt = #line) throws {
        let messages = try browser.run("return window.practicedKiosk.messages").arrayValue ?? []
        XCTAssertGreaterThan(messages.count, 20, file: file, line: line)
        var commands: [String: String] = [:]
        var problems: [String] = []
        for entry in messages {
            let message = entry["message"] ?? .null
            if entry["direction"] == "out" {
                let name = message["command"]?.stringValue ?? "?"
                if let id = message["id"]?.intValue { commands[String(id)] = name }
                guard let schema = ProtocolConformance.validator.resolve("#/$defs/commands/\(name)/args") else {
                    problems.append("the page sent '\(name)', which the protocol does not have")
                    continue
                }
                problems += ProtocolConformance.validator.problems(message["args"] ?? .object([]), against: schema, at: "\(name).args")
            } else {
                let answering = message["type"] == "reply" ? message["id"]?.intValue.flatMap { commands[String($0)] } : nil
                problems += ProtocolConformance.problems(message, answering: answering)
            }
        }
        XCTAssertEqual(problems, [], "lines off the practiced/1 schema", file: file, line: line)
        let failures = messages.filter { entry in
            guard entry["message"]?["ok"] == .bool(false), let id = entry["message"]?["id"]?.intValue else { return false }
            return !refusalsExpected.contains(commands[String(id)] ?? "")
        }
        XCTAssertEqual(failures, [], "the page's commands the daemon refused", file: file, line: line)
    }

    func testAWholeConversationThroughTheUIOnly() throws {
        try start { $0.pace = 2 }
        // Home: the six topics, Chinese first.
        XCTAssertNotNil(try browser.wait(for: "[data-topic='travel']", text: { $0.contains("旅") || $0.contains("Travel") }))
        XCTAssertEqual(try count(".topic"), 6)
        XCTAssertEqual(try browser.text(try XCTUnwrap(try browser.find("#tab-practice"))), "練習")
        // The home screen shows no level: the page does not keep the microphone open for it.
        let watchedAtHome = try levelWatches()
        XCTAssertFalse(watchedAtHome.contains(true), "the home screen watched the level: \(watchedAtHome)")
        try shoot("topics")

        // The greeting: the tutor's words appear with its voice.
        try browser.click("[data-topic='travel']")
        XCTAssertNotNil(try browser.wait(for: "#screen-conversation"))
        XCTAssertNotNil(try browser.wait(for: ".line.tutor", timeout: 30), "the greeting's text never showed")
        try waitForStage("ready")
        XCTAssertEqual(try levelWatches().last, true, "the conversation shows the level: the page watches it")
        XCTAssertEqual(try browser.text(try XCTUnwrap(try browser.find("#end"))), "結束對話")
        XCTAssertEqual(try browser.text(try XCTUnwrap(try browser.find("#session-title"))), "旅遊", "what is practised is shown")
        try shoot("conversation")

        // Push-to-talk: a finger holds it through the learner's words (a touch, as on the
        // kiosk's screen); the transcript, then the reply.
        try holdToTalk(KioskRig.learner, byTouch: true)
        XCTAssertNotNil(try browser.wait(for: ".line.you", timeout: 30), "the learner's transcript never showed")
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.line.tutor').length >= 2", timeout: 30), "no reply text")
        try waitForStage("ready")

        // Hands-free: the toggle listens; the turn ends by itself.
        try browser.click("#hands-free")
        try waitForStage("listening")
        rig.microphone.say(KioskRig.learner2)
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.line.you').length >= 2", timeout: 30), "the hands-free turn's transcript")
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.line.tutor').length >= 3", timeout: 30))
        try waitForStage("listening")  // hands-free listens again by itself
        try browser.click("#hands-free")
        try waitForStage("ready")

        // A silent push-to-talk turn: told as such, nothing sent.
        let chats = rig.chatRequests.count
        try holdToTalk([], padding: 19_200)
        XCTAssertNotNil(try browser.wait(for: "[data-notice='noSpeech']", timeout: 10), "the silent turn was not told")
        XCTAssertEqual(rig.chatRequests.count, chats, "a silent turn was uploaded")
        try shoot("conversation-silent-turn")
        try waitForStage("ready")

        // A typed turn holding HTML: shown as characters, nothing runs.
        let hostile = "I saw <img src=x onerror=\"window.__xss=1\"> and <script>window.__xss=2</script> there"
        try browser.type(hostile, into: "#say-input")
        try browser.click("#say button[type=submit]")
        XCTAssertTrue(try browser.wait(until: "return [...document.querySelectorAll('.line.you .said')].some(e => e.textContent.includes('<script>'))", timeout: 30),
                      "the typed turn's transcript with its HTML as text")
        XCTAssertEqual(try browser.run("return window.__xss === undefined && document.querySelectorAll('.lines img, .lines script').length === 0"), .bool(true),
                       "backend text ran as HTML")
        try waitForStage("ready")

        // The end: the review with its marks in the issue colours, a correction, the summary.
        try browser.click("#end")
        XCTAssertNotNil(try browser.wait(for: "#screen-review"))
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.mark').length > 0", timeout: 30), "no marks in the review")
        try waitForStage("reviewed")
        let colours = try browser.run("""
            const colour = (type) => { const e = document.createElement('span'); e.className = 'issue issue-' + type; document.body.append(e);
              const c = getComputedStyle(e).backgroundColor; e.remove(); return c; };
            return [colour('grammar'), colour('naturalness'), colour('sentence_structure')];
            """)
        XCTAssertEqual(colours, ["rgb(217, 45, 32)", "rgb(247, 144, 9)", "rgb(122, 90, 248)"], "red, orange, purple as seed 001")
        try shoot("review")
        let corrections = try count(".correction")
        try browser.type("How do I say this more naturally?", into: ".segment .ask-input")
        try browser.click(".segment .ask button[type=submit]")
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.correction').length > \(corrections)", timeout: 30), "the correction never showed")
        try browser.click("#finish")
        XCTAssertNotNil(try browser.wait(for: "#screen-summary", timeout: 30), "no summary")
        XCTAssertNotNil(try browser.wait(for: "#overall", timeout: 5))
        try shoot("summary")
        try browser.click("#done")
        XCTAssertNotNil(try browser.wait(for: "#screen-topics", timeout: 20), "完成 did not go home")
        try waitForStage("idle")

        // The profile: level, progress notes, the three dimensions.
        try browser.click("#tab-profile")
        XCTAssertNotNil(try browser.wait(for: "#cefr", timeout: 20))
        XCTAssertEqual(try count(".dimension"), 3)
        // Each dimension shows its patterns or says it has none: the note exactly where the
        // profile the page holds has no pattern (how many depends on what the backend has
        // learned by then).
        XCTAssertEqual(try browser.run("return [...document.querySelectorAll('.dimension')].filter(d => !d.querySelector('.pattern, .nothing')).length"), 0,
                       "a dimension card shows nothing")
        XCTAssertEqual(try browser.run("""
            const weak = window.practicedKiosk.store.profile.profile.profile_data?.weak_points ?? {};
            return [...document.querySelectorAll('.dimension')]
              .filter(d => (d.querySelector('.nothing') !== null) !== ((weak[d.dataset.dimension] ?? []).length === 0)).length;
            """), 0, "the note where the profile has patterns, or none where it has no pattern")
        try browser.click("#evaluate")
        XCTAssertTrue(try browser.wait(until: "return /^[ABC][12]$/.test(document.getElementById('cefr').textContent)", timeout: 20), "no CEFR level")
        try assertOnOneLine("#cefr")
        try shoot("profile")
        try checkMessagesAgainstTheSchema()

        // A tutor's emoji is drawn as a colour glyph (without a colour emoji font, a grey box).
        try browser.click("#tab-practice")
        try browser.run("""
            const store = window.practicedKiosk.store;
            store.apply({ event: 'reply.text', data: { text: 'Well done 🎉🙂' } });
            store.state = { ...store.state, session: { ...store.state.session, stage: 'ready' } };
            window.practicedKiosk.render();
            """)
        let emoji = "\(screenshots)/conversation-emoji.png"
        try browser.screenshot(of: ".line.tutor:last-child .said", to: emoji)
        XCTAssertGreaterThan(try KioskPageChecks.colouredPixels(inPNG: emoji), 60, "the emoji in \(emoji) is not in colour")

        // After the whole session, the bridge's token is in the launch page alone: not in
        // the launcher's output (the unit's journal), not in any other file of the runtime
        // folder or the daemon's.
        try assertTokenOnlyInTheLaunchPage()
    }

    private func assertTokenOnlyInTheLaunchPage(file: StaticString = #filePath, line: UInt = #line) throws {
        let launch = try XCTUnwrap(URL(string: address)?.path)
        let token = try XCTUnwrap(DaemonHarness.read(launch).firstMatch(of: /#token=([0-9a-f]{64})/).map { String($0.1) }, "no token in \(launch)")
        let directory = (bridgeOutput as NSString).deletingLastPathComponent
        XCTAssertEqual(KioskPageChecks.files(under: directory, holding: token, except: [launch]), [], "files holding the token", file: file, line: line)
        XCTAssertEqual(try browser.run("return location.href.includes(arguments[0])", [.string(token)]), .bool(false), "the page's address holds the token")
    }

    /// Learned endpointing (`speech.endpoint = model`) as the learner sees it: hands-free, a
    /// recorded voice (June, Canadian French) stops mid-phrase; the daemon waits through the
    /// pause and the page says it is still listening; "done" ends the turn at once.
    func testAHesitationShowsStillListeningAndDoneEndsTheTurn() throws {
        // The pause's ceiling past the screenshots at every kiosk size (seconds on a loaded
        // machine): the learner's done, not the ceiling (2 s), ends this turn.
        try start(arguments: ["--speech-endpoint", "model", "--speech-models-dir", LearnedEndpointingTests.models, "--speech-max-pause-ms", "10000"])
        let stimulus = try XCTUnwrap(HesitantSpeech.stimuli(pauses: [2.0], readers: ["fr_CA_f_June"]).first)
        let watcher = try rig.watcher(topics: ["session", "speech"])
        try browser.click("[data-topic='travel']")
        try waitForStage("ready")
        XCTAssertTrue(rig.daemon.waitForModels(), "the models were not loaded for the session")
        try browser.click("#hands-free")
        try waitForStage("listening")
        let mark = watcher.count
        // The phrase up to its hesitation, and the hesitation (2 s of room tone) after it.
        let upToPause = Int((stimulus.cut + stimulus.pause) * 24_000)
        rig.microphone.say(Array(stimulus.samples[..<upToPause]))
        XCTAssertTrue(try browser.wait(until: "return window.practicedKiosk.store.stillListening === true", timeout: 20), "never showed still listening")
        XCTAssertEqual(try browser.text(try XCTUnwrap(try browser.find("#stage"))), "還在聽，慢慢說")
        for (w, h) in browser.kioskSizes {
            try browser.resize(width: w, height: h)
            XCTAssertEqual(try browser.layoutProblems(), [], "still listening at \(w)x\(h)")
            try browser.screenshot(to: "\(screenshots)/conversation-still-listening-\(w)x\(h).png")
        }
        try browser.click("#done-speaking")
        guard let recorded = watcher.wait(for: Event.TurnRecorded.self, after: mark, timeout: 10) else { return XCTFail("done did not end the turn") }
        XCTAssertEqual(recorded["data"]?["end_reason"], "released", "the learner's done ends the turn, not the pause")
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.line.you').length >= 1", timeout: 30), "the turn's transcript")
        // smart-turn is asked again in the pause the learner's done cut short (its later
        // question): "more to come" then is no turn's, and the page no longer says it.
        XCTAssertFalse(try browser.run("return window.practicedKiosk.store.stillListening").boolValue ?? true, "still listening after the turn")
    }

    /// The speech models failed to load (a file damaged after the start, as a partial upgrade
    /// leaves it): the operator is told by the metric and `status`; a learner going
    /// hands-free is told, quietly, to pause when they finish, since turns now end at the first
    /// pause. Nothing is said while hands-free is off, nor when the models work.
    func testHandsFreeSaysToPauseWhenTheSpeechModelsFailed() throws {
        let directory = DaemonHarness.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in ["silero_vad_op18_ifless.onnx", "smart-turn-v3.2-cpu.onnx"] {
            try FileManager.default.copyItem(atPath: "\(LearnedEndpointingTests.models)/\(name)", toPath: "\(directory)/\(name)")
        }
        try start(arguments: ["--speech-endpoint", "model", "--speech-models-dir", directory])
        try Data("not a model".utf8).write(to: URL(fileURLWithPath: "\(directory)/smart-turn-v3.2-cpu.onnx"))
        try browser.click("[data-topic='travel']")
        try waitForStage("ready")
        let client = try rig.daemon.client()
        XCTAssertTrue(Poll.until(timeout: 60) { (try? client.request(Command.Status.self))?["speech"]?["models"] == "failed" })
        XCTAssertTrue(try browser.wait(until: "return window.practicedKiosk.store.state.hearing?.models === 'failed'", timeout: 10), "the page was not told")
        XCTAssertNil(try browser.find("#hearing-note"), "said with hands-free off")
        try browser.click("#hands-free")
        let note = try XCTUnwrap(try browser.wait(for: "#hearing-note"), "hands-free said nothing of the simpler rule")
        XCTAssertEqual(try browser.text(note), "說完請稍停一下")
        for (w, h) in browser.kioskSizes {
            try browser.resize(width: w, height: h)
            XCTAssertEqual(try browser.layoutProblems(), [], "the note at \(w)x\(h)")
            try browser.screenshot(to: "\(screenshots)/conversation-hearing-note-\(w)x\(h).png")
        }
        try browser.click("#language")
        XCTAssertEqual(try browser.text(try XCTUnwrap(try browser.wait(for: "#hearing-note"))), "Pause briefly when you finish")
    }

    func testReviewModeEndsAtHomeAndTheEnglishToggle() throws {
        try start(width: 800, height: 480)
        XCTAssertNotNil(try browser.wait(for: "#review-mode"))
        try shoot("topics")
        // The page has its own language switch; chromium must not offer to translate it (a
        // Google Translate bubble covered the header on cage until the page said no).
        XCTAssertEqual(try browser.run("return document.documentElement.translate"), .bool(false))
        XCTAssertEqual(try browser.run("return document.querySelector('meta[name=google]').content"), "notranslate")
        try browser.click("#language")
        XCTAssertNotNil(try browser.wait(for: "#tab-practice", text: { $0 == "Practice" }))
        try shoot("topics-english")
        try browser.click("#language")
        try browser.click("#review-mode")
        try waitForStage("ready")
        XCTAssertEqual(try browser.run("return window.practicedKiosk.store.session.mode"), "review")
        XCTAssertEqual(try browser.text(try XCTUnwrap(try browser.find("#end"))), "結束複習")
        XCTAssertEqual(try browser.text(try XCTUnwrap(try browser.find("#session-title"))), "弱點複習")
        try shoot("conversation")
        try browser.click("#end")
        XCTAssertNotNil(try browser.wait(for: "#screen-topics", timeout: 20), "review mode's end did not go home")
        try waitForStage("idle")
        XCTAssertNil(try browser.find("#screen-review"), "review mode has no review")
        try checkMessagesAgainstTheSchema()
    }

    /// Hearing the tutor again (issue 69), by the page only: the profile screen's speed set
    /// to 0.75 (in both languages), the greeting's "again" and "slower" under the tutor's
    /// line (slower: a step below the speed in force, 0.6), the replay shown and stopped.
    func testTheTutorIsHeardAgainSlowerAndTheSpeedIsTheLearners() throws {
        try start(width: 800, height: 480)
        try browser.click("#tab-profile")
        XCTAssertNotNil(try browser.wait(for: "#speed"))
        XCTAssertEqual(try browser.run("return document.querySelector('#rate-1').getAttribute('aria-pressed')"), "true")
        try browser.click("#rate-0_75")
        XCTAssertTrue(try browser.wait(until: "return window.practicedKiosk.store.playbackRate === 0.75", timeout: 10), "playback.rate_changed never came")
        XCTAssertTrue(try browser.wait(until: "return document.querySelector('#rate-0_75').getAttribute('aria-pressed') === 'true'", timeout: 5))
        XCTAssertEqual(try rig.daemon.client().request(Command.PlaybackRate.self)["rate"], .double(0.75))
        try shoot("profile-speed")
        try browser.click("#language")
        XCTAssertNotNil(try browser.wait(for: "#speed h2", text: { $0 == "The tutor's speed" }))
        try shoot("profile-speed-english")
        try browser.click("#language")

        try browser.click("#tab-practice")
        try browser.click("[data-topic='travel']")
        XCTAssertNotNil(try browser.wait(for: ".line.tutor #replay", timeout: 30), "the greeting's line has no replay buttons")
        try waitForStage("ready")
        XCTAssertEqual(try browser.text(try XCTUnwrap(try browser.find("#replay-again"))), "↻ 再聽一次")
        XCTAssertEqual(try browser.run("return document.querySelector('#replay-slower').dataset.rate"), "0.6")
        try browser.click("#replay-again")
        XCTAssertTrue(try browser.wait(until: "return window.practicedKiosk.store.replay?.rate === 0.75", timeout: 10), "the replay was not shown")
        XCTAssertNotNil(try browser.wait(for: "#replaying"))
        XCTAssertEqual(try browser.run("return document.querySelector('#stop').disabled"), .bool(false), "a replay can be stopped")
        try shoot("conversation-replaying")
        try browser.click("#stop")
        XCTAssertTrue(try browser.wait(until: "return window.practicedKiosk.store.replay === null", timeout: 10), "the stopped replay still shows")
        try browser.click("#replay-slower")
        XCTAssertTrue(try browser.wait(until: "return window.practicedKiosk.store.replay?.rate === 0.6", timeout: 10))
        // It plays to its end by itself; the buttons stay for another go.
        XCTAssertTrue(try browser.wait(until: "return window.practicedKiosk.store.replay === null", timeout: 60), "the replay never finished")
        XCTAssertNotNil(try browser.find("#replay-again"))

        // "Hear me" on the learner's spoken line: the turn as it was sent, at its own speed.
        XCTAssertNil(try browser.find("#hear-me"), "no spoken turn yet")
        try holdToTalk(KioskRig.learner)
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.line.tutor').length >= 2", timeout: 30), "no reply text")
        try waitForStage("ready")
        let turn = try XCTUnwrap(try browser.run("return document.querySelector('#hear-me').dataset.turn").stringValue)
        try browser.click("#hear-me")
        XCTAssertTrue(try browser.wait(until: "return window.practicedKiosk.store.replay?.turnId === '\(turn)'", timeout: 10),
                      "the learner's turn was not shown playing")
        XCTAssertNotNil(try browser.wait(for: "#hearing-me"))
        XCTAssertEqual(try count(".line.you.replaying"), 1)
        try shoot("conversation-hear-me")
        XCTAssertTrue(try browser.wait(until: "return window.practicedKiosk.store.replay === null", timeout: 30), "the learner's turn never finished")
        try checkMessagesAgainstTheSchema()
    }

    /// Cue practice (a daemon on Chatterbox) through the page only: sign-in with the mailed
    /// code (a wrong one told by its reason), the cards in the learner's language, a card's
    /// markdown holding HTML shown as text, an answer held aloud, its transcript and whole
    /// evaluation, hearing it again, the history, sign-out.
    func testCuePracticeThroughTheUIOnly() throws {
        rig = try KioskRig(chatterbox: ChatterboxHarness { $0.hostileCueDetails = true })
        try openPage(socket: rig.daemon.socketPath, directory: rig.directory, width: 1280, height: 800)
        try browser.click("#language")  // English, the language of the cards
        XCTAssertNotNil(try browser.wait(for: "#screen-signin"), "no sign-in screen")
        try shootCues("cue-signin")
        try browser.type("kiosk-learner@chatterbox.invalid", into: "#email")
        try browser.click("#send-code")
        XCTAssertNotNil(try browser.wait(for: "#code-form"))
        try browser.type("000000", into: "#code")
        try browser.click("#sign-in")
        XCTAssertNotNil(try browser.wait(for: "[data-notice='reason_invalid_login_code']"), "a wrong code was not told by its reason")
        try shootCues("cue-signin-wrong-code")
        try browser.run("document.getElementById('code').value = ''")
        try browser.type("123456", into: "#code")
        try browser.click("#sign-in")
        XCTAssertNotNil(try browser.wait(for: "#screen-cards"))
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.cue-card').length === 5", timeout: 20), "five cards")
        XCTAssertEqual(try browser.run("return document.querySelector('#learner').textContent"), "kiosk-learner@chatterbox.invalid · EN")
        // The cards' markdown holds a script and an image: shown as characters, nothing runs.
        XCTAssertEqual(try browser.run("""
            return [...document.querySelectorAll('.cue-details')].every(e => e.textContent.includes("<script>alert('cue')</script>"))
              && document.querySelectorAll('.cue-grid script, .cue-grid img').length === 0 && window.__xss === undefined
            """), .bool(true), "cue markdown ran as HTML")
        try shootCues("cue-cards")
        let first = try browser.run("return [...document.querySelectorAll('.cue-card')].map(e => e.dataset.cue).join(',')")
        try browser.click("#shuffle")
        XCTAssertTrue(try browser.wait(until: "return [...document.querySelectorAll('.cue-card')].map(e => e.dataset.cue).join(',') !== '\(first.stringValue ?? "")'", timeout: 20),
                      "other cards did not come")
        // A language's cards: the daemon tells the new language (signin.changed) before its cards
        // come; until they do, the old language's cards are busy and cannot be tapped.
        let cardsShown = "[...document.querySelectorAll('.cue-card')].map(e => e.dataset.cue).join(',')"
        let settled = "document.querySelector('#cue-grid').getAttribute('aria-busy') === 'false'"
        let english = try browser.run("return \(cardsShown)").stringValue ?? ""
        _ = try browser.run("""
            window.cardsSeenInFrench = [];
            new MutationObserver(() => {
              if (document.querySelector('.cue-grid') && document.querySelector('#learner').textContent.endsWith('FR'))
                window.cardsSeenInFrench.push({ ids: \(cardsShown), tappable: [...document.querySelectorAll('.cue-card')].some(e => !e.disabled) });
            }).observe(document.body, { childList: true, subtree: true });
            """)
        try browser.click("[data-language='fr']")
        XCTAssertTrue(try browser.wait(until: "return document.querySelector('#learner').textContent.endsWith('FR') && \(cardsShown) !== '\(english)'",
                                       timeout: 20), "the French cards did not come")
        XCTAssertTrue(try browser.run("return \(settled)").boolValue ?? false, "the French cards are still busy")
        let french = try browser.run("return \(cardsShown)").stringValue ?? ""
        XCTAssertEqual(try browser.run("return window.cardsSeenInFrench.filter(s => s.ids !== '\(french)' && s.tappable).length").intValue, 0,
                       "the English cards could be tapped while the learner practised French")
        try browser.click("[data-language='en']")
        XCTAssertTrue(try browser.wait(until: "return document.querySelector('#learner').textContent.endsWith('EN') && \(settled)", timeout: 20))

        // An answer, held aloud.
        try browser.click(".cue-card")
        XCTAssertNotNil(try browser.wait(for: "#screen-answer"))
        try browser.pointer(true, on: "#cue-talk")
        XCTAssertTrue(try browser.wait(until: "return window.practicedCues.answer && window.practicedCues.answer.state === 'recording'", timeout: 10))
        try shootCues("cue-answer-recording", longTexts: false)
        let from = rig.microphone.written.value
        rig.microphone.say(KioskRig.learner)
        XCTAssertTrue(rig.microphone.written.wait(timeout: 20) { $0 >= from + KioskRig.learner.count + 4_800 })
        try browser.pointer(false, on: "#cue-talk")
        XCTAssertNotNil(try browser.wait(for: "#transcript", timeout: 30), "no transcript")
        XCTAssertNotNil(try browser.wait(for: "#cue-cefr", timeout: 30, text: { $0 == "B1" }), "no evaluation")
        try assertOnOneLine("#cue-cefr")
        XCTAssertEqual(try count("#grammar-mistakes li"), 2)
        XCTAssertNotNil(try browser.find("#improved"))
        XCTAssertNotNil(try browser.find("#next-steps"))
        try shootCues("cue-results")
        let loud = rig.loudSamples
        try browser.click("#hear")
        XCTAssertTrue(rig.heard.wait(timeout: 20) { $0.loud > loud + 1_000 }, "the answer was not heard again")
        XCTAssertTrue(FileManager.default.fileExists(atPath: rig.directory + "/state/cue-playback.m4a"), "played from the state folder")
        // And slower (issue 69): the same recording at 0.75, at the same pitch.
        let heard = rig.loudSamples
        try browser.click("#hear-slower")
        XCTAssertTrue(try browser.wait(until: """
            return window.practicedKiosk.messages.some(m => m.direction === 'in' && m.message.result
              && m.message.result.rate === 0.75 && m.message.result.recording_id !== undefined);
            """, timeout: 20), "cue.play at 0.75 was not answered")
        XCTAssertTrue(rig.heard.wait(timeout: 20) { $0.loud > heard + 1_000 }, "the answer was not heard again slower")

        // The history has it, whole.
        try browser.click("#back")
        try browser.click("#tab-history")
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.history-item').length === 1", timeout: 20), "the history")
        try shootCues("cue-history")
        try browser.click(".history-item")
        XCTAssertNotNil(try browser.wait(for: "#screen-recording #cue-cefr", timeout: 10, text: { $0 == "B1" }))
        try assertOnOneLine("#cue-cefr")
        try assertOnOneLine("#back")
        try shootCues("cue-history-recording")
        try checkMessagesAgainstTheSchema(refusalsExpected: ["signin.code"])
        // Signing out ends the visit: the page forgets it (loaded anew) and shows the attract
        // screen; the next learner's touch brings the sign-in.
        _ = try browser.run("window.__pageOfTheLastVisit = true")
        try browser.click("#signout")
        XCTAssertTrue(try browser.wait(until: "return window.__pageOfTheLastVisit === undefined && document.getElementById('attract') !== null", timeout: 30),
                      "signing out did not end the visit")
        let heardAgain = rig.directory + "/state/cue-playback.m4a"
        XCTAssertFalse(FileManager.default.fileExists(atPath: heardAgain), "the recording heard again stayed on disk")
        XCTAssertFalse(FileManager.default.fileExists(atPath: rig.directory + "/state/chatterbox-tokens.json"))
        try beginVisit()
        XCTAssertNotNil(try browser.wait(for: "#screen-signin"), "the next learner is not asked to sign in")
    }

    /// The text of `selector` (a CEFR level, a button's label) is one line at both kiosk
    /// sizes: beside a long summary or title, a flex item once shrank to "B" over "1", "Ba"
    /// over "ck". The lines are the text's own boxes (a Range's client rectangles).
    private func assertOnOneLine(_ selector: String, file: StaticString = #filePath, line: UInt = #line) throws {
        for (w, h) in browser.kioskSizes {
            try browser.resize(width: w, height: h)
            let lines = try browser.run("""
                const range = document.createRange(); range.selectNodeContents(document.querySelector(arguments[0]));
                return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
                """, [.string(selector)])
            XCTAssertEqual(lines, .int(1), "\(selector) broke over lines at \(w)x\(h)", file: file, line: line)
        }
        try browser.resize(width: browser.kioskSizes.last!.width, height: browser.kioskSizes.last!.height)
    }

    /// A cue screen at both kiosk sizes.
    private func shootCues(_ name: String, longTexts: Bool = true) throws {
        for (w, h) in browser.kioskSizes {
            try browser.resize(width: w, height: h)
            try browser.screenshot(to: "\(screenshots)/\(name)-\(w)x\(h).png")
        }
        // Not under a finger that holds push-to-talk: the page is not redrawn then.
        if longTexts { try checkLongTexts(name) }
        try browser.resize(width: browser.kioskSizes.last!.width, height: browser.kioskSizes.last!.height)
    }

    /// Two strangers in a row on a shared kiosk (idle times shortened): the first has a
    /// conversation with its review and summary, looks at the profile, starts again, takes a
    /// turn the backend is slow to take, and walks away. The upload holds the idle clock, the
    /// turn reaches practice-sim exactly once, then "Still there?" counts down and the visit
    /// ends: the page loads itself anew on the attract screen. The second learner's screens,
    /// the profile included, show nothing of the first, and no file the browser or the bridge
    /// keeps holds the first learner's words or weak points.
    func testTwoLearnersInARowTheSecondSeesNothingOfTheFirst() throws {
        try start(visiting: false, arguments: ["--kiosk-idle-warning-s", "3", "--kiosk-idle-reset-s", "6"]) { $0.pace = 2 }
        XCTAssertNotNil(try browser.wait(for: "#attract", timeout: 30), "no attract screen")
        let attract = try browser.run("return document.getElementById('attract').innerText").stringValue ?? ""
        XCTAssertTrue(attract.contains("點一下開始") && attract.contains("Touch to start"), "the attract screen in both languages: \(attract)")
        XCTAssertTrue(attract.contains("AI"), "it says what the kiosk offers: \(attract)")
        try shootPlain("attract")
        try beginVisit()

        // The first learner: a conversation, its review and summary.
        try browser.click("[data-topic='travel']")
        XCTAssertNotNil(try browser.wait(for: ".line.tutor", timeout: 30), "no greeting")
        try waitForStage("ready")
        try holdToTalk(KioskRig.learner, byTouch: true)
        XCTAssertNotNil(try browser.wait(for: ".line.you", timeout: 30), "no transcript")
        try waitForStage("ready")
        let said = try browser.run("return [...document.querySelectorAll('.line.you .said')].map(e => e.textContent)").arrayValue?
            .compactMap(\.stringValue).filter { $0.count > 12 } ?? []
        XCTAssertFalse(said.isEmpty, "the first learner's words")
        try browser.click("#end")
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.mark').length > 0", timeout: 30), "no marks")
        try waitForStage("reviewed")
        try browser.click("#finish")
        XCTAssertNotNil(try browser.wait(for: "#screen-summary", timeout: 30), "no summary")
        try browser.click("#done")
        XCTAssertNotNil(try browser.wait(for: "#screen-topics", timeout: 20))
        try browser.click("#tab-profile")
        XCTAssertNotNil(try browser.wait(for: "#cefr", timeout: 20))
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.pattern').length > 0", timeout: 20), "the review taught the profile nothing")
        let weakPoints = try browser.run("return [...document.querySelectorAll('.pattern summary')].map(e => e.textContent)").arrayValue?
            .compactMap(\.stringValue) ?? []
        try browser.click("#tab-practice")

        // Again, a turn the backend takes 2 s to accept, and the learner walks away.
        try browser.click("[data-topic='travel']")
        try waitForStage("ready")
        let chats = rig.chatRequests.count
        rig.sim.simulator.faults.latencyMs = 2_000
        try holdToTalk(KioskRig.learner2)
        try waitForStage("uploading", timeout: 10)
        XCTAssertNotNil(try browser.wait(for: "#visit-warning", timeout: 60), "no warning after the learner left")
        rig.sim.simulator.faults.latencyMs = 0
        XCTAssertEqual(try browser.run("return document.getElementById('visit-countdown').textContent").stringValue.flatMap(Int.init).map { $0 > 0 && $0 <= 6 },
                       true, "the countdown")
        try shootPlain("still-there")
        _ = try browser.run("window.__pageOfTheLastVisit = true")
        XCTAssertTrue(try browser.wait(until: "return window.__pageOfTheLastVisit === undefined && document.getElementById('attract') !== null", timeout: 30),
                      "the idle visit did not end on the attract screen: \((try? pageState()) ?? "?")")
        XCTAssertEqual(rig.chatRequests.count, chats + 1, "the turn on its way when the learner left reached practice-sim exactly once")
        XCTAssertEqual(try browser.run("return document.getElementById('attract').innerText").stringValue, attract, "the attract screen shows no learner's data")

        // From outside the browser: nothing of the first visit in the folders the UI's user,
        // the bridge and the browser keep, nor in the daemon's state.
        let folders = [rig.directory, browser.directory.path, NSHomeDirectory() + "/.local/share/cog", NSHomeDirectory() + "/.cache/cog"]
        for text in said + weakPoints {
            for folder in folders where FileManager.default.fileExists(atPath: folder) {
                XCTAssertEqual(KioskPageChecks.files(under: folder, holding: text, except: []), [], "a file holds the first learner's \"\(text)\"")
            }
        }

        // The second learner.
        try beginVisit()
        XCTAssertNotNil(try browser.wait(for: "#screen-topics", timeout: 20))
        XCTAssertEqual(try count(".line"), 0)
        try browser.click("#tab-profile")
        XCTAssertNotNil(try browser.wait(for: "#cefr", timeout: 20))
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.dimension').length === 3 && document.querySelectorAll('.pattern').length === 0",
                                       timeout: 20), "the second learner's profile shows weak points")
        let page = try browser.run("return document.body.innerText + JSON.stringify(window.practicedKiosk.store.state) + JSON.stringify(window.practicedKiosk.store.profile)")
            .stringValue ?? ""
        for text in said + weakPoints { XCTAssertFalse(page.contains(text), "the second learner sees the first's \"\(text)\"") }
        XCTAssertEqual(try browser.text(try XCTUnwrap(try browser.find("#cefr"))), "—", "a new learner has no level")
        try shootPlain("second-learner-profile")
    }

    /// Where the page is, for a failure's message.
    private func pageState() throws -> String {
        (try browser.run("""
            return JSON.stringify({ href: location.href, visit: document.body?.dataset.visit, old: window.__pageOfTheLastVisit === true,
              link: window.practicedKiosk?.store.link, token: (window.practicedKiosk?.connection.token ?? '').length,
              shown: (document.body?.innerText ?? '').slice(0, 300) })
            """).stringValue ?? "?") + "; the bridge: " + String(DaemonHarness.read((bridgeOutput as NSString).deletingLastPathComponent + "/bridge.err").suffix(600))
    }

    /// The screen at both kiosk sizes, as it is (no long-word pass: a countdown runs).
    private func shootPlain(_ name: String) throws {
        for (w, h) in browser.kioskSizes {
            try browser.resize(width: w, height: h)
            try browser.screenshot(to: "\(screenshots)/\(name)-\(w)x\(h).png")
        }
    }

    /// The bridge relays to the daemon only for the token the launcher made at this start,
    /// offered as the WebSocket's subprotocol: a WebSocket without it, with another, a
    /// longer or a shorter one, two of them, or the right one in the URL's query (where
    /// a server may log it) gets 403 and never reaches the socket
    /// (docs/threat-model.md); the static files are served to anyone.
    func testTheBridgeRelaysOnlyForItsToken() throws {
        try start(browsing: false)
        let launch = try XCTUnwrap(URL(string: address)?.path)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: launch)[.posixPermissions] as? Int, 0o600, "the launch page is the user's alone")
        let token = try XCTUnwrap(DaemonHarness.read(launch).firstMatch(of: /#token=([0-9a-f]{64})/).map { String($0.1) })
        let port = try XCTUnwrap(DaemonHarness.read(launch).firstMatch(of: /127\.0\.0\.1:([0-9]+)/).map { String($0.1) })
        let base = try XCTUnwrap(URL(string: "http://127.0.0.1:\(port)"))
        func upgrade(_ query: String, protocols: String) throws -> RawHTTPResponse? {
            let headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                           ("Sec-WebSocket-Version", "13"), ("Sec-WebSocket-Protocol", protocols)]
            return try? RawHTTP.exchange(base, "GET", "/websockify\(query)", headers: headers, timeout: 5) { body in
                String(decoding: body, as: UTF8.self).contains("\"type\":\"hello\"")
            }
        }
        let control = try rig.daemon.client()
        let refused: [(String, String)] = [
            ("", "binary"), ("", "binary, practiced.token."), ("", "binary, practiced.token.\(String(repeating: "0", count: 64))"),
            ("", "binary, practiced.token.\(token)x"), ("", "binary, practiced.token.\(token.prefix(63))"),
            ("", "binary, practiced.token.\(token), practiced.token.\(String(repeating: "0", count: 64))"),
            ("", "binary, practiced.token.%3Cscript%3E"), ("?token=\(token)", "binary"),
        ]
        for (query, protocols) in refused {
            let answer = try upgrade(query, protocols: protocols)
            XCTAssertEqual(answer?.status, 403, "\(query) \(protocols): not refused")
            XCTAssertFalse(String(decoding: answer?.body ?? [], as: UTF8.self).contains("hello"), "\(query) \(protocols): relayed to the daemon")
        }
        XCTAssertEqual(try control.request(Command.Status.self)["clients"], .int(1), "no stranger reached the socket")
        // The right token: upgraded, and the daemon's hello comes through.
        let admitted = try XCTUnwrap(try upgrade("", protocols: "binary, practiced.token.\(token)"), "no answer for the right token")
        XCTAssertEqual(admitted.status, 101)
        XCTAssertTrue(String(decoding: admitted.body, as: UTF8.self).contains("practiced/1"), "the daemon's hello through the bridge")
        // The UI's files are public, its icon among them.
        let index = try RawHTTP.exchange(base, "GET", "/index.html")
        XCTAssertEqual(index.status, 200)
        XCTAssertTrue(String(decoding: index.body, as: UTF8.self).contains("js/app.js"))
        XCTAssertEqual(try RawHTTP.exchange(base, "GET", "/icon.svg").status, 200)
        // Nine WebSockets, eight refused: the bridge's log says so without the token.
        let log = DaemonHarness.read(bridgeOutput) + DaemonHarness.read((bridgeOutput as NSString).deletingLastPathComponent + "/bridge.err")
        XCTAssertGreaterThanOrEqual(log.components(separatedBy: "without this start's token").count - 1, refused.count, log)
        XCTAssertFalse(log.contains(token), "the bridge logged the token")
    }

    /// The page on the real TalkCo server's recorded answers (``TraceReplayServer`` over TCP,
    /// the session `8074418d-…`): its topics, a greeting and a typed turn, the review with
    /// the server's own marks and a correction, the summary and the profile, as the real
    /// server wrote them (Chinese text, nulls and all).
    func testTheRealServersAnswersAreShown() throws {
        let server = try TraceReplayServer()
        replay = server
        try server.queue("01", "30", "02", "03", "07", "17", "18", "19", "20", "21", "24", "25", "26", "27")
        let daemon = try DaemonHarness(backend: server.baseURL, arguments: ["--review-poll-ms", "100", "--kiosk-visits", "personal", "--user-id", "630478590", "--user-name", "Mei"])
        replayDaemon = daemon
        let directory = DaemonHarness.makeDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        try openPage(socket: daemon.socketPath, directory: directory)
        let topics = try XCTUnwrap(Trace.load("01").json?.arrayValue ?? Trace.load("01").json?["topics"]?.arrayValue)
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.topic').length === \(topics.count)"), "the server's \(topics.count) topics")
        try browser.click("[data-topic='daily_life']")
        XCTAssertNotNil(try browser.wait(for: ".line.tutor", timeout: 30), "the recorded greeting's words")
        try waitForStage("ready")
        try browser.type("I very like cooking, especially beef noodles.", into: "#say-input")
        try browser.click("#say button[type=submit]")
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.line.tutor').length >= 2", timeout: 30), "the recorded reply's words")
        try waitForStage("ready")
        try shoot("real-server-conversation")

        try browser.click("#end")
        try waitForStage("reviewed")
        // The recorded review has four segments with a mark each.
        let segments = try XCTUnwrap(Trace.load("19").json?["segments"]?.arrayValue)
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.segment').length === \(segments.count)", timeout: 10))
        let marks = segments.reduce(0) { $0 + ($1["ai_marks"]?.arrayValue?.count ?? 0) }
        XCTAssertEqual(try count(".mark"), marks)
        try browser.type("這句怎麼說比較自然？", into: ".segment .ask-input")
        try browser.click(".segment .ask button[type=submit]")
        XCTAssertTrue(try browser.wait(until: "return document.querySelectorAll('.correction').length > 0", timeout: 30), "the recorded correction")
        try shoot("real-server-review")
        try browser.click("#finish")
        XCTAssertNotNil(try browser.wait(for: "#overall", timeout: 30), "the recorded summary")
        let overall = try XCTUnwrap(Trace.load("27").json?["summary"]?["overall"]?.stringValue)
        XCTAssertEqual(try browser.text(try XCTUnwrap(try browser.find("#overall"))), overall)
        try shoot("real-server-summary")
        try checkMessagesAgainstTheSchema()
    }

    func testAnEmptyAnswerAndARestartedDaemonAreShownForWhatTheyAre() throws {
        // While the daemon is away, the page's reconnections fail, as Chromium logs.
        expectedConsoleErrors = ["WebSocket connection to"]
        try start { $0.pace = 1 }
        try browser.click("[data-topic='food_dining']")
        try waitForStage("ready")
        // The backend hears nothing in the turn: the tutor's "didn't catch that" is cut and
        // the learner is asked again.
        rig.sim.simulator.faults.lateVoidTranscript = true
        try holdToTalk(KioskRig.learner)
        XCTAssertNotNil(try browser.wait(for: "[data-notice='emptyAnswer']", timeout: 30), "the empty answer was not told")
        try waitForStage("ready")
        rig.sim.simulator.faults.lateVoidTranscript = false
        try shoot("conversation-empty-answer")

        // The daemon dies: the page says so and reconnects when it is back, then shows the
        // daemon's state (a new daemon: idle, home).
        _ = try browser.run("window.__pageOfTheLastVisit = true")
        rig.daemon.process.terminate(signal: SIGKILL)
        XCTAssertNotNil(try browser.wait(for: "#link[data-state='closed']", timeout: 10), "the lost daemon was not told")
        try shoot("daemon-gone")
        try rig.startDaemon()
        XCTAssertTrue(try browser.wait(until: "return document.getElementById('link')?.dataset.state === 'open'", timeout: 30), "the page did not reconnect")
        // The new daemon ended the visit the killed one left (reason restart): the page
        // forgets it as well, back on the attract screen with no line of the conversation.
        XCTAssertTrue(try browser.wait(until: "return window.__pageOfTheLastVisit === undefined && document.getElementById('attract') !== null", timeout: 30),
                      "the visit the restart ended is still shown (the page was not loaded anew)")
        XCTAssertEqual(try count(".line"), 0, "the last learner's lines survived the restart")
        try waitForStage("idle")
        XCTAssertNotNil(try browser.wait(for: "#screen-topics", timeout: 10))

        // Another client starts a session: the page follows it and says so.
        _ = try rig.daemon.client().request(Command.SessionStart.self, ["mode": "conversation", "topic_id": "travel"], timeout: 20)
        XCTAssertNotNil(try browser.wait(for: "[data-notice='otherClient']", timeout: 20))
        try waitForStage("ready")
        try checkMessagesAgainstTheSchema()
    }
}
