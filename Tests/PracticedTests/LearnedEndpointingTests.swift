import AudioKernel
import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import SpeechModels
import TestSupport
import XCTest

/// `speech.endpoint = model` in the daemon as it ships: PulseAudio's microphone fed with a
/// recorded human voice that hesitates mid-phrase (``HesitantSpeech``), practice-sim on TCP,
/// Silero VAD and smart-turn loaded from the files .ci/setup takes out of their pinned wheels.
final class LearnedEndpointingTests: XCTestCase {
    static let models = ProcessInfo.processInfo.environment["PRACTICED_MODELS_DIR"] ?? "/opt/practiced-ci/models"
    var rig: KioskRig!

    override func tearDown() {
        rig?.stop()
        rig = nil
    }

    /// The daemon with the models, a conversation greeted, `listen` sent and `stimulus` said
    /// into the microphone: the events watched, a client, and where the turn's events begin.
    private func listen(to stimulus: HesitantSpeech.Stimulus) throws -> (watcher: EventWatcher, control: ControlClient, mark: Int) {
        rig = try KioskRig(arguments: ["--speech-endpoint", "model", "--speech-models-dir", Self.models])
        let watcher = try rig.watcher(topics: ["session", "playback", "speech"])
        let control = try rig.daemon.client()
        _ = try control.request(Command.SessionStart.self, ["topic_id": "travel"])
        XCTAssertNotNil(watcher.waitForStage("ready"))
        XCTAssertNotNil(watcher.wait(for: Event.PlaybackFinished.self))
        XCTAssertTrue(rig.daemon.waitForModels(), "the models were not loaded for the session")
        let mark = watcher.count
        _ = try control.request(Command.Listen.self)
        rig.microphone.say(stimulus.samples)
        return (watcher, control, mark)
    }

    /// June (Canadian French) stops 1.2 s inside her first phrase: smart-turn hears the
    /// hesitation as unfinished (`speech.paused`, waiting) and the end of the phrase as
    /// finished: one turn, ended by the model, holding the whole phrase.
    func testAHesitationMidPhraseIsWaitedThroughAndTheFinishedPhraseEndsTheTurn() throws {
        let stimulus = try XCTUnwrap(HesitantSpeech.stimuli(pauses: [1.2], readers: ["fr_CA_f_June"]).first)
        let (watcher, _, mark) = try listen(to: stimulus)
        guard let paused = watcher.wait(for: Event.SpeechPaused.self, after: mark) else { return XCTFail("no speech.paused at the hesitation") }
        XCTAssertEqual(paused["data"]?["waiting"], true)
        guard let recorded = watcher.wait(for: Event.TurnRecorded.self, after: mark, timeout: 30) else { return XCTFail("no turn") }
        let duration = try XCTUnwrap(recorded["data"]?["duration_s"]?.doubleValue)
        let probability = recorded["data"]?["finished_probability"]?.doubleValue
        print("figures: learned endpointing: hesitation answered \(paused["data"]?["probability"] ?? .null); turn \(duration) s "
              + "(phrase and hesitation \(String(format: "%.2f", stimulus.end - 1)) s), \(recorded["data"]?["end_reason"] ?? .null) at \(probability ?? -1)")
        // Finished (smart-turn answered 0.90 to 0.95 at its end, the threshold being 0.9), or
        // else the pause ceiling: either way after the phrase, never at the hesitation.
        let reason = recorded["data"]?["end_reason"]?.stringValue
        XCTAssertTrue(reason == "finished" || reason == "pause_ceiling", "\(reason ?? "none")")
        if reason == "finished" { XCTAssertGreaterThanOrEqual(probability ?? 0, 0.9) }
        // The turn holds the phrase from before its first syllable (pre-roll) to past its end,
        // and ends within a second of it when finished, the pause ceiling (2 s) otherwise.
        XCTAssertGreaterThan(duration, stimulus.end - 1, "the turn was cut before the phrase ended")
        XCTAssertLessThan(duration, stimulus.end - 1 + (reason == "finished" ? 1.3 : 2.6))
        // What the learner waited after the last word is told with the turn (and counted in
        // practiced_turn_end_wait_seconds): within the second, or the ceiling's 2 s.
        let wait = try XCTUnwrap(recorded["data"]?["end_wait_ms"]?.doubleValue, "turn.recorded's end_wait_ms")
        XCTAssertGreaterThan(wait, 100)
        XCTAssertLessThan(wait, reason == "finished" ? 1_000 : 2_300)
        XCTAssertEqual(watcher.all(Event.TurnRecorded.self, after: mark).count, 1)
    }

    /// The next kiosk's babble, 9 dB under the learner, starts 4 s before June speaks and goes on
    /// 10 s after: Silero hears it as speech throughout. One turn, holding her phrase and ended
    /// after it (the room's level learned from how her voice rose over it), and nothing after.
    func testALearnerOverTheNextKiosksBabbleIsOneTurnAndTheBabbleNone() throws {
        let stimulus = try XCTUnwrap(HesitantSpeech.stimuli(pauses: [0], readers: ["fr_CA_f_June"], babbleBelow: 9).first)
        let (watcher, control, mark) = try listen(to: stimulus)
        guard let recorded = watcher.wait(for: Event.TurnRecorded.self, after: mark, timeout: 40) else { return XCTFail("no turn") }
        let duration = try XCTUnwrap(recorded["data"]?["duration_s"]?.doubleValue)
        print("figures: learned endpointing over babble: turn \(duration) s (babble from 1 s, phrase \(stimulus.start)–\(String(format: "%.2f", stimulus.end)) s), "
              + "\(recorded["data"]?["end_reason"] ?? .null) at \(recorded["data"]?["finished_probability"] ?? .null)")
        let reason = recorded["data"]?["end_reason"]?.stringValue
        XCTAssertTrue(reason == "finished" || reason == "pause_ceiling", "\(reason ?? "none")")
        // It began with the babble (1 s in, its pre-roll before) and holds the phrase to its end.
        XCTAssertGreaterThan(duration, stimulus.end - 1.2, "the turn ended before the phrase did")
        XCTAssertLessThan(duration, stimulus.end + 3.6)
        // The babble goes on for 10 s after the phrase: no second turn, not even a discarded one.
        XCTAssertTrue(Poll.until(timeout: 30) { self.rig.microphone.isQuiet }, "the microphone's audio was not all played")
        XCTAssertNotNil(try control.request(Command.Ping.self))  // the daemon has taken in what it heard
        XCTAssertEqual(watcher.all(Event.TurnRecorded.self, after: mark).count, 1, "\(watcher.names(after: mark))")
        XCTAssertEqual(watcher.all(Event.TurnStarted.self, after: mark).count, 1, "\(watcher.names(after: mark))")
        // Not asserted: whether a loud moment of the babble after the reply is heard as speech
        // starting (no turn: the session no longer listens). It was in 1 of 13 runs (CI, a
        // loaded machine); the room's level is learned as an average, and the babble's peaks
        // can pass the start floor 6 dB above it. Printed, so that the runs tell how often.
        let starts = watcher.all(Event.SpeechStarted.self, after: mark).count
        print("figures: learned endpointing over babble: \(starts - 1) speech start(s) in the babble after the turn")
    }

    /// A daemon with its models, started: the time from its spawn to `ping` answered, and a
    /// client with the speech topic watched.
    private func startedWithModels(_ arguments: [String], backend: URL? = nil) throws -> (daemon: DaemonHarness, answeredAfter: Double) {
        let spawned = Date()
        let daemon = try DaemonHarness(backend: backend, arguments: arguments, waitReady: false, pinsEndpoint: false)
        var answered: Double?
        _ = Poll.until(timeout: 60) {
            guard let client = try? daemon.client(timeout: 2), (try? client.request(Command.Ping.self)) != nil else { return false }
            answered = Date().timeIntervalSince(spawned)
            return true
        }
        return (daemon, try XCTUnwrap(answered, "practiced never answered ping:\n\(daemon.log)"))
    }

    private func hearing(_ client: ControlClient) -> JSONValue? { (try? client.request(Command.Status.self))?["speech"] }

    private func threads(_ daemon: DaemonHarness) -> [String] { (try? ProcessStatistics(pid: daemon.process.pid).threadNames) ?? [] }

    /// The control socket answers at once, in any build: the model files' digests are checked
    /// before it listens, and their layout (20 s in a debug build) waits for the first
    /// session, beside it. The debug daemon used to load them twice before its socket
    /// (38–40 s), and the README's demo gave up after 10. The session's start loads them
    /// (`speech.models`: loading, then ready) and hands-free turns are the models' from then on.
    func testTheSocketAnswersAtOnceAndTheModelsLoadBesideTheFirstSession() throws {
        let sim = try SimulatorHarness()
        let (daemon, answeredAfter) = try startedWithModels(["--speech-models-dir", Self.models], backend: sim.baseURL)
        print("figures: learned endpointing: ping answered \(String(format: "%.3f", answeredAfter)) s after the daemon was spawned")
        XCTAssertLessThan(answeredAfter, 5, "the socket waited for the models")
        let client = try daemon.client()
        XCTAssertEqual(hearing(client)?["models"], "checked")
        XCTAssertEqual(hearing(client)?["endpoint"], "hangover", "nothing loaded yet: a turn now would end by the hangover rule")
        XCTAssertEqual(hearing(client)?["configured"], "model")
        XCTAssertFalse(threads(daemon).contains("smart-turn"), "the models were loaded before a session needed them: \(threads(daemon))")

        let watcher = try EventWatcher(client: try daemon.client(), topics: ["speech", "session"])
        _ = try client.request(Command.SessionStart.self, ["topic_id": "travel"])
        let loaded = watcher.wait(for: Event.SpeechModels.self, timeout: 60) { $0["hearing"]?["models"] == "ready" }
        XCTAssertNotNil(loaded, "\(watcher.names())\n\(daemon.log)")
        XCTAssertEqual(loaded?["data"]?["hearing"]?["endpoint"], "model")
        XCTAssertEqual(hearing(client)?["models"], "ready")
        XCTAssertTrue(threads(daemon).contains("smart-turn"), "\(threads(daemon))")
        XCTAssertTrue(daemon.log.contains("learned endpointing: models loaded in"), daemon.log)
        // On the best kernels this CPU runs (issue 70), said in the log and in status.
        XCTAssertEqual(hearing(client)?["kernels"]?.stringValue, KernelVariant.best.rawValue)
        XCTAssertTrue(daemon.log.contains("on the \(KernelVariant.best.rawValue) kernels"), daemon.log)
    }

    /// `speech.kernels` holds the daemon to a build of the kernels; one this CPU cannot run,
    /// or a name that is none, stops the start (exit 78) naming the key.
    func testTheKernelsCanBeHeldToTheOnesNamedAndAnUnknownOneStopsTheStart() throws {
        let daemon = try DaemonHarness(arguments: ["--speech-models-dir", Self.models, "--speech-kernels", "portable"])
        XCTAssertEqual(hearing(try daemon.client())?["kernels"], "portable")
        var refused = ["avx9000", "../portable"]
        refused += KernelVariant.allCases.filter { !$0.isSupported }.map(\.rawValue)
        for name in refused {
            let bad = try DaemonHarness(arguments: ["--speech-models-dir", Self.models, "--speech-kernels", name], waitReady: false)
            XCTAssertEqual(try XCTUnwrap(bad.process.waitForExit(timeout: 20), name), 78, name)
            XCTAssertTrue(bad.log.contains("speech.kernels"), bad.log)
        }
    }

    /// The models are loaded for a session and let go when the devices close idle: an idle
    /// kiosk keeps no smart-turn thread, watching the level alone loads nothing, and the next
    /// session loads them again.
    func testTheModelsAreLetGoWhileTheDevicesAreClosed() throws {
        let sim = try SimulatorHarness()
        let (daemon, _) = try startedWithModels(["--speech-endpoint", "model", "--speech-models-dir", Self.models, "--audio-idle-close-s", "1"],
                                                backend: sim.baseURL)
        let client = try daemon.client()
        func capture() -> String? { (try? client.request(Command.Status.self))?["devices"]?["capture"]?["state"]?.stringValue }
        _ = try client.request(Command.SessionStart.self, ["topic_id": "travel"])
        XCTAssertTrue(Poll.until(timeout: 60) { self.hearing(client)?["models"] == "ready" }, "\(hearing(client) ?? .null)")
        XCTAssertTrue(threads(daemon).contains("smart-turn"), "\(threads(daemon))")
        let loaded = try ProcessStatistics(pid: daemon.process.pid).residentBytes
        XCTAssertTrue(Poll.until(timeout: 30) { (try? client.request(Command.SessionClose.self)) != nil && self.sessionIsIdle(client) })
        XCTAssertTrue(Poll.until(timeout: 30) { capture() == "idle" }, "\(capture() ?? "no state")")
        // smart-turn's thread ends with the close, its helper when the model is freed; the
        // memory goes back at the daemon's next device checks (every 2 s).
        XCTAssertTrue(Poll.until(timeout: 10) { !self.threads(daemon).contains { $0.hasPrefix("smart-turn") } }, "\(threads(daemon))")
        XCTAssertEqual(hearing(client)?["models"], "checked")
        let idle = try ProcessStatistics(pid: daemon.process.pid).residentBytes
        print("figures: learned endpointing: resident \(loaded >> 10) kB loaded, \(idle >> 10) kB with the devices closed")
        // The microphone watched: opened, but no session hears through it, so no models.
        _ = try client.request(Command.LevelWatch.self)
        XCTAssertTrue(Poll.until(timeout: 20) { capture() == "running" })
        XCTAssertFalse(Poll.until(timeout: 3) { self.threads(daemon).contains("smart-turn") }, "a level watcher loaded the models")
        XCTAssertEqual(hearing(client)?["models"], "checked")
    }

    private func sessionIsIdle(_ client: ControlClient) -> Bool {
        (try? client.request(Command.Status.self))?["session"]?["stage"]?.stringValue == "idle"
    }

    /// A model file changed on disk after the start (checked then) is found when a session
    /// loads the models: logged as an error naming it, told (`status.speech`, the metric),
    /// and the learner is heard by the level rule rather than not at all.
    func testAModelChangedAfterTheStartIsLoggedAndTheLevelRuleHears() throws {
        let directory = DaemonHarness.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in ["silero_vad_op18_ifless.onnx", "smart-turn-v3.2-cpu.onnx"] {
            try FileManager.default.copyItem(atPath: "\(Self.models)/\(name)", toPath: "\(directory)/\(name)")
        }
        let sim = try SimulatorHarness()
        let (daemon, _) = try startedWithModels(["--speech-endpoint", "model", "--speech-models-dir", directory], backend: sim.baseURL)
        let client = try daemon.client()
        XCTAssertEqual(hearing(client)?["models"], "checked")
        let whole = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/smart-turn-v3.2-cpu.onnx"))
        try whole.prefix(1_000).write(to: URL(fileURLWithPath: "\(directory)/smart-turn-v3.2-cpu.onnx"))
        _ = try client.request(Command.SessionStart.self, ["topic_id": "travel"])
        XCTAssertTrue(Poll.until(timeout: 60) { self.hearing(client)?["models"] == "failed" }, "\(hearing(client) ?? .null)")
        XCTAssertTrue(hearing(client)?["error"]?.stringValue?.contains("smart-turn-v3.2-cpu.onnx: sha256") == true, "\(hearing(client) ?? .null)")
        XCTAssertEqual(hearing(client)?["endpoint"], "hangover")
        XCTAssertTrue(daemon.log.contains("hands-free turns end by the hangover rule"), daemon.log)
        XCTAssertTrue(try client.request(Command.Metrics.self)["text"]?.stringValue?.contains("practiced_speech_endpoint_degraded 1") == true)
        XCTAssertFalse(threads(daemon).contains("smart-turn"))
    }

    /// The shipped default is the models: a daemon told nothing about the endpoint checks
    /// them. Without its model files (a source build, a partial upgrade) it still starts,
    /// on the hangover rule, and says why: an error in the log, `status.speech`, the snapshot
    /// a UI reads, and `practiced_speech_endpoint_degraded 1` for the operator's alert. With
    /// the level rule named, it needs no files. (It refused to start, exit 78, and the kiosk's
    /// unit restarted it in a loop.)
    func testTheModelsAreTheDefaultAndTheirAbsenceDegradesToTheHangover() throws {
        let daemon = try DaemonHarness(arguments: ["--speech-models-dir", Self.models], pinsEndpoint: false)
        XCTAssertTrue(daemon.log.contains("learned endpointing: Silero VAD and smart-turn v3.2 in \(Self.models) (sha256 checked"), daemon.log)
        XCTAssertEqual(try daemon.client().request(Command.ConfigGet.self)["speech.endpoint"], "model")
        let empty = DaemonHarness.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let level = try DaemonHarness(arguments: ["--speech-endpoint", "hangover", "--speech-models-dir", empty])
        XCTAssertFalse(level.log.contains("learned endpointing"), level.log)
        XCTAssertEqual(hearing(try level.client())?["models"], "off")

        let unconfigured = try DaemonHarness(arguments: ["--speech-models-dir", empty], pinsEndpoint: false)
        let client = try unconfigured.client()
        XCTAssertTrue(unconfigured.log.contains("error practiced: learned endpointing: \(empty)/silero_vad_op18_ifless.onnx: missing"), unconfigured.log)
        let degraded = try XCTUnwrap(hearing(client))
        XCTAssertEqual(degraded["models"], "failed")
        XCTAssertEqual(degraded["endpoint"], "hangover")
        XCTAssertEqual(degraded["configured"], "model")
        XCTAssertTrue(degraded["error"]?.stringValue?.contains("silero_vad_op18_ifless.onnx: missing") == true, "\(degraded)")
        XCTAssertTrue(try client.request(Command.Metrics.self)["text"]?.stringValue?.contains("practiced_speech_endpoint_degraded 1") == true)
        let watcher = try EventWatcher(client: try unconfigured.client(), topics: ["session"])
        let snapshot = watcher.wait(for: DaemonSnapshot.self)
        XCTAssertEqual(snapshot?["data"]?["speech"]?["models"], "failed")
        XCTAssertEqual(try daemon.client().request(Command.Metrics.self)["text"]?.stringValue?.contains("practiced_speech_endpoint_degraded 0"), true)
    }

    /// A models directory without the files, `speech.endpoint = model` asked for by name: the
    /// daemon does not start, and says which file.
    func testAMissingModelStopsTheStartNamingTheFile() throws {
        let empty = DaemonHarness.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let daemon = try DaemonHarness(arguments: ["--speech-endpoint", "model", "--speech-models-dir", empty], waitReady: false)
        let status = try XCTUnwrap(daemon.process.waitForExit(timeout: 20), "the daemon started without its models")
        XCTAssertEqual(status, 78)
        XCTAssertTrue(daemon.log.contains("\(empty)/silero_vad_op18_ifless.onnx: missing"), daemon.log)
        XCTAssertTrue(daemon.log.contains("speech.endpoint = hangover"), daemon.log)
    }

    /// A truncated smart-turn file: refused by its digest, named.
    func testATruncatedModelIsRefusedByItsDigest() throws {
        let directory = DaemonHarness.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.copyItem(atPath: "\(Self.models)/silero_vad_op18_ifless.onnx", toPath: "\(directory)/silero_vad_op18_ifless.onnx")
        let whole = try Data(contentsOf: URL(fileURLWithPath: "\(Self.models)/smart-turn-v3.2-cpu.onnx"))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: "\(directory)/smart-turn-v3.2-cpu.onnx"))
        let daemon = try DaemonHarness(arguments: ["--speech-endpoint", "model", "--speech-models-dir", directory], waitReady: false)
        let status = try XCTUnwrap(daemon.process.waitForExit(timeout: 20), "the daemon started with half a model")
        XCTAssertEqual(status, 78)
        XCTAssertTrue(daemon.log.contains("smart-turn-v3.2-cpu.onnx: sha256"), daemon.log)
    }

    /// A FIFO in the model's place (reading it would block the start for ever) and /dev/zero
    /// behind a link (it never ends): both refused by what they are, without a read.
    func testAFIFOOrAnEndlessFileInTheModelsPlaceIsRefusedUnread() throws {
        let directory = DaemonHarness.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        XCTAssertEqual(mkfifo("\(directory)/silero_vad_op18_ifless.onnx", 0o600), 0)
        let daemon = try DaemonHarness(arguments: ["--speech-endpoint", "model", "--speech-models-dir", directory], waitReady: false)
        XCTAssertEqual(try XCTUnwrap(daemon.process.waitForExit(timeout: 20), "the daemon hung on a FIFO"), 78)
        XCTAssertTrue(daemon.log.contains("silero_vad_op18_ifless.onnx: not a regular file"), daemon.log)

        unlink("\(directory)/silero_vad_op18_ifless.onnx")
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/silero_vad_op18_ifless.onnx", withDestinationPath: "/dev/zero")
        let again = try DaemonHarness(arguments: ["--speech-endpoint", "model", "--speech-models-dir", directory], waitReady: false)
        XCTAssertEqual(try XCTUnwrap(again.process.waitForExit(timeout: 20), "the daemon read /dev/zero"), 78)
        XCTAssertTrue(again.log.contains("silero_vad_op18_ifless.onnx: not a regular file"), again.log)
    }
}
