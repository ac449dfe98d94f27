import Foundation
import Glibc
import PracticeKit
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// What a hostile or broken Chatterbox backend can send the client: each bounded, each a
/// clear error, nothing kept that should not be (flows.md's shapes, taken to extremes).
final class ChatterboxHostileTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory()
        addTeardownBlock { [directory] in try? FileManager.default.removeItem(at: directory!) }
    }

    private func outcome<T>(_ body: () async throws -> T) async -> Result<T, ChatterboxError> {
        do { return .success(try await body()) } catch let error as ChatterboxError { return .failure(error) } catch {
            return .failure(.backend(.invalidResponse("not a ChatterboxError: \(error)")))
        }
    }

    /// A signed-in client with a profile, against `cues`.
    private func learner(_ cues: ChatterboxHarness) async throws -> (ChatterboxClient, Int) {
        let client = cues.client(stateDirectory: directory.path)
        try await client.requestLoginCode(email: "learner@example.invalid")
        try await client.signIn(email: "learner@example.invalid", code: "123456")
        let me = try await client.me()
        return (client, try await client.setActiveProfile(accountID: me.account.accountId, languageCode: "en").profileId)
    }

    /// An evaluation of 5 MB: the answer carrying it is refused past the 4 MiB limit, read
    /// no further, and the error names the limit.
    func testA5MBEvaluationIsRefusedAtTheLimit() async throws {
        let cues = try ChatterboxHarness {
            $0.evaluationPadding = 5 << 20
            $0.transcriptionSeconds = 0
            $0.evaluationSeconds = 0
        }
        let (client, profile) = try await learner(cues)
        let intent = try await client.createUploadIntent(profileID: profile, cueID: 10)
        try await client.upload(Data(try Trace.chatterbox("34").body), to: try XCTUnwrap(intent.uploadUrl))
        _ = try await client.completeUpload(intentID: intent.uploadIntentId, seconds: 4)
        let detail = try await client.cue(profileID: profile, cueID: 10)
        let recording = try XCTUnwrap(detail.cue.recordings?.first?.profileCueRecordingId)
        _ = try await client.requestTranscription(recordingID: recording)
        _ = try await client.cue(profileID: profile, cueID: 10)  // settles the transcript
        _ = try await client.requestEvaluation(recordingID: recording)
        let result = await outcome { try await client.cue(profileID: profile, cueID: 10) }
        XCTAssertEqual(result.failure, .backend(.invalidResponse("an answer larger than \(ChatterboxClient.maximumAnswerBytes) bytes")))
        XCTAssertEqual(result.failure?.isTransient, false, "not retried as if the network failed")
    }

    /// A history of 10,000 recordings is over the limit: told, while the cue's own
    /// recordings (what the kiosk polls) still come.
    func testAHistoryOf10000RecordingsIsToldAndTheCuesOwnStillCome() async throws {
        let cues = try ChatterboxHarness { $0.extraRecordings = 10_000 }
        let (client, profile) = try await learner(cues)
        let history = await outcome { try await client.history(profileID: profile) }
        XCTAssertEqual(history.failure, .backend(.invalidResponse("an answer larger than \(ChatterboxClient.maximumAnswerBytes) bytes")))
        let other = try await client.cue(profileID: profile, cueID: 196)
        XCTAssertEqual(other.cue.recordings, [])
    }

    /// An upload URL on a loopback port that accepts and never answers: the upload ends at
    /// the request deadline, as a failure worth retrying.
    func testAnUploadURLThatNeverAnswersEndsAtTheDeadline() async throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        XCTAssertEqual(listen(fd, 8), 0)  // never accepted: connections wait in the backlog
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        let cues = try ChatterboxHarness()
        let client = ChatterboxClient(configuration: SimulatorHarness.configuration(cues.baseURL) { $0.requestTimeout = 0.5 },
                                      tokens: ChatterboxTokenStore(stateDirectory: directory.path))
        let start = Date()
        let result = await outcome { try await client.upload(Data([1, 2, 3]), to: "http://127.0.0.1:\(port)/u/v1.put.1.2.sig") }
        XCTAssertEqual(result.failure, .backend(.timedOut(seconds: 0.5)))
        XCTAssertEqual(result.failure?.isTransient, true)
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
    }

    /// A 1 MB token: refused before it is kept or sent in a header; nobody is signed in.
    func testA1MBTokenIsRefusedAndNotKept() async throws {
        let huge = String(repeating: "a", count: 1 << 20)
        let server = HTTPServer { _, writer in
            writer.respond(status: 200, contentType: "application/json; charset=utf-8",
                           body: Array("{\"access_token\": \"\(huge)\", \"refresh_token\": \"r\"}".utf8))
        }
        let port = try server.start()
        defer { server.stop() }
        let client = ChatterboxClient(configuration: SimulatorHarness.configuration(URL(string: "http://127.0.0.1:\(port)")!),
                                      tokens: ChatterboxTokenStore(stateDirectory: directory.path))
        let result = await outcome { try await client.signIn(email: "learner@example.invalid", code: "123456") }
        XCTAssertEqual(result.failure, .backend(.invalidResponse("a token pair that cannot be sent back")))
        XCTAssertFalse(client.isSignedIn)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.appendingPathComponent("chatterbox-tokens.json").path))
    }

    /// A cue whose markdown holds HTML reaches the client as the text it is (the UI shows it
    /// as text: KioskUITests).
    func testACueWithHTMLComesAsText() async throws {
        let cues = try ChatterboxHarness { $0.hostileCueDetails = true }
        let (client, profile) = try await learner(cues)
        let cards = try await client.cues(profileID: profile, count: 5)
        XCTAssertEqual(cards.count, 5)
        XCTAssertTrue(cards.allSatisfy { $0.content.details?.contains("<script>alert('cue')</script>") == true })
    }
}

extension Result {
    /// The error, when it failed.
    var failure: Failure? { if case .failure(let f) = self { return f } else { return nil } }
}
