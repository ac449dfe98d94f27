import AudioKernel
import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// Cue practice end to end with every part real (``KioskRig``): the daemon as a process with
/// `backend.kind = chatterbox`, practice-sim's Chatterbox backend over TCP, PulseAudio
/// headless with the microphone fed recorded speech, clients on the socket.
final class CuePracticeTests: XCTestCase {
    var rig: KioskRig!
    let email = "kiosk-learner@chatterbox.invalid"

    override func tearDown() {
        rig?.stop()
        rig = nil
    }

    private func signIn(_ control: ControlClient) throws -> JSONValue {
        XCTAssertEqual(try control.request(Command.SignInRequestCode.self, ["email": .string(email)])["sent"], true)
        return try control.request(Command.SignInCode.self, ["email": .string(email), "code": "123456"])
    }

    /// Sign in with the mailed code, choose cards, answer one aloud, and get the transcript
    /// and the whole evaluation; the answer that went up is AAC-LC in MPEG-4 that ffprobe
    /// reads, and the learner hears it again through the kiosk's speaker.
    func testACuePracticeFromSignInToEvaluation() throws {
        rig = try KioskRig(chatterbox: ChatterboxHarness())
        let control = try rig.daemon.client()
        let watcher = try rig.watcher(topics: ["cue", "playback"])
        let status = try control.request(Command.Status.self)
        XCTAssertEqual(status["backend"]?["kind"], "chatterbox")
        XCTAssertEqual(status["learner"]?["signed_in"], false)
        XCTAssertEqual(control.failure(Command.CuesGet.self)?.code, .signInRequired)
        // TalkCo's conversation is not this backend's.
        let conversation = control.failure(Command.SessionStart.self, ["topic_id": "travel"])
        XCTAssertEqual(conversation?.code, .invalidState)
        XCTAssertTrue(conversation?.message.contains("backend.kind = talkco") ?? false, "\(String(describing: conversation))")
        // A wrong code is refused by its hint; the right one signs in with a profile.
        XCTAssertEqual(try control.request(Command.SignInRequestCode.self, ["email": .string(email)])["sent"], true)
        let wrong = control.failure(Command.SignInCode.self, ["email": .string(email), "code": "000000"])
        XCTAssertEqual(wrong?.code, .refused)
        XCTAssertEqual(wrong?.reason, "invalid_login_code")
        let learner = try control.request(Command.SignInCode.self, ["email": .string(email), "code": "123456"])
        XCTAssertEqual(learner["signed_in"], true)
        XCTAssertEqual(learner["language"], "en")
        XCTAssertNotNil(learner["profile_id"]?.intValue)
        XCTAssertEqual(learner["languages"]?.arrayValue?.count, 5)
        XCTAssertNotNil(watcher.wait(for: Event.SignInChanged.self, where: { $0["learner"]?["signed_in"] == true }))
        XCTAssertEqual(try control.request(Command.Status.self)["learner"]?["email"]?.stringValue, email)

        // The tokens are kept 0600 in the state directory and never logged.
        let tokens = rig.directory + "/state/chatterbox-tokens.json"
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: tokens)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o777, 0o600)
        XCTAssertFalse(rig.daemon.log.contains("sim.access."), "a token in the log")

        let cards = try XCTUnwrap(try control.request(Command.CuesGet.self)["cues"]?.arrayValue)
        XCTAssertEqual(cards.count, 5)
        let shuffled = try XCTUnwrap(try control.request(Command.CuesGet.self, ["shuffle": true])["cues"]?.arrayValue)
        XCTAssertNotEqual(shuffled.compactMap { $0["cue_id"]?.intValue }, cards.compactMap { $0["cue_id"]?.intValue })
        let cue = try XCTUnwrap(shuffled.first?["cue_id"]?.intValue)

        // Hands-free: the recorder waits for speech and ends the answer on silence.
        let mark = watcher.events.value.count
        XCTAssertEqual(try control.request(Command.CueRecord.self, ["cue_id": .int(cue), "hands_free": true])["stage"], "listening")
        rig.microphone.say(KioskRig.learner)
        guard let recorded = watcher.wait(for: Event.CueRecorded.self, after: mark) else { return }
        XCTAssertEqual(recorded["data"]?["cue_id"]?.intValue, cue)
        guard let spooled = watcher.wait(for: Event.CueSpooled.self, after: mark) else { return }
        XCTAssertGreaterThan(spooled["data"]?["bytes"]?.intValue ?? 0, 1_000)
        for step in ["intent", "put", "complete", "found"] {
            XCTAssertNotNil(watcher.wait(for: Event.CueUploadStep.self, after: mark, where: { $0["step"]?.stringValue == step }), step)
        }
        guard let uploaded = watcher.wait(for: Event.CueUploaded.self, after: mark),
              let recording = uploaded["data"]?["recording_id"]?.intValue else { return }
        guard let transcript = watcher.wait(for: Event.CueTranscript.self, after: mark, where: { $0["status"] == "ready" }) else { return }
        XCTAssertEqual(transcript["data"]?["transcript"]?.stringValue?.hasPrefix("Yesterday I go to the park"), true)
        guard let evaluated = watcher.wait(for: Event.CueEvaluation.self, after: mark, where: { $0["status"] == "ready" }) else { return }
        let evaluation = try XCTUnwrap(evaluated["data"]?["evaluation"])
        XCTAssertEqual(evaluation["cefr_level"], "B1")
        XCTAssertEqual(evaluation["grammar_mistakes"]?.arrayValue?.first?["correction"], "I went to")
        XCTAssertNotNil(evaluation["improved_version"]?.stringValue)
        XCTAssertEqual(evaluation["unnatural_words"]?.arrayValue?.first?["better_word"], "everyone")

        // What went up: AAC-LC in MPEG-4, 24 kHz mono, as long as the answer.
        let upload = try XCTUnwrap(rig.cues?.simulator.uploads.last)
        let m4a = rig.directory + "/uploaded.m4a"
        XCTAssertTrue(FileManager.default.createFile(atPath: m4a, contents: Data(upload)))
        let probe = try runTool("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,profile,sample_rate,channels", "-of", "compact", m4a])
        XCTAssertTrue(probe.contains("codec_name=aac|profile=LC|sample_rate=24000|channels=1"), probe)
        XCTAssertEqual(try runTool("ffmpeg", ["-v", "warning", "-i", m4a, "-f", "null", "-"]).trimmingCharacters(in: .whitespacesAndNewlines), "")

        // The history has it with its results; the learner hears it again.
        let history = try control.request(Command.CueHistory.self)
        XCTAssertEqual(history["recordings"]?.arrayValue?.first?["recording_id"]?.intValue, recording)
        XCTAssertEqual(history["recordings"]?.arrayValue?.first?["evaluation_status"], "ready")
        let loud = rig.loudSamples
        let played = try control.request(Command.CuePlay.self, ["recording_id": .int(recording)])
        XCTAssertGreaterThan(played["duration_s"]?.doubleValue ?? 0, 1)
        XCTAssertNotNil(watcher.wait(for: Event.PlaybackFinished.self, after: mark))
        XCTAssertTrue(rig.heard.wait(timeout: 5) { $0.loud > loud + 1_000 }, "the recording was not heard")

        // Signing out forgets the tokens; cue commands then ask for sign-in.
        XCTAssertEqual(try control.request(Command.SignOut.self)["signed_in"], false)
        XCTAssertFalse(FileManager.default.fileExists(atPath: tokens))
        XCTAssertEqual(control.failure(Command.CuesGet.self)?.code, .signInRequired)
    }

    /// An answer recorded while the files service cannot be reached stays spooled through
    /// retries and a daemon killed outright, and goes up once the next start can reach it and
    /// its learner, signed out with the visit the kill left, signs in again.
    func testAnAnswerSurvivesAnOutageAndARestart() throws {
        let closed = try SimulatorHarness.closedPortURL().absoluteString
        let cues = try ChatterboxHarness { $0.uploadBase = closed }
        rig = try KioskRig(chatterbox: cues)
        var control = try rig.daemon.client()
        var watcher = try rig.watcher(topics: ["cue"])
        _ = try signIn(control)
        let cue = try XCTUnwrap(try control.request(Command.CuesGet.self)["cues"]?.arrayValue?.first?["cue_id"]?.intValue)
        XCTAssertEqual(try control.request(Command.CueRecord.self, ["cue_id": .int(cue)])["stage"], "recording")
        rig.microphone.say(KioskRig.learner)
        XCTAssertTrue(rig.microphone.spoken.wait(timeout: 10) { $0 >= KioskRig.learner.count })
        _ = try control.request(Command.CueStop.self)
        guard let spooled = watcher.wait(for: Event.CueSpooled.self) else { return }
        let answer = try XCTUnwrap(spooled["data"]?["answer_id"]?.stringValue)
        XCTAssertNotNil(watcher.wait(for: Event.CueUploadRetrying.self, where: { $0["answer_id"]?.stringValue == answer }))
        let spool = rig.directory + "/state/spool/cues"
        XCTAssertTrue(FileManager.default.fileExists(atPath: "\(spool)/\(answer).m4a"))
        // spool.list has it, with why its upload failed.
        let listed = try control.request(Command.SpoolList.self)["answers"]?.arrayValue ?? []
        XCTAssertEqual(listed.map { $0["answer_id"] }, [.string(answer)])
        XCTAssertEqual(listed.first?["cue_id"]?.intValue, cue)
        XCTAssertNotNil(listed.first?["last_error"]?.stringValue, "\(listed)")

        // Killed outright; beside the answer, an answer whose record a failing disk garbled.
        rig.daemon.process.terminate(signal: SIGKILL)
        let garbled = "deadbeef-0000-4000-8000-000000000001", audio = Data((0..<4_096).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try Data("{\"id\":".utf8).write(to: URL(fileURLWithPath: "\(spool)/\(garbled).json"))
        try audio.write(to: URL(fileURLWithPath: "\(spool)/\(garbled).m4a"))
        cues.simulator.update { $0.uploadBase = nil }
        try rig.startDaemon()
        control = try rig.daemon.client()
        watcher = try rig.watcher(topics: ["cue"])
        // The killed daemon's visit ended at this start: its learner is signed out (a shared
        // kiosk), and the answer waits for that same learner, never for another's sign-in.
        XCTAssertEqual(try control.request(Command.LearnerGet.self)["signed_in"], false)
        XCTAssertEqual(try control.request(Command.SpoolList.self)["answers"]?.arrayValue?.map { $0["answer_id"] }, [.string(answer)])
        _ = try signIn(control)
        guard let uploaded = watcher.wait(for: Event.CueUploaded.self, where: { $0["answer_id"]?.stringValue == answer }) else {
            return XCTFail(rig.daemon.log)
        }
        XCTAssertNotNil(uploaded["data"]?["recording_id"]?.intValue)
        XCTAssertNotNil(watcher.wait(for: Event.CueEvaluation.self, where: { $0["status"] == "ready" }))
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(spool)/\(answer).m4a"), "the uploaded answer left the spool")
        XCTAssertEqual(cues.simulator.uploads.count, 1)
        // The garbled one was set aside whole, logged and listed; never uploaded.
        let setAside = try control.request(Command.SpoolList.self)["set_aside"]?.arrayValue ?? []
        XCTAssertEqual(setAside.map { $0["id"] }, [.string(garbled)])
        XCTAssertEqual(setAside.first?["kind"], "cue_answer")
        let folder = try XCTUnwrap(setAside.first?["path"]?.stringValue)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(garbled).m4a")), audio)
        XCTAssertTrue(rig.daemon.log.contains("answer \(garbled) set aside"), rig.daemon.log)
    }

    /// A provider that fails: processing falls back to none (traces 49-51), the daemon asks
    /// again, and after `cue.result_attempts` tells the client.
    func testAFailingProviderIsRetriedThenTold() throws {
        rig = try KioskRig(arguments: ["--cue-result-attempts", "2"], chatterbox: ChatterboxHarness { $0.providerFailures = 2 })
        let control = try rig.daemon.client()
        let watcher = try rig.watcher(topics: ["cue"])
        _ = try signIn(control)
        let cue = try XCTUnwrap(try control.request(Command.CuesGet.self)["cues"]?.arrayValue?.first?["cue_id"]?.intValue)
        _ = try control.request(Command.CueRecord.self, ["cue_id": .int(cue), "hands_free": true])
        rig.microphone.say(KioskRig.learner)
        guard let failed = watcher.wait(for: Event.CueResultsFailed.self, timeout: 30) else { return }
        XCTAssertEqual(failed["data"]?["step"], "transcription")
        XCTAssertEqual(failed["data"]?["attempts"], 2)
        // Asked again by the client, the (now healthy) provider answers.
        let recording = try XCTUnwrap(failed["data"]?["recording_id"]?.intValue)
        let mark = watcher.events.value.count
        _ = try control.request(Command.CueResults.self, ["recording_id": .int(recording)])
        XCTAssertNotNil(watcher.wait(for: Event.CueTranscript.self, after: mark, where: { $0["status"] == "ready" }))
        XCTAssertNotNil(watcher.wait(for: Event.CueEvaluation.self, after: mark, where: { $0["status"] == "ready" }))
    }

    /// A refresh token gone bad and an expired access token: the call asks for sign-in, the
    /// client is told, and the pair is forgotten.
    func testExpiredTokensWithABadRefreshAskForSignIn() throws {
        let cues = try ChatterboxHarness()
        rig = try KioskRig(chatterbox: cues)
        let control = try rig.daemon.client()
        let watcher = try rig.watcher(topics: ["cue"])
        _ = try signIn(control)
        cues.simulator.update { $0.badRefresh = true }
        _ = try RawHTTP.exchange(cues.baseURL, "PUT", "/_sim/chatterbox", contentType: "application/json", body: Array(#"{"expire_tokens": true}"#.utf8))
        XCTAssertEqual(control.failure(Command.CuesGet.self)?.code, .signInRequired)
        XCTAssertNotNil(watcher.wait(for: Event.SignInChanged.self, where: { $0["learner"]?["signed_in"] == false && $0["reason"] != .null }))
        XCTAssertEqual(try control.request(Command.LearnerGet.self)["signed_in"], false)
        XCTAssertFalse(FileManager.default.fileExists(atPath: rig.directory + "/state/chatterbox-tokens.json"))
    }

    /// Recordings made on the phone app (AAC-LC at 48 kHz, as its iOS app records) play
    /// through the kiosk's speaker; one the kiosk cannot decode (HE-AAC, Opus) is a clear
    /// `file_error` naming its codec. Offline, the cards kept are given back marked stale.
    func testPhoneRecordingsPlayUndecodableOnesAreNamedAndCardsWorkOffline() throws {
        let cues = try ChatterboxHarness()
        rig = try KioskRig(chatterbox: cues)
        let control = try rig.daemon.client()
        let watcher = try rig.watcher(topics: ["playback"])
        _ = try signIn(control)
        let cards = try XCTUnwrap(try control.request(Command.CuesGet.self)["cues"]?.arrayValue)
        let cueIDs = cards.compactMap { $0["cue_id"]?.intValue }
        XCTAssertEqual(cueIDs.count, 5)

        // The phone: the same learner signed in elsewhere, uploading its own recordings.
        let source = try KioskRig.learner.withUnsafeBufferPointer { try WAVEncoder.encode($0, format: .speech) }
        let wav = rig.directory + "/phone.wav"
        XCTAssertTrue(FileManager.default.createFile(atPath: wav, contents: Data(source)))
        func phoneFile(_ name: String, _ arguments: [String]) throws -> [UInt8] {
            let path = rig.directory + "/" + name
            try runTool("ffmpeg", ["-v", "error", "-y", "-i", wav] + arguments + [path])
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        var heAAC = try phoneFile("phone-lc.m4a", ["-ar", "48000", "-c:a", "aac", "-b:a", "128k"])
        let lc = heAAC
        // HE-AAC as an encoder declares it (object type 5): Debian's ffmpeg writes none.
        let asc = try XCTUnwrap(heAAC.firstRange(of: [0x05, 0x80, 0x80, 0x80])?.upperBound) + 1
        heAAC[asc] = (heAAC[asc] & 0x07) | (5 << 3)
        let opus = try phoneFile("phone-opus.mp4", ["-c:a", "libopus"])
        let phone = cues.client(stateDirectory: rig.directory + "/phone")
        let (email, files, targets) = (email, [lc, heAAC, opus], cueIDs)
        let recordings: [Int] = try awaitResult {
            try await phone.requestLoginCode(email: email)
            try await phone.signIn(email: email, code: "123456")
            let me = try await phone.me()
            let profile = try await phone.setActiveProfile(accountID: me.account.accountId, languageCode: "en").profileId
            var ids: [Int] = []
            // One cue each: the backend takes one intent per cue and second.
            for (bytes, cue) in zip(files, targets) {
                let intent = try await phone.createUploadIntent(profileID: profile, cueID: cue)
                try await phone.upload(Data(bytes), to: intent.uploadUrl!)
                let file = try await phone.completeUpload(intentID: intent.uploadIntentId, seconds: 3).file!.fileId
                let detail = try await phone.cue(profileID: profile, cueID: cue)
                ids.append(detail.cue.recordings!.first { $0.fileId == file }!.profileCueRecordingId)
            }
            return ids
        }
        let played = try control.request(Command.CuePlay.self, ["recording_id": .int(recordings[0])])
        XCTAssertEqual(played["duration_s"]?.doubleValue ?? 0, Double(KioskRig.learner.count) / 24_000, accuracy: 0.05)
        XCTAssertNotNil(watcher.wait(for: Event.PlaybackFinished.self), "the phone's 48 kHz AAC-LC did not play")
        for (id, codec) in [(recordings[1], "HE-AAC"), (recordings[2], "Opus")] {
            let error = try XCTUnwrap(control.failure(Command.CuePlay.self, ["recording_id": .int(id)]), codec)
            XCTAssertEqual(error.code, .fileError, codec)
            XCTAssertTrue(error.message.contains(codec), "\(codec): \(error.message)")
        }

        // The backend gone: the cards kept are given back, stale, with the error.
        cues.server.stop()
        let offline = try control.request(Command.CuesGet.self)
        XCTAssertEqual(offline["stale"], true)
        XCTAssertEqual(offline["cues"]?.arrayValue?.compactMap { $0["cue_id"]?.intValue }, cards.compactMap { $0["cue_id"]?.intValue })
        XCTAssertNotNil(offline["error"]?.stringValue)
        XCTAssertEqual(control.failure(Command.CuesGet.self, ["shuffle": true])?.code, .backendUnavailable, "a new batch needs the backend")
    }

    /// A TalkCo daemon refuses cue practice by its backend's kind, and shows no learner.
    /// An answer waiting for speech keeps the devices open: idle, they close (here after
    /// 1 s), never under an answer being recorded. Before the daemon asked its flow, only a
    /// conversation kept them, and a learner thinking over a card lost the microphone.
    func testAnAnswerBeingRecordedKeepsTheDevicesOpen() throws {
        rig = try KioskRig(arguments: ["--audio-idle-close-s", "1"], chatterbox: ChatterboxHarness())
        let control = try rig.daemon.client()
        let watcher = try rig.watcher(topics: ["cue", "device"])
        _ = try signIn(control)
        let cue = try XCTUnwrap(try control.request(Command.CuesGet.self)["cues"]?.arrayValue?.first?["cue_id"]?.intValue)
        let mark = watcher.count
        XCTAssertEqual(try control.request(Command.CueRecord.self, ["cue_id": .int(cue), "hands_free": true])["stage"], "listening")
        let closed = { (list: [JSONValue]) in
            list.dropFirst(mark).contains { $0["event"] == .string(Event.DeviceState.name) && $0["data"]?["state"] == "idle" }
        }
        // The keeper looks every 2 s: two looks or more past the 1 s.
        XCTAssertFalse(watcher.events.wait(timeout: 5, closed), "the devices closed under an answer being recorded")
        XCTAssertEqual(try control.request(Command.Status.self)["devices"]?["capture"]?["state"], "running")
        _ = try control.request(Command.CueCancel.self)
        XCTAssertTrue(watcher.events.wait(timeout: 10, closed), "idle again, they close")
    }

    func testATalkCoDaemonRefusesCueCommands() throws {
        let daemon = try DaemonHarness()
        let control = try daemon.client()
        for (command, args): (String, JSONValue) in [("cues.get", [:]), ("signin.request_code", ["email": "a@b.invalid"]), ("cue.record", ["cue_id": 10])] {
            let error = control.failure(command, args)
            XCTAssertEqual(error?.code, .invalidState, command)
            XCTAssertTrue(error?.message.contains("backend.kind = chatterbox") ?? false, "\(command): \(String(describing: error))")
        }
        let status = try control.request(Command.Status.self)
        XCTAssertEqual(status["backend"]?["kind"], "talkco")
        XCTAssertEqual(status["learner"], .null)
    }

    /// Runs `body` and waits for it (the tests' own calls to the backend, as the phone makes them).
    private func awaitResult<T: Sendable>(timeout: Double = 30, _ body: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Awaitable<Result<T, Error>?>(nil)
        Task {
            let outcome: Result<T, Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.update { $0 = outcome }
        }
        XCTAssertTrue(result.wait(timeout: timeout) { $0 != nil }, "the phone's calls did not finish")
        return try XCTUnwrap(result.value).get()
    }
}
