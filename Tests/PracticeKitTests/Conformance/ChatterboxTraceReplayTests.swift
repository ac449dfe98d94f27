import AudioKernel
import Foundation
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// The Chatterbox client against the real backend's recorded answers
/// (`shared/chatterbox-traces`), replayed over real TCP by ``TraceReplayServer``: the typed
/// outcome of each answer (models, refusals by their hint, tokens kept, sign-in asked for)
/// and, for each request the client makes, that it is the recorded one (path, JSON keys and
/// values, Content-Type, Authorization; none on the files service).
final class ChatterboxTraceReplayTests: XCTestCase {
    private var stateDirectory: URL!
    /// The pair the recording used from trace 08 on.
    private let main = ChatterboxTokens(accessToken: "<ACCESS_TOKEN_2>", refreshToken: "<REFRESH_TOKEN_2>")

    override func setUpWithError() throws {
        stateDirectory = try makeTemporaryDirectory()
        addTeardownBlock { [stateDirectory] in try? FileManager.default.removeItem(at: stateDirectory!) }
    }

    /// A server answering `names` (each for its own route, in order), the files service's
    /// host and URL signatures made into the server's; and a client holding `tokens`.
    private func replay(_ names: [String], tokens: ChatterboxTokens?) throws -> (ChatterboxClient, TraceReplayServer, [Trace]) {
        let server = try TraceReplayServer()
        var replacements = ["http://127.0.0.1:13090": server.baseURL.absoluteString]
        for n in 1...10 {
            replacements["<UPLOAD_SIG_\(n)>"] = "uploadsig\(n)"
            replacements["<DOWNLOAD_SIG_\(n)>"] = "downloadsig\(n)"
        }
        let traces = try names.map { try Trace.chatterbox($0).replacing(replacements) }
        for trace in traces { server.queue(trace) }
        let store = ChatterboxTokenStore(stateDirectory: stateDirectory.path)
        if let tokens { store.replace(with: tokens) } else { store.clear() }
        let client = ChatterboxClient(configuration: SimulatorHarness.configuration(server.baseURL) { $0.retry = .none }, tokens: store)
        return (client, server, traces)
    }

    /// The request the client made is the recorded one: method, path, Content-Type, the JSON
    /// body's keys and values, the Authorization (none to the files service).
    private func assertRequest(_ request: TraceReplayServer.Request, matches trace: Trace, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(request.method, trace.method, trace.name, file: file, line: line)
        XCTAssertEqual(request.path, trace.path, trace.name, file: file, line: line)
        XCTAssertEqual(request.header("Content-Type"), trace.requestHeaders["Content-Type"], trace.name, file: file, line: line)
        XCTAssertEqual(request.header("Authorization"), trace.requestHeaders["Authorization"], trace.name, file: file, line: line)
        if let body = trace.requestBody {
            XCTAssertEqual(request.json, Trace.parse(Array(body.utf8)), "\(trace.name): the body", file: file, line: line)
        }
    }

    private func outcome<T>(_ body: () async throws -> T) async -> Result<T, ChatterboxError> {
        do { return .success(try await body()) } catch let error as ChatterboxError { return .failure(error) } catch {
            return .failure(.backend(.invalidResponse("not a ChatterboxError: \(error)")))
        }
    }

    // MARK: - Configuration and sign-in (01-08)

    func testAppConfigNeedsNoToken() async throws {
        let (client, server, traces) = try replay(["01"], tokens: nil)
        let config = try await client.appConfig()
        XCTAssertEqual(config.availableLanguageCodes, ["en", "fr", "de", "zh", "es"])
        XCTAssertEqual(config.defaultProfileLanguageCode, "en")
        assertRequest(server.requests[0], matches: traces[0])
    }

    func testMagicLinkSignsInOnceAndIsRefusedByItsHintTheSecondTime() async throws {
        let (client, server, traces) = try replay(["03", "04", "05"], tokens: nil)
        try await client.requestMagicLink(email: "kiosk-learner@chatterbox.invalid")
        try await client.signIn(magicToken: "<MAGIC_TOKEN_1>")
        XCTAssertEqual(client.tokens.current, ChatterboxTokens(accessToken: "<ACCESS_TOKEN_1>", refreshToken: "<REFRESH_TOKEN_1>"))
        let again = await outcome { try await client.signIn(magicToken: "<MAGIC_TOKEN_1>") }
        XCTAssertEqual(again.failure, .refused(status: 400, code: "P0001", hint: "invalid_magic_link"))
        XCTAssertEqual(again.failure?.reason, "invalid_magic_link")
        for (request, trace) in zip(server.requests, traces) { assertRequest(request, matches: trace) }
    }

    func testTheCodePathKeepsThePairDurablyAndAWrongCodeIsRefusedByItsHint() async throws {
        let (client, server, traces) = try replay(["06", "07", "08"], tokens: nil)
        try await client.requestLoginCode(email: "kiosk-learner@chatterbox.invalid")
        let wrong = await outcome { try await client.signIn(email: "kiosk-learner@chatterbox.invalid", code: "000000") }
        XCTAssertEqual(wrong.failure?.reason, "invalid_login_code")
        XCTAssertNil(client.tokens.current, "a refused code keeps nobody signed in")
        try await client.signIn(email: "kiosk-learner@chatterbox.invalid", code: "<LOGIN_CODE_1>")
        XCTAssertEqual(client.tokens.current, main)
        // Kept in the state directory, 0600, and read back by the next start.
        let path = stateDirectory.appendingPathComponent("chatterbox-tokens.json").path
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o777, 0o600)
        XCTAssertEqual(ChatterboxTokenStore(stateDirectory: stateDirectory.path).current, main)
        for (request, trace) in zip(server.requests, traces) { assertRequest(request, matches: trace) }
        XCTAssertEqual(server.requests.count, 3)
    }

    // MARK: - Profile and cues (09-16)

    func testProfileAndCues() async throws {
        let (client, server, traces) = try replay(["09", "10", "11", "12", "13", "14", "15", "16"], tokens: main)
        let first = try await client.me()
        XCTAssertEqual(first.account.accountId, 3)
        XCTAssertNil(first.activeProfile)
        let chosen = try await client.setActiveProfile(accountID: 3, languageCode: "en")
        XCTAssertEqual(chosen.profileId, 1)
        let second = try await client.me()
        XCTAssertEqual(second.activeProfile?.profileId, 1)
        XCTAssertEqual(second.activeProfile?.languageCode, "en")
        let cues = try await client.cues(profileID: 1, count: 5)
        XCTAssertEqual(cues.map(\.cueId), [263, 268, 281, 364, 552])
        XCTAssertEqual(cues[0].content.title, "Is learning a foreign language a difficult challenge? Share your opinion.")
        let value1 = try await client.cues(profileID: 1, count: 5).map(\.cueId)
        XCTAssertEqual(value1, [263, 268, 281, 364, 552])
        let value2 = try await client.shuffleCues(profileID: 1, count: 5).map(\.cueId)
        XCTAssertEqual(value2, [10, 196, 247, 257, 433])
        let value3 = try await client.cues(profileID: 1, count: 5).map(\.cueId)
        XCTAssertEqual(value3, [10, 196, 247, 257, 433])
        let empty = try await client.history(profileID: 1)
        XCTAssertEqual(empty.recordings, [])
        XCTAssertNil(empty.processedFiles, "the empty history has no processed_files key")
        XCTAssertEqual(server.requests.count, traces.count)
        for (request, trace) in zip(server.requests, traces) {
            assertRequest(request, matches: trace)
            XCTAssertEqual(request.header("X-Refresh-Token"), "<REFRESH_TOKEN_2>", "every authorized call carries the refresh token")
        }
    }

    // MARK: - Upload, transcription, evaluation, download (17-34)

    func testAnAudioTypeOtherThanMP4IsACheckViolationAndTheClientNeverSendsOne() async throws {
        let (client, server, _) = try replay(["17"], tokens: main)
        let refused = await outcome { try await client.createUploadIntent(profileID: 1, cueID: 10) }
        XCTAssertEqual(refused.failure, .refused(status: 400, code: "23514", hint: nil))
        XCTAssertEqual(server.requests.first?.json?["mime_type"], "audio/mp4")
    }

    func testTheRecordingsWholeWalk() async throws {
        let (client, server, traces) = try replay(["18", "19", "20", "21", "22", "23", "24", "25", "26", "27", "28", "29", "30", "31", "32", "33", "34"],
                                                  tokens: main)
        let intent = try await client.createUploadIntent(profileID: 1, cueID: 10)
        XCTAssertEqual(intent.uploadIntentId, 1)
        let url = try XCTUnwrap(intent.uploadUrl)
        let m4a = Data(try Trace.chatterbox("34").body)
        try await client.upload(m4a, to: url)
        let completed = try await client.completeUpload(intentID: 1, seconds: 4.2)
        XCTAssertTrue(completed.success)
        XCTAssertEqual(completed.file?.fileId, 2)
        var history = try await client.history(profileID: 1)
        XCTAssertEqual(history.recordings.first?.profileCueRecordingId, 1)
        XCTAssertEqual(history.recordings.first?.report.status, "none")
        let value4 = try await client.requestEvaluation(recordingID: 1).status
        XCTAssertEqual(value4, "transcript_not_ready")
        let value5 = try await client.requestTranscription(recordingID: 1).status
        XCTAssertEqual(value5, "started")
        let value6 = try await client.requestTranscription(recordingID: 1).status
        XCTAssertEqual(value6, "in_progress")
        let value7 = try await client.history(profileID: 1).recordings[0].report.status
        XCTAssertEqual(value7, "processing")
        history = try await client.history(profileID: 1)
        XCTAssertEqual(history.recordings[0].report.status, "ready")
        XCTAssertNotNil(history.recordings[0].report.transcript)
        let value8 = try await client.requestTranscription(recordingID: 1).status
        XCTAssertEqual(value8, "already_transcribed")
        let value9 = try await client.requestEvaluation(recordingID: 1).status
        XCTAssertEqual(value9, "started")
        let value10 = try await client.requestEvaluation(recordingID: 1).status
        XCTAssertEqual(value10, "in_progress")
        let value11 = try await client.history(profileID: 1).recordings[0].report.evaluation.status
        XCTAssertEqual(value11, "processing")
        history = try await client.history(profileID: 1)
        let evaluation = try XCTUnwrap(history.recordings[0].report.evaluation.result)
        XCTAssertEqual(evaluation.cefrLevel, "B1")
        XCTAssertEqual(evaluation.grammarMistakes.first?.original, "I go to")
        XCTAssertEqual(evaluation.grammarMistakes.first?.correction, "I went to")
        XCTAssertFalse(evaluation.improvedVersion.isEmpty)
        let value12 = try await client.requestEvaluation(recordingID: 1).status
        XCTAssertEqual(value12, "already_evaluated")
        let detail = try await client.cue(profileID: 1, cueID: 10)
        XCTAssertEqual(detail.cue.recordings?.first?.profileCueRecordingId, 1)
        let download = try XCTUnwrap(detail.url(of: 2))
        let bytes = try await client.download(download)
        XCTAssertEqual(bytes, m4a, "the download is the uploaded file")
        XCTAssertEqual(server.requests.count, traces.count)
        for (request, trace) in zip(server.requests, traces) {
            assertRequest(request, matches: trace)
            if trace.method != "POST" {
                XCTAssertNil(request.header("Authorization"), "\(trace.name): no token to the files service")
                XCTAssertNil(request.header("X-Refresh-Token"), "\(trace.name): no token to the files service")
            }
        }
        XCTAssertEqual(server.requests[1].body, Array(m4a), "the PUT carries the file")
    }

    /// The phone app's recording (trace 34: AAC-LC, 44.1 kHz mono, as Chatterbox's apps
    /// record) decodes in AudioKernel, which is what `cue.play_recording` plays.
    func testThePhoneAppsRecordingDecodes() throws {
        let url = stateDirectory.appendingPathComponent("phone.m4a")
        try Data(try Trace.chatterbox("34").body).write(to: url)
        let decoder = try MPEG4AudioDecoder(path: url.path)
        XCTAssertEqual(decoder.sampleRate, 44_100)
        let samples = try decoder.readAll()
        XCTAssertGreaterThan(samples.count, 44_100, "over a second of audio")
        XCTAssertGreaterThan(samples.map { abs(Int($0)) }.max() ?? 0, 1_000, "not silence")
    }

    func testASecondIntentInTheSameSecondIsADuplicateToRetry() async throws {
        let (client, server, _) = try replay(["35"], tokens: main)
        defer { withExtendedLifetime(server) {} }
        let value13 = try await client.createUploadIntent(profileID: 1, cueID: 196).uploadIntentId
        XCTAssertEqual(value13, 2)
        let (again, secondServer, _) = try replay(["36"], tokens: main)
        defer { withExtendedLifetime(secondServer) {} }
        let refused = await outcome { try await again.createUploadIntent(profileID: 1, cueID: 196) }
        XCTAssertEqual(refused.failure?.isDuplicateIntent, true)
        XCTAssertEqual(refused.failure?.isTransient, true)
    }

    /// 37-40: what a client bug would get. Ours sends exactly the keys with a JSON type; the
    /// answers still decode to a refusal by code.
    func testTheClientsBodiesHaveExactlyTheFunctionsKeysAndPGRST202IsARefusal() async throws {
        let (client, server, _) = try replay(["40"], tokens: main)
        let refused = await outcome { try await client.cues(profileID: 1, count: 5) }
        XCTAssertEqual(refused.failure, .refused(status: 404, code: "PGRST202", hint: nil))
        XCTAssertEqual(server.requests.first?.json, ["profile_id": 1, "count": 5])
        XCTAssertEqual(server.requests.first?.header("Content-Type"), "application/json")
    }

    func testNoTokenIsSignInRequiredWithoutARequest() async throws {
        let (client, server, _) = try replay(["41"], tokens: nil)
        let result = await outcome { try await client.me() }
        XCTAssertEqual(result.failure, .signInRequired("not signed in"))
        XCTAssertEqual(server.requests.count, 0)
    }

    // MARK: - Tokens (42-48, 56-59)

    /// A 401 (bad signature) refreshes once and retries once.
    func testA401RefreshesOnceAndRetries() async throws {
        let (client, server, traces) = try replay(["42", "11", "44"], tokens: ChatterboxTokens(accessToken: "<ACCESS_TOKEN_2_BAD_SIGNATURE>", refreshToken: "<REFRESH_TOKEN_2>"))
        let me = try await client.me()
        XCTAssertEqual(me.activeProfile?.profileId, 1)
        XCTAssertEqual(client.tokens.current, ChatterboxTokens(accessToken: "<ACCESS_TOKEN_3>", refreshToken: "<REFRESH_TOKEN_3>"))
        XCTAssertEqual(server.requests.map(\.path), ["/rpc/me", "/rpc/refresh_tokens", "/rpc/me"])
        assertRequest(server.requests[0], matches: traces[0])
        assertRequest(server.requests[1], matches: traces[2])
        XCTAssertEqual(server.requests[2].header("Authorization"), "Bearer <ACCESS_TOKEN_3>", "the retry carries the new token")
    }

    /// 45, 46, 47: every refused refresh means sign in again, and the pair is forgotten.
    func testARefusedRefreshAsksForSignInAndForgetsThePair() async throws {
        for refusal in ["45", "46", "47"] {
            let (client, server, _) = try replay(["57", refusal], tokens: main)
            let result = await outcome { try await client.me() }
            guard case .signInRequired = result.failure else { return XCTFail("\(refusal): \(result)") }
            XCTAssertNil(client.tokens.current, refusal)
            XCTAssertFalse(FileManager.default.fileExists(atPath: stateDirectory.appendingPathComponent("chatterbox-tokens.json").path), refusal)
            XCTAssertEqual(server.requests.map(\.path), ["/rpc/me", "/rpc/refresh_tokens"], refusal)
        }
    }

    /// 48 and 58: the gateway's new pair replaces the kept one, even for an expired token.
    func testANewPairInTheHeadersIsKept() async throws {
        for (name, access) in [("48", "<ACCESS_TOKEN_3>"), ("58", "<ACCESS_TOKEN_4>"), ("56", "<ACCESS_TOKEN_2>")] {
            let (client, server, traces) = try replay([name], tokens: main)
            _ = try await client.me()
            XCTAssertEqual(client.tokens.current?.accessToken, access, name)
            assertRequest(server.requests[0], matches: traces[0])
        }
    }

    /// 59: a 401 although the refresh token was sent, and a refresh the backend refuses.
    func testA401WithABadRefreshTokenEndsInSignIn() async throws {
        let (client, server, _) = try replay(["59", "45"], tokens: ChatterboxTokens(accessToken: "<ACCESS_TOKEN_2>", refreshToken: "not-a-refresh-token"))
        let result = await outcome { try await client.me() }
        guard case .signInRequired = result.failure else { return XCTFail("\(result)") }
        XCTAssertEqual(server.requests.count, 2)
    }

    // MARK: - Failures (49-55)

    func testAProviderFailureIsProcessingFallingBackToNone() async throws {
        let (client, server, _) = try replay(["49", "50", "51", "52", "53"], tokens: main)
        defer { withExtendedLifetime(server) {} }
        let value14 = try await client.requestTranscription(recordingID: 2).status
        XCTAssertEqual(value14, "started")
        let processing = try await client.history(profileID: 1)
        XCTAssertEqual(processing.recordings.first { $0.profileCueRecordingId == 2 }?.report.status, "processing")
        // processed_files is not in the order of the recordings: looked up by file_id.
        for recording in processing.recordings { XCTAssertNotNil(processing.url(of: recording.fileId)) }
        let value15 = try await client.history(profileID: 1).recordings.first { $0.profileCueRecordingId == 2 }?.report.status
        XCTAssertEqual(value15, "none")
        let value16 = try await client.requestTranscription(recordingID: 2).status
        XCTAssertEqual(value16, "started")
        let value17 = try await client.history(profileID: 1).recordings.first { $0.profileCueRecordingId == 2 }?.report.status
        XCTAssertEqual(value17, "ready")
    }

    func testAMissingObjectIsAFilesError() async throws {
        let (client, server, traces) = try replay(["54", "55"], tokens: main)
        let value18 = try await client.completeUpload(intentID: 3, seconds: 4).success
        XCTAssertTrue(value18)
        let url = server.baseURL.absoluteString + traces[1].path
        let result = await outcome { try await client.download(url) }
        XCTAssertEqual(result.failure, .files(status: 500, text: "internal server error"))
    }
}
