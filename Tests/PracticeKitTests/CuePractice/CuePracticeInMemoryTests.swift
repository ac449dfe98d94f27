import AudioKernel
import Foundation
@testable import PracticeKit
import PracticeNet
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// Cue practice's own logic, the devices in memory (``MemoryAudio``) and the backend
/// practice-sim's Chatterbox mode in this process: an answer's walk and its events, the
/// speech gate, a refusal, a 409, sign-in needed in the middle of an upload; retries and
/// polls on the test's clock (``TestClock``: a minute of them in milliseconds). The
/// daemon as a process, with PulseAudio, is CuePracticeTests'.
final class CuePracticeInMemoryTests: XCTestCase {
    private var directory: URL!
    private var cues: ChatterboxHarness!
    private var practice: CuePractice!
    /// The cue commands, routed as the daemon routes them.
    private var commands = CommandTable()
    private let events = Awaitable([any ProtocolEvent]())
    private let clock = Locked(Date().timeIntervalSince1970)
    /// Cue practice's clock: Dispatch's until a test stops it (``TestClock/manual(start:)``).
    private let scheduler = TestClock()
    private let speech: [Int16] = (0..<36_000).map { Int16(4_000 * sin(Double($0) * 0.05)) }

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory()
        addTeardownBlock { [directory] in try? FileManager.default.removeItem(at: directory!) }
    }

    /// Cue practice on a fresh simulator (its clock the test's), signed in with a profile.
    private func start(_ configure: (inout ChatterboxSimulatorConfiguration) -> Void = { _ in },
                       settings adjust: (inout CueSettings) -> Void = { _ in }) throws {
        let clock = clock
        cues = try ChatterboxHarness(now: { clock.withLock { $0 } }) {
            $0.transcriptionSeconds = 0
            $0.evaluationSeconds = 0
            configure(&$0)
        }
        let client = cues.client(stateDirectory: directory.path)
        var settings = CueSettings()
        settings.pollInterval = 0.02
        settings.maximumRetryDelay = 0.1
        adjust(&settings)
        let events = events
        practice = CuePractice(settings: settings, client: { client }, audio: MemoryAudio(), spoolDirectory: directory.path + "/spool",
                               stateDirectory: directory.path, metrics: Metrics(), logger: .disabled, scheduler: scheduler,
                               play: { _, _, done in done(.success(1)) }) { event in
            events.update { $0.append(event) }
        }
        commands = CommandTable()
        practice.register(into: commands)
        _ = try run(Command.SignInRequestCode.self, ["email": "learner@example.invalid"])
        XCTAssertEqual(try run(Command.SignInCode.self, ["email": "learner@example.invalid", "code": "123456"])["signed_in"], true)
    }

    /// Runs a command and waits for its answer.
    @discardableResult
    private func run<C: ControlCommand>(_ command: C.Type, _ args: JSONValue = [:], file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let answer = Awaitable<Result<JSONValue, ControlError>?>(nil)
        XCTAssertTrue(commands.run(ControlRequest(id: 1, command: C.name, args: args)) { result in answer.update { $0 = result } }, file: file, line: line)
        XCTAssertTrue(answer.wait(timeout: 10) { $0 != nil }, "\(C.name) was not answered", file: file, line: line)
        return try XCTUnwrap(answer.value, file: file, line: line).get()
    }

    /// The first event of type `E` after `index` that matches.
    @discardableResult
    private func wait<E: ProtocolEvent>(for event: E.Type, after index: Int = 0, timeout: Double = 10, where predicate: (E) -> Bool = { _ in true },
                                        file: StaticString = #filePath, line: UInt = #line) -> E? {
        var found: E?
        _ = events.wait(timeout: timeout) { list in
            found = list.dropFirst(index).compactMap { $0 as? E }.first(where: predicate)
            return found != nil
        }
        if found == nil { XCTFail("no \(E.name) (saw \(events.value.map { type(of: $0).name }))", file: file, line: line) }
        return found
    }

    private var names: [String] { events.value.map { type(of: $0).name } }

    /// Records an answer to `cue` and hands the recorder's turn over.
    private func answer(_ cue: Int, _ samples: [Int16]) throws {
        XCTAssertEqual(try run(Command.CueRecord.self, ["cue_id": .int(cue)])["stage"], "recording")
        practice.recorded(RecordedTurn(samples: samples, recording: 1))
    }

    private func firstCue() throws -> Int { try XCTUnwrap(try run(Command.CuesGet.self)["cues"]?.arrayValue?.first?["cue_id"]?.intValue) }

    private var spooled: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: directory.path + "/spool/cues")) ?? []).sorted() }

    func testAnAnswerWalksFromTheSpoolToItsEvaluation() throws {
        try start()
        let cue = try firstCue()
        try answer(cue, speech)
        let spooledEvent = try XCTUnwrap(wait(for: Event.CueSpooled.self))
        XCTAssertEqual(spooledEvent.cueId, cue)
        XCTAssertEqual(spooledEvent.durationS, 1.5)
        let uploaded = try XCTUnwrap(wait(for: Event.CueUploaded.self))
        XCTAssertEqual(uploaded.answerId, spooledEvent.answerId)
        XCTAssertNotNil(wait(for: Event.CueTranscript.self, where: { $0.status == .ready && $0.transcript != nil }))
        let evaluation = try XCTUnwrap(wait(for: Event.CueEvaluation.self, where: { $0.status == .ready }))
        XCTAssertEqual(evaluation.evaluation?.cefrLevel, "B1")
        XCTAssertEqual(events.value.compactMap { ($0 as? Event.CueUploadStep)?.step }, [.intent, .put, .complete, .found])
        let order = names.filter { $0.hasPrefix("cue.") && $0 != "cue.upload" }
        XCTAssertEqual(Array(order.prefix(4)), ["cue.recording", "cue.recorded", "cue.spooled", "cue.uploaded"])
        XCTAssertEqual(spooled, [], "the uploaded answer left the spool")
        XCTAssertEqual(cues.simulator.uploads.count, 1)
        // What went up is the spooled AAC-LC: an MPEG-4 file AudioKernel reads back.
        let path = directory.appendingPathComponent("up.m4a").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(cues.simulator.uploads[0])))
        let decoded = try MPEG4AudioDecoder(path: path)
        XCTAssertEqual(decoded.frameCount, speech.count)
    }

    func testASilentAnswerIsDroppedAndNothingIsSent() throws {
        try start()
        try answer(try firstCue(), [Int16](repeating: 100, count: 24_000))
        XCTAssertEqual(wait(for: Event.CueDiscarded.self)?.reason, .noSpeech)
        XCTAssertEqual(try run(Command.CueHistory.self)["recordings"]?.arrayValue?.count, 0)
        XCTAssertEqual(spooled, [])
        XCTAssertEqual(cues.simulator.uploads.count, 0)
    }

    /// A refusal (a cue the backend does not publish) stops that answer, which stays spooled;
    /// the next answer goes up.
    func testARefusedAnswerStaysSpooledAndTheNextGoesUp() throws {
        try start()
        try answer(999_999, speech)
        let failed = try XCTUnwrap(wait(for: Event.CueUploadFailed.self))
        XCTAssertEqual(failed.reason, "cue_not_found_or_not_published")
        XCTAssertEqual(spooled.count, 2, "the refused answer's record and audio stay")
        try answer(try firstCue(), speech)
        XCTAssertNotNil(wait(for: Event.CueUploaded.self))
        XCTAssertEqual(spooled.count, 2, "only the refused answer is left")
        // spool.list names it, refused, with why; cue.discard removes it, and says so.
        let listed = practice.spoolListing().answers
        XCTAssertEqual(listed.map(\.answerId), [failed.answerId])
        XCTAssertEqual(listed.first?.state, .refused)
        XCTAssertEqual(listed.first?.cueId, 999_999)
        XCTAssertTrue(listed.first?.lastError?.contains("cue_not_found") == true, "\(listed)")
        for bad in ["../x", "", "not-an-answer-id", String(repeating: "a", count: 65)] {
            XCTAssertThrowsError(try run(Command.CueDiscard.self, ["answer_id": .string(bad)]), bad) {
                XCTAssertEqual(($0 as? ControlError)?.code, .badArguments)
            }
        }
        XCTAssertEqual(try run(Command.CueDiscard.self, ["answer_id": .string(failed.answerId)])["discarded"], .string(failed.answerId))
        XCTAssertEqual(wait(for: Event.CueAnswerDiscarded.self)?.answerId, failed.answerId)
        XCTAssertEqual(spooled, [])
        XCTAssertEqual(practice.spoolListing().answers, [])
    }

    /// Answers recorded one after the other while the earlier ones upload: the spool is
    /// touched on cue practice's queue only (CueSpool checks it; the suite runs under
    /// ThreadSanitizer in CI), and every answer goes up once.
    func testAnswersRecordedWhileUploadsAreInFlight() throws {
        try start()
        // One answer per card (two intents for one cue in one second are the backend's 409).
        let cards = try XCTUnwrap(try run(Command.CuesGet.self)["cues"]?.arrayValue?.compactMap { $0["cue_id"]?.intValue })
        XCTAssertEqual(cards.count, 5)
        for cue in cards { try answer(cue, speech) }
        XCTAssertTrue(events.wait(timeout: 30) { $0.compactMap { $0 as? Event.CueUploaded }.count == 5 }, "\(names)")
        XCTAssertEqual(Set(events.value.compactMap { ($0 as? Event.CueUploaded)?.answerId }).count, 5)
        XCTAssertEqual(cues.simulator.uploads.count, 5)
        XCTAssertEqual(spooled, [])
    }

    /// An answer whose audio was damaged on disk while it waited (a flipped block: same
    /// size, another checksum) is set aside, told, and never uploaded.
    func testAnAnswerDamagedWhileItWaitsIsSetAsideNotUploaded() throws {
        try start()
        let cue = try firstCue()
        // Sign-in needed (the refresh refused): the answer waits in the spool.
        cues.simulator.update { $0.badRefresh = true }
        clock.withLock { $0 += 3_700 }
        try answer(cue, speech)
        let kept = try XCTUnwrap(wait(for: Event.CueSpooled.self))
        XCTAssertEqual(wait(for: Event.CueUploadFailed.self)?.reason, "sign_in_required")
        cues.simulator.update { $0.badRefresh = false }
        let mark = events.value.count
        let audio = directory.path + "/spool/cues/\(kept.answerId).m4a"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: audio))
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: audio))
        _ = try run(Command.SignInRequestCode.self, ["email": "learner@example.invalid"])
        _ = try run(Command.SignInCode.self, ["email": "learner@example.invalid", "code": "123456"])
        let setAside = try XCTUnwrap(wait(for: Event.SpoolItemSetAside.self, after: mark))
        XCTAssertEqual(setAside.id, kept.answerId)
        XCTAssertEqual(setAside.kind, .cueAnswer)
        XCTAssertTrue(setAside.reason.contains("CRC-32"), setAside.reason)
        XCTAssertEqual(wait(for: Event.CueUploadFailed.self, after: mark)?.reason, "damaged")
        XCTAssertEqual(cues.simulator.uploads.count, 0, "damaged audio went up")
        XCTAssertEqual(spooled, [])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: setAside.path + "/\(kept.answerId).m4a")), bytes, "kept as it was")
        XCTAssertEqual(practice.spoolListing().setAside.map(\.id), [kept.answerId])
    }

    /// Two intents for one cue in one second (the backend's 409): a second later, again.
    func testASecondIntentInTheSameSecondWaitsASecond() throws {
        try start()
        let cue = try firstCue()
        // Another intent for this cue in this second, as a retried upload would have made.
        let phone = cues.client(stateDirectory: directory.path + "/phone")
        let first = Awaitable(false)
        Task {
            try await phone.requestLoginCode(email: "learner@example.invalid")
            try await phone.signIn(email: "learner@example.invalid", code: "123456")
            let me = try await phone.me()
            _ = try await phone.createUploadIntent(profileID: me.activeProfile!.profileId, cueID: cue)
            first.update { $0 = true }
        }
        XCTAssertTrue(first.wait(timeout: 10) { $0 })
        scheduler.manual()
        try answer(cue, speech)
        let retrying = try XCTUnwrap(wait(for: Event.CueUploadRetrying.self))
        XCTAssertEqual(retrying.delayS, 1)
        XCTAssertTrue(retrying.error.contains("409"), retrying.error)
        clock.withLock { $0 += 1 }
        XCTAssertTrue(Poll.until(timeout: 5) { scheduler.waiting == 1 }, "the retry waits for the clock")
        scheduler.advance(by: 0.999)
        XCTAssertEqual(scheduler.waiting, 1, "not before its second")
        scheduler.advance(by: 0.001)
        XCTAssertNotNil(wait(for: Event.CueUploaded.self, timeout: 5))
    }

    /// The backend gone for a minute: the answer is tried again after doubling delays with
    /// jitter (RetryPolicy's, as a conversation's turn is), capped at 60 s (``CueSettings/maximumRetryDelay``),
    /// on the test's clock; it stays spooled, pending, with the last error for `spool.list`.
    func testAMinuteOfUploadRetriesRunsOnTheClock() throws {
        try start(settings: { $0.maximumRetryDelay = 20 })
        let cue = try firstCue()
        scheduler.manual()
        cues.server.stop()
        try answer(cue, speech)
        let base = [1.0, 2, 4, 8, 16, 20]
        var delays: [Double] = []
        for attempt in 1...base.count {
            let retrying = try XCTUnwrap(wait(for: Event.CueUploadRetrying.self, where: { $0.attempt == attempt }))
            delays.append(retrying.delayS)
            XCTAssertTrue(Poll.until(timeout: 5) { scheduler.waiting == 1 }, "attempt \(attempt) waits for the clock")
            if attempt < base.count { scheduler.advance(by: retrying.delayS) }
        }
        for (delay, expected) in zip(delays, base) {
            XCTAssertTrue((expected * 0.8...expected * 1.2).contains(delay), "\(delays) against \(base) ± 20 %")
        }
        XCTAssertNotEqual(delays, base, "no jitter: kiosks that lost the backend together would come back in step")
        XCTAssertGreaterThan(delays.reduce(0, +), 40, "a minute of retries")
        let listed = practice.spoolListing().answers
        XCTAssertEqual(listed.count, 1)
        XCTAssertEqual(listed.first?.state, .pending)
        XCTAssertNotNil(listed.first?.lastError)
        XCTAssertEqual(spooled.count, 2, "its record and audio stay")
    }

    /// Results followed on the test's clock: the trace's 4 s transcription and 11 s
    /// evaluation, polled every 2 s, each status told once as it changes.
    func testResultsArePolledOnTheClock() throws {
        try start({ $0.transcriptionSeconds = 4; $0.evaluationSeconds = 11 }, settings: { $0.pollInterval = 2 })
        let cue = try firstCue()
        scheduler.manual()
        try answer(cue, speech)
        let uploaded = try XCTUnwrap(wait(for: Event.CueUploaded.self))
        var polls = 0
        let ready = { self.events.value.contains { ($0 as? Event.CueEvaluation)?.status == .ready } }
        while !ready() && polls < 30 {
            XCTAssertTrue(Poll.until(timeout: 5) { scheduler.waiting == 1 || ready() }, "poll \(polls) waits for the clock")
            if ready() { break }
            clock.withLock { $0 += 2 }
            scheduler.advance(by: 2)
            polls += 1
        }
        XCTAssertTrue(Poll.until(timeout: 5, ready), "the evaluation came ready")
        XCTAssertTrue((6...12).contains(polls), "\(polls) polls of 2 s for 4 + 11 s of work")
        XCTAssertEqual(Set(scheduler.delays), [2])
        let transcripts = events.value.compactMap { $0 as? Event.CueTranscript }
        XCTAssertEqual(transcripts.map(\.status), [.processing, .ready], "each status told once")
        XCTAssertEqual(transcripts.last?.recordingId, uploaded.recordingId)
        XCTAssertFalse(practice.queue.sync { practice.results.follows(uploaded.recordingId) }, "following ended")
    }

    /// A transcription that never comes: the result timeout (600 s) on the test's clock,
    /// then the failure is told, naming the step.
    func testAResultNotReadyInTimeIsTold() throws {
        // The simulator's time stands still (only the test moves it): always processing.
        try start({ $0.transcriptionSeconds = 4 }, settings: { $0.pollInterval = 30 })
        let cue = try firstCue()
        scheduler.manual()
        try answer(cue, speech)
        XCTAssertNotNil(wait(for: Event.CueUploaded.self))
        let failed = { self.events.value.contains { $0 is Event.CueResultsFailed } }
        var waited = 0.0
        while !failed() && waited < 700 {
            XCTAssertTrue(Poll.until(timeout: 5) { scheduler.waiting == 1 || failed() })
            scheduler.advance(by: 30)
            waited += 30
        }
        let failure = try XCTUnwrap(wait(for: Event.CueResultsFailed.self))
        XCTAssertEqual(failure.step, .transcription)
        XCTAssertEqual(failure.error, "not ready within 600 s")
        XCTAssertEqual(failure.attempts, 1)
        XCTAssertEqual(waited, 600, accuracy: 30)
    }

    /// Sign-in needed in the middle (the access token expired, its refresh gone bad): the
    /// answer stays spooled, the learner is told, and it goes up after the next sign-in.
    func testSignInNeededPausesUploadsUntilTheNextSignIn() throws {
        try start()
        let cue = try firstCue()
        cues.simulator.update { $0.badRefresh = true }
        clock.withLock { $0 += 3_700 }
        try answer(cue, speech)
        XCTAssertEqual(wait(for: Event.CueUploadFailed.self)?.reason, "sign_in_required")
        XCTAssertNotNil(wait(for: Event.SignInChanged.self, where: { !$0.learner.signedIn && $0.reason != nil }))
        XCTAssertEqual(spooled.count, 2)
        cues.simulator.update { $0.badRefresh = false }
        let mark = events.value.count
        _ = try run(Command.SignInRequestCode.self, ["email": "learner@example.invalid"])
        _ = try run(Command.SignInCode.self, ["email": "learner@example.invalid", "code": "123456"])
        XCTAssertNotNil(wait(for: Event.CueUploaded.self, after: mark))
        XCTAssertEqual(spooled, [])
    }

    /// Bad arguments are told before anything is sent.
    func testArgumentsAreCheckedBeforeTheBackend() throws {
        try start()
        let cases: [(any ControlCommand.Type, JSONValue)] = [
            (Command.SignInRequestCode.self, ["email": "not an address"]),
            (Command.SignInCode.self, ["email": "learner@example.invalid", "code": "12 34"]),
            (Command.SignInLink.self, ["token": .string(String(repeating: "t", count: 2_000))]),
            (Command.CueHistory.self, ["limit": 0]),
            (Command.LearnerLanguage.self, ["language": "tlh"]),
        ]
        for (command, args) in cases {
            let answer = Awaitable<Result<JSONValue, ControlError>?>(nil)
            _ = commands.run(ControlRequest(id: 1, command: command.name, args: args)) { result in answer.update { $0 = result } }
            XCTAssertTrue(answer.wait(timeout: 5) { $0 != nil })
            guard case .failure(let error)? = answer.value else { return XCTFail("\(command.name) \(args) was not refused") }
            XCTAssertEqual(error.code, .badArguments, "\(command.name): \(error)")
        }
        XCTAssertThrowsError(try run(Command.CueStop.self), "cue.stop with nothing recorded") {
            XCTAssertEqual(($0 as? ControlError)?.code, .invalidState)
        }
    }
}
