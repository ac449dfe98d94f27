import AudioKernel
import Foundation
import PracticeKit
import PracticeNet
import SimulatorKit
import TestSupport
import XCTest

/// practice-sim's Chatterbox mode against the real backend: the 59 exchanges of
/// `shared/chatterbox-traces` are made again, in order, on the simulator over raw TCP (the
/// same requests, with the simulator's own tokens, ids and URLs, on a clock the test
/// moves), and each answer must have the recorded shape: status, Content-Type, the token
/// and `Www-Authenticate` headers where the backend sends them, JSON key sets, types and
/// which values are null, the error object's code and hint. Wording, ids, URLs and
/// timings differ by design.
final class ChatterboxSimulatorConformanceTests: XCTestCase {
    private static let nullable: Set<String> = [
        "$.active_profile", "$.details", "$.hint", "$.account.phone_number",
        "$.recordings[].report.transcript", "$.recordings[].report.evaluation.result",
        "$.cue.recordings[].report.transcript", "$.cue.recordings[].report.evaluation.result",
    ]

    private var server: HTTPServer!
    private var base: URL!
    private var simulator: ChatterboxSimulator!
    private let clock = Locked(1_795_588_000.0)
    private let email = "kiosk-learner@chatterbox.invalid"
    private var access = "", refresh = ""

    override func setUpWithError() throws {
        let clock = clock
        simulator = ChatterboxSimulator(now: { clock.withLock { $0 } })
        let simulator = simulator!
        server = HTTPServer { request, writer in simulator.handle(request, writer) }
        base = URL(string: "http://127.0.0.1:\(try server.start())")!
        simulator.baseURL = base.absoluteString
    }

    override func tearDown() { server.stop() }

    private func advance(_ seconds: Double) { clock.withLock { $0 += seconds } }

    /// `POST /rpc/name` with `body`, as the recording client sent it.
    private func rpc(_ name: String, _ body: JSONValue, token: String? = nil, refreshToken: String? = nil,
                     contentType: String? = "application/json") throws -> RawHTTPResponse {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if let refreshToken { headers.append(("X-Refresh-Token", refreshToken)) }
        return try RawHTTP.exchange(base, "POST", "/rpc/\(name)", contentType: contentType, body: body.bytes(), headers: headers, timeout: 5)
    }

    /// The answer has trace `name`'s shape; its JSON, for the next request.
    @discardableResult
    private func check(_ response: RawHTTPResponse, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        let trace = try Trace.chatterbox(name)
        XCTAssertEqual(response.status, trace.status, "\(trace.name): status", file: file, line: line)
        XCTAssertEqual(response.header("Content-Type") ?? "", trace.contentType, "\(trace.name): Content-Type", file: file, line: line)
        for header in ["X-New-Access-Token", "X-New-Refresh-Token", "Www-Authenticate"] {
            XCTAssertEqual(response.header(header) != nil, trace.headers[header] != nil, "\(trace.name): \(header)", file: file, line: line)
        }
        guard let recorded = trace.json else {
            if trace.contentType.hasPrefix("text/plain") { XCTAssertEqual(response.body, trace.body, "\(trace.name): text", file: file, line: line) }
            return .null
        }
        let mine = try XCTUnwrap(Trace.parse(response.body), "\(trace.name): not JSON", file: file, line: line)
        XCTAssertEqual(SimulatorConformanceTests.shapeDifferences(mine, recorded, nullable: Self.nullable), [], trace.name, file: file, line: line)
        for key in ["code", "hint", "status", "success"] where recorded[key] != nil && recorded[key] != .null {
            XCTAssertEqual(mine[key], recorded[key], "\(trace.name): \(key)", file: file, line: line)
        }
        return mine
    }

    private func tokens(from json: JSONValue) {
        access = json["access_token"]?.stringValue ?? access
        refresh = json["refresh_token"]?.stringValue ?? refresh
    }

    /// Every trace, in the recording's order.
    func testEveryTraceHasTheSimulatorsAnswerInItsShape() throws {
        try check(rpc("app_config", [:]), "01")
        // 02: the reviewer account is the deployment's; a kiosk never uses it (not simulated).
        try check(rpc("request_magic_link", ["identifier": .string(email)]), "03")
        let letter = try RawHTTP.exchange(base, "GET", "/_sim/mail?to=\(email)")
        let magic = try XCTUnwrap(Trace.parse(letter.body)?["magic_token"]?.stringValue)
        tokens(from: try check(rpc("login_with_magic_token", ["token": .string(magic)]), "04"))
        try check(rpc("login_with_magic_token", ["token": .string(magic)]), "05")
        try check(rpc("request_login_code", ["identifier": .string(email)]), "06")
        try check(rpc("login_with_code", ["identifier": .string(email), "code": "000000"]), "07")
        advance(1)
        tokens(from: try check(rpc("login_with_code", ["identifier": .string(email), "code": "123456"]), "08"))
        let me = try check(rpc("me", [:], token: access), "09")
        let account = try XCTUnwrap(me["account"]?["account_id"]?.intValue)
        let profile = try XCTUnwrap(try check(rpc("set_active_profile", ["account_id": .int(account), "language_code": "en"], token: access), "10")["profile_id"])
        try check(rpc("me", [:], token: access), "11")
        let first = try check(rpc("get_cues", ["profile_id": profile, "count": 5], token: access), "12")
        XCTAssertEqual(try check(rpc("get_cues", ["profile_id": profile, "count": 5], token: access), "13"), first, "the same batch again")
        let shuffled = try check(rpc("shuffle_cues", ["profile_id": profile, "count": 5], token: access), "14")
        XCTAssertNotEqual(shuffled, first)
        XCTAssertEqual(try check(rpc("get_cues", ["profile_id": profile, "count": 5], token: access), "15"), shuffled)
        try check(rpc("get_profile_recording_history", ["profile_id": profile], token: access), "16")
        let cue = try XCTUnwrap(shuffled.arrayValue?.first?["cue_id"])
        try check(rpc("create_recording_upload_intent", ["profile_id": profile, "cue_id": cue, "mime_type": "audio/wav"], token: access), "17")
        let intent = try check(rpc("create_recording_upload_intent", ["profile_id": profile, "cue_id": cue, "mime_type": "audio/mp4"], token: access), "18")
        let upload = try XCTUnwrap(URL(string: intent["upload_url"]?.stringValue ?? ""))
        let m4a = try Trace.chatterbox("34").body
        try check(RawHTTP.exchange(base, "PUT", upload.path, contentType: "audio/mp4", body: m4a), "19")
        let completed = try check(rpc("complete_recording_upload", ["upload_intent_id": intent["upload_intent_id"] ?? .null, "metadata": ["duration": "4"]],
                                      token: access), "20")
        let history = try check(rpc("get_profile_recording_history", ["profile_id": profile], token: access), "21")
        XCTAssertEqual(history["recordings"]?.arrayValue?.first?["file_id"], completed["file"]?["file_id"])
        let recording = try XCTUnwrap(history["recordings"]?.arrayValue?.first?["profile_cue_recording_id"])
        try check(rpc("request_recording_evaluation", ["profile_cue_recording_id": recording], token: access), "22")
        try check(rpc("request_recording_transcription", ["profile_cue_recording_id": recording], token: access), "23")
        try check(rpc("request_recording_transcription", ["profile_cue_recording_id": recording], token: access), "24")
        try check(rpc("get_profile_recording_history", ["profile_id": profile], token: access), "25")
        advance(4)
        try check(rpc("get_profile_recording_history", ["profile_id": profile], token: access), "26")
        try check(rpc("request_recording_transcription", ["profile_cue_recording_id": recording], token: access), "27")
        try check(rpc("request_recording_evaluation", ["profile_cue_recording_id": recording], token: access), "28")
        try check(rpc("request_recording_evaluation", ["profile_cue_recording_id": recording], token: access), "29")
        try check(rpc("get_profile_recording_history", ["profile_id": profile], token: access), "30")
        advance(11.1)
        let evaluated = try check(rpc("get_profile_recording_history", ["profile_id": profile], token: access), "31")
        try check(rpc("request_recording_evaluation", ["profile_cue_recording_id": recording], token: access), "32")
        let detail = try check(rpc("get_cue_for_profile", ["profile_id": profile, "cue_id": cue], token: access), "33")
        let download = try XCTUnwrap(URL(string: detail["processed_files"]?.arrayValue?.first?["url"]?.stringValue ?? ""))
        let downloaded = try RawHTTP.exchange(base, "GET", download.path)
        try check(downloaded, "34")
        XCTAssertEqual(downloaded.body, m4a, "the download is the upload")
        XCTAssertEqual(evaluated["processed_files"]?.arrayValue?.count, 1)

        // 35-36: two intents for one cue in the same second.
        let other = try XCTUnwrap(shuffled.arrayValue?.dropFirst().first?["cue_id"])
        try check(rpc("create_recording_upload_intent", ["profile_id": profile, "cue_id": other, "mime_type": "audio/mp4"], token: access), "35")
        try check(rpc("create_recording_upload_intent", ["profile_id": profile, "cue_id": other, "mime_type": "audio/mp4"], token: access), "36")
        // 37-40: content types and keys.
        try check(rpc("get_cues", ["profile_id": profile, "count": 5], token: access, contentType: nil), "37")
        try check(rpc("get_cues", ["profile_id": profile, "count": 5], token: access, contentType: "application/x-www-form-urlencoded"), "38")
        try check(rpc("get_cues", ["profile_id": profile], token: access), "39")
        try check(rpc("get_cues", ["profile_id": profile, "count": 5, "extra": 1], token: access), "40")
        // 41-43: no token, a bad signature, a creator's call.
        try check(rpc("me", [:]), "41")
        try check(rpc("me", [:], token: access + "x"), "42")
        try check(rpc("update_cue_stage", ["cue_id": cue, "stage": "archived"], token: access), "43")
        // 44-48: refreshing.
        advance(1)
        let refreshed = try check(rpc("refresh_tokens", ["refresh_token": .string(refresh)]), "44")
        try check(rpc("refresh_tokens", ["refresh_token": .string(refresh + "x")]), "45")
        try check(rpc("refresh_tokens", ["refresh_token": "garbage"]), "46")
        try check(rpc("refresh_tokens", ["refresh_token": .string(access)]), "47")
        tokens(from: refreshed)
        try check(rpc("me", [:], token: access, refreshToken: refresh), "48")

        // 49-53: a failing provider, then a healthy one.
        simulator.update { $0.providerFailures = 1 }
        let second = try check(rpc("create_recording_upload_intent", ["profile_id": profile, "cue_id": other, "mime_type": "audio/mp4"], token: access), "35")
        let secondUpload = try XCTUnwrap(URL(string: second["upload_url"]?.stringValue ?? ""))
        try check(RawHTTP.exchange(base, "PUT", secondUpload.path, contentType: "audio/mp4", body: m4a), "19")
        try check(rpc("complete_recording_upload", ["upload_intent_id": second["upload_intent_id"] ?? .null, "metadata": ["duration": "4"]], token: access), "20")
        let newest = try XCTUnwrap(try check(rpc("get_profile_recording_history", ["profile_id": profile], token: access), "50")["recordings"]?.arrayValue?.first)
        let failing = try XCTUnwrap(newest["profile_cue_recording_id"])
        try check(rpc("request_recording_transcription", ["profile_cue_recording_id": failing], token: access), "49")
        try check(rpc("get_profile_recording_history", ["profile_id": profile], token: access), "50")
        advance(4)
        let fell = try check(rpc("get_profile_recording_history", ["profile_id": profile], token: access), "51")
        XCTAssertEqual(fell["recordings"]?.arrayValue?.first?["report"]?["status"], "none", "processing fell back to none")
        try check(rpc("request_recording_transcription", ["profile_cue_recording_id": failing], token: access), "52")
        advance(4)
        try check(rpc("get_profile_recording_history", ["profile_id": profile], token: access), "53")
        // 54-55: completed without a PUT; its download.
        advance(1)
        let third = try check(rpc("create_recording_upload_intent", ["profile_id": profile, "cue_id": cue, "mime_type": "audio/mp4"], token: access), "18")
        let unput = try check(rpc("complete_recording_upload", ["upload_intent_id": third["upload_intent_id"] ?? .null, "metadata": ["duration": "4"]],
                                  token: access), "54")
        let missing = try XCTUnwrap(URL(string: unput["processed_files"]?.arrayValue?.first?["url"]?.stringValue ?? ""))
        try check(RawHTTP.exchange(base, "GET", missing.path), "55")
        // 56-59: the access token expires (3600 s here; PostgREST's 30 s of leeway).
        advance(3_605 - 2)
        try check(rpc("me", [:], token: access), "56")
        advance(30)
        try check(rpc("me", [:], token: access), "57")
        try check(rpc("me", [:], token: access, refreshToken: refresh), "58")
        try check(rpc("me", [:], token: access, refreshToken: "not-a-refresh-token"), "59")
    }
}
