import AudioKernel
import Foundation
import PracticeKit
import PracticeNet
import SimulatorKit
import TestSupport
import XCTest

/// practice-sim against the real server: each scenario of `shared/talkco-traces` is driven
/// on practice-sim the same way, over raw TCP, and its answers must have the recorded
/// shapes: status, Content-Type, framing (Content-Length or chunked), JSON key sets and
/// which values may be null, SSE grammar, event order and each event's data keys. Texts,
/// ids, audio and timings differ by design (the simulator speaks its own phrases).
final class SimulatorConformanceTests: XCTestCase {
    private var sim: SimulatorHarness!
    private let user = "630478590"

    override func tearDown() {
        sim = nil
    }

    // MARK: - Comparing shapes

    /// Fields the traces or their README show both null and not null.
    private static let nullable: Set<String> = ["$.summary", "$.user_name", "$.level", "$.learning_goal",
                                                "$.summary.weaknesses.grammar", "$.summary.weaknesses.naturalness",
                                                "$.summary.weaknesses.sentence_structure"]

    /// Where `actual`'s shape differs from `recorded`'s.
    static func shapeDifferences(_ actual: JSONValue, _ recorded: JSONValue, at path: String = "$", nullable: Set<String> = nullable) -> [String] {
        switch (actual, recorded) {
        case (.object(let a), .object(let r)):
            let actualKeys = Set(a.map(\.0)), recordedKeys = Set(r.map(\.0))
            var differences: [String] = []
            if actualKeys != recordedKeys {
                differences.append("\(path): keys \(actualKeys.sorted()) where the server has \(recordedKeys.sorted())")
            }
            for (key, value) in r {
                if let mine = actual[key] { differences += shapeDifferences(mine, value, at: "\(path).\(key)", nullable: nullable) }
            }
            return differences
        case (.array(let a), .array(let r)):
            // Item by item where the counts agree (a 422 lists items of different shapes).
            if a.count == r.count { return zip(a, r).flatMap { shapeDifferences($0, $1, at: "\(path)[]", nullable: nullable) } }
            guard let model = r.first else { return [] }
            return a.flatMap { shapeDifferences($0, model, at: "\(path)[]", nullable: nullable) }
        case (.null, .null):
            return []
        case (.null, _), (_, .null):
            return nullable.contains(path) ? [] : ["\(path): \(kind(actual)) where the server has \(kind(recorded))"]
        default:
            return kind(actual) == kind(recorded) ? [] : ["\(path): \(kind(actual)) where the server has \(kind(recorded))"]
        }
    }

    private static func kind(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "bool"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// Event names with runs of audio folded (`audio+`): the order that must match.
    private static func pattern(_ names: [String]) -> [String] {
        names.reduce(into: [String]()) { folded, name in
            let item = name == "audio" ? "audio+" : name
            if item == "audio+" && folded.last == "audio+" { return }
            folded.append(item)
        }
    }

    /// Checks one answer of practice-sim against the trace `name` (and, for event order,
    /// any of `orders`' traces: a late transcript is one of the server's shapes).
    @discardableResult
    private func check(_ response: RawHTTPResponse, against name: String, orders: [String] = [], file: StaticString = #filePath,
                       line: UInt = #line) throws -> [(name: String, data: [UInt8], bytes: [UInt8])] {
        let trace = try Trace.load(name)
        XCTAssertEqual(response.status, trace.status, "\(name): status", file: file, line: line)
        XCTAssertEqual(response.header("Content-Type"), trace.contentType, "\(name): Content-Type", file: file, line: line)
        if trace.isStream {
            XCTAssertTrue(response.chunked, "\(name): a stream is chunked", file: file, line: line)
            XCTAssertNil(response.header("Content-Length"), "\(name): a stream has no Content-Length", file: file, line: line)
            let events = try Trace.sseEvents(in: response.body)
            let allowed = try ([name] + orders).map { try Self.pattern(Trace.load($0).eventNames) }
            XCTAssertTrue(allowed.contains(Self.pattern(events.map(\.name))),
                          "\(name): events \(Self.pattern(events.map(\.name))) where the server sends one of \(allowed)", file: file, line: line)
            for event in events {
                // Python's json.dumps: ASCII only, `\uXXXX` escapes.
                XCTAssertFalse(event.data.contains { $0 >= 0x80 }, "\(name): raw non-ASCII in SSE data", file: file, line: line)
                guard let model = trace.events.first(where: { $0.name == event.name })?.json ?? (event.name == "transcript" ? ["text": ""] : nil) else { continue }
                let data = try XCTUnwrap(Trace.parse(event.data), "\(name): \(event.name) data is not JSON", file: file, line: line)
                XCTAssertEqual(Self.shapeDifferences(data, model), [], "\(name): \(event.name)", file: file, line: line)
            }
            return events
        }
        XCTAssertFalse(response.chunked, "\(name): a REST answer is not chunked", file: file, line: line)
        XCTAssertEqual(response.header("Content-Length").flatMap(Int.init), response.body.count, "\(name): Content-Length", file: file, line: line)
        if let recorded = trace.json {
            let body = try XCTUnwrap(Trace.parse(response.body), "\(name): not JSON: \(String(decoding: response.body, as: UTF8.self))",
                                     file: file, line: line)
            XCTAssertEqual(Self.shapeDifferences(body, recorded), [], "\(name)", file: file, line: line)
            // FastAPI writes compact JSON with raw UTF-8.
            XCTAssertFalse(String(decoding: response.body, as: UTF8.self).contains("\": "), "\(name): not compact", file: file, line: line)
        } else {
            XCTAssertEqual(response.body, trace.body, "\(name): body", file: file, line: line)
        }
        return []
    }

    // MARK: - Driving practice-sim

    private func start(_ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
        sim = try SimulatorHarness {
            $0.upstreamIdleMs = 200
            configure(&$0)
        }
    }

    private func call(_ method: String, _ path: String, json: String? = nil, until: (([UInt8]) -> Bool)? = nil) throws -> RawHTTPResponse {
        try RawHTTP.exchange(sim.baseURL, method, path, contentType: json == nil ? nil : "application/json", body: Array((json ?? "").utf8),
                             until: until)
    }

    private func upload(_ session: String, samples: [Int16]) throws -> RawHTTPResponse {
        let boundary = "----talkcoTrace0123456789abcdef"
        let wav = try WAVEncoder.encode(samples)
        let body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"turn.wav\"\r\nContent-Type: audio/wav\r\n\r\n".utf8)
            + wav + Array("\r\n--\(boundary)--\r\n".utf8)
        return try RawHTTP.exchange(sim.baseURL, "POST", "/sessions/\(session)/chat", contentType: "multipart/form-data; boundary=\(boundary)", body: body)
    }

    private func createSession(_ mode: String = "conversation", topic: String? = "daily_life") throws -> String {
        let topicJSON = topic.map { "\"\($0)\"" } ?? "null"
        let created = try call("POST", "/sessions", json: "{\"user_id\": \"\(user)\", \"user_name\": \"Mei\", \"topic_id\": \(topicJSON), \"mode\": \"\(mode)\"}")
        return try XCTUnwrap(Trace.parse(created.body)?["session_id"]?.stringValue)
    }

    private static let speech = KioskSamples.learner
    private static func audioEvents(_ body: [UInt8]) -> Int { (try? Trace.sseEvents(in: body))?.filter { $0.name == "audio" }.count ?? 0 }

    // MARK: - The conversation (traces 01–28, but 09–12)

    func testAConversationHasTheServersShapes() throws {
        try start()
        try check(call("GET", "/topics"), against: "01")
        let created = try call("POST", "/sessions", json: "{\"user_id\": \"\(user)\", \"user_name\": \"Mei\", \"topic_id\": \"daily_life\", \"mode\": \"conversation\"}")
        try check(created, against: "02")
        let id = try XCTUnwrap(Trace.parse(created.body)?["session_id"]?.stringValue)
        XCTAssertEqual(id.count, 36, "a uuid4")
        try check(call("POST", "/sessions/\(id)/start"), against: "03")
        try check(upload(id, samples: Self.speech), against: "04", orders: ["14"])
        // Silence: an empty transcript, then the spoken "didn't catch that" (trace 05).
        let silence = try check(upload(id, samples: [Int16](repeating: 0, count: 24_000)), against: "05")
        XCTAssertEqual(Trace.parse(silence.first?.data ?? [])?["text"], "")
        try check(upload(id, samples: Array(Self.speech.prefix(1_200))), against: "06")
        try check(call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"I very like cooking, especially beef noodles.\"}"), against: "07")
        try check(call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"   \"}"), against: "08")
        try check(call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"Is there any news about the weather this weekend?\"}"), against: "13")
        sim.simulator.faults.noTranscript = true
        try check(upload(id, samples: Self.speech), against: "15")
        sim.simulator.faults.noTranscript = false
        try check(call("POST", "/sessions/\(id)/start"), against: "16")

        try check(call("DELETE", "/sessions/\(id)"), against: "17")
        try check(call("GET", "/sessions/\(id)/review"), against: "18")
        let reviewed = try call("GET", "/sessions/\(id)/review")
        try check(reviewed, against: "19")
        let review = try XCTUnwrap(Trace.parse(reviewed.body))
        XCTAssertEqual(review["status"], "reviewed")
        XCTAssertEqual(review["segments"]?.arrayValue?.count, 2, "only the turns with a transcript and a reply are saved")
        XCTAssertFalse(review["segments"]?.arrayValue?.first?["ai_marks"]?.arrayValue?.isEmpty ?? true, "marks come with reviewed")
        let segment = try XCTUnwrap(review["segments"]?.arrayValue?.first?["id"]?.intValue)
        try check(call("POST", "/sessions/\(id)/corrections", json: "{\"segment_id\": \(segment), \"user_message\": \"這句怎麼說比較自然？\"}"), against: "20")
        let withCorrection = try call("GET", "/sessions/\(id)/review")
        try check(withCorrection, against: "21")
        XCTAssertEqual(Trace.parse(withCorrection.body)?["segments"]?.arrayValue?.first?["corrections"]?.arrayValue?.count, 1)
        try check(call("POST", "/sessions/\(id)/corrections", json: "{\"segment_id\": 999999999, \"user_message\": \"這句怎麼說比較自然？\"}"), against: "22")
        try check(call("POST", "/sessions/\(id)/end"), against: "24")
        try check(call("GET", "/sessions/\(id)/review"), against: "25")
        let early = try call("GET", "/sessions/\(id)/review")
        try check(early, against: "26")
        XCTAssertEqual(Trace.parse(early.body)?["status"], "completing", "the summary comes while the status still says completing")
        try check(call("GET", "/sessions/\(id)/review"), against: "27")
        try check(call("POST", "/sessions/\(id)/end"), against: "28")

        try check(call("GET", "/users/\(user)/profile"), against: "30")
        try check(call("POST", "/users/\(user)/evaluate"), against: "31")
        let goal = try call("POST", "/users/\(user)/learning-goal", json: "{\"learning_goal\": \"  Speak up in meetings  \"}")
        try check(goal, against: "32")
        XCTAssertEqual(Trace.parse(goal.body)?["learning_goal"], "Speak up in meetings")
        let cleared = try call("POST", "/users/\(user)/learning-goal", json: "{\"learning_goal\": null}")
        try check(cleared, against: "33")
        XCTAssertEqual(Trace.parse(cleared.body)?["learning_goal"], .null)
    }

    func testANewUsersProfileHasNullsAndEmptyLists() throws {
        try start()
        let profile = try call("GET", "/users/353836119/profile")
        try check(profile, against: "29")
        XCTAssertEqual(Trace.parse(profile.body), try Trace.load("29").json.map { json in
            // Equal but for the time of the call.
            guard case .object(var members) = json else { return json }
            members.removeAll { $0.0 == "updated_at" }
            return .object(members + [("updated_at", Trace.parse(profile.body)?["updated_at"] ?? .null)])
        })
    }

    func testACorrectionOnALiveSessionIs400() throws {
        try start()
        let id = try createSession()
        try check(call("POST", "/sessions/\(id)/corrections", json: "{\"segment_id\": 1, \"user_message\": \"這句怎麼說比較自然？\"}"), against: "23")
    }

    // MARK: - Overlap and barge-in (traces 09–12)

    func testATurnOverlappingAReplyComesBackEmpty() throws {
        try start { $0.pace = 1 }
        let id = try createSession()
        _ = try call("POST", "/sessions/\(id)/start")
        let first = Awaitable<RawHTTPResponse?>(nil)
        let firstAudio = Awaitable(false)
        let base = sim.baseURL
        Thread.detachNewThread {
            let response = try? RawHTTP.exchange(base, "POST", "/sessions/\(id)/chat/text", contentType: "application/json",
                                                 body: Array("{\"text\": \"Yesterday I have a big lunch with my family.\"}".utf8),
                                                 until: { body in
                                                     if Self.audioEvents(body) > 0 { firstAudio.update { $0 = true } }
                                                     return false
                                                 })
            first.update { $0 = response }
        }
        XCTAssertTrue(firstAudio.wait(timeout: 10) { $0 })
        try check(call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"What do you like to eat?\"}"), against: "10")
        XCTAssertTrue(first.wait(timeout: 20) { $0 != nil })
        try check(XCTUnwrap(first.value), against: "09")
    }

    func testATurnRightAfterAHangUpComesBackEmpty() throws {
        try start { $0.pace = 1 }
        let id = try createSession()
        _ = try call("POST", "/sessions/\(id)/start")
        let cut = try call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"Let me tell you about my weekend trip to the mountains.\"}",
                           until: { Self.audioEvents($0) >= 3 })
        XCTAssertFalse(cut.complete)
        XCTAssertEqual(Self.pattern(try Trace.sseEvents(in: cut.body).map(\.name)), Self.pattern(try Trace.load("11").eventNames))
        let next = try call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"Sorry, let me say that again.\"}")
        try check(next, against: "12")
    }

    // MARK: - Review mode (traces 34–38)

    func testReviewModeHasTheServersShapes() throws {
        try start()
        let created = try call("POST", "/sessions", json: "{\"user_id\": \"\(user)\", \"user_name\": \"Mei\", \"topic_id\": null, \"mode\": \"review\"}")
        try check(created, against: "34")
        let id = try XCTUnwrap(Trace.parse(created.body)?["session_id"]?.stringValue)
        try check(call("POST", "/sessions/\(id)/start"), against: "35")
        try check(call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"Last weekend I go hiking with my sister.\"}"), against: "36")
        try check(call("DELETE", "/sessions/\(id)"), against: "37")
        try check(call("GET", "/sessions/\(id)/review"), against: "38")
    }

    // MARK: - Refusals (traces 39–44)

    func testRefusalsHaveTheServersShapes() throws {
        try start()
        try check(call("POST", "/sessions", json: "{\"user_id\": \"\(user)\", \"user_name\": \"Mei\", \"mode\": \"conversation\"}"), against: "39")
        try check(call("POST", "/sessions", json: "{\"user_id\": \"\(user)\", \"user_name\": \"Mei\", \"topic_id\": \"space_travel\", \"mode\": \"conversation\"}"), against: "40")
        try check(call("POST", "/sessions", json: "{\"user_id\": \"\(user)\", \"user_name\": \"Mei\", \"topic_id\": \"daily_life\", \"mode\": \"x\"}"), against: "41")
        let invalid = try call("POST", "/sessions", json: "{\"user_name\": 5, \"topic_id\": \"daily_life\", \"mode\": \"conversation\"}")
        try check(invalid, against: "42")
        XCTAssertEqual(Trace.parse(invalid.body), try Trace.load("42").json, "FastAPI's validation list, to the value")
        try check(call("GET", "/sessions/d8a5077e-2469-4f09-a60d-51d689e63863/review"), against: "43")
        let id = try createSession()
        _ = try call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"I go to the park yesterday.\"}")
        _ = try call("DELETE", "/sessions/\(id)")
        for _ in 0..<3 { _ = try call("GET", "/sessions/\(id)/review") }
        sim.simulator.faults.correctionFails = true
        try check(call("POST", "/sessions/\(id)/corrections", json: "{\"segment_id\": 1, \"user_message\": \"可以再解釋一次嗎？\"}"), against: "44")
    }

    // MARK: - An upstream slow, refusing, gone (traces 45–53)

    func testASessionStillConnectingAnswers503() throws {
        try start { $0.connectingMs = 5_000 }
        let created = try call("POST", "/sessions", json: "{\"user_id\": \"\(user)\", \"user_name\": \"Mei\", \"topic_id\": \"daily_life\", \"mode\": \"conversation\"}")
        try check(created, against: "45")
        let id = try XCTUnwrap(Trace.parse(created.body)?["session_id"]?.stringValue)
        try check(call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"Hello, are you there?\"}"), against: "46")
        // Blank text too: the 400 comes only once the session is connected.
        try check(call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"   \"}"), against: "46")
        try check(upload(id, samples: Self.speech), against: "47")
    }

    func testASessionWhoseUpstreamNeverConnectsIsGoneButReadsActive() throws {
        try start { $0.startTimeoutMs = 100 }
        sim.simulator.faults.start504 = true
        let created = try call("POST", "/sessions", json: "{\"user_id\": \"\(user)\", \"user_name\": \"Mei\", \"topic_id\": \"daily_life\", \"mode\": \"conversation\"}")
        try check(created, against: "48")
        let id = try XCTUnwrap(Trace.parse(created.body)?["session_id"]?.stringValue)
        try check(call("POST", "/sessions/\(id)/start"), against: "49")
        sim.simulator.faults.start504 = false
        try check(call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"Hello?\"}"), against: "50")
        try check(call("POST", "/sessions/\(id)/start"), against: "51")
        try check(call("DELETE", "/sessions/\(id)"), against: "52")
        try check(call("GET", "/sessions/\(id)/review"), against: "53")
    }

    // MARK: - Text as the server escapes it (trace 54)

    func testNonASCIITextIsStrippedAndEscaped() throws {
        try start()
        let id = try createSession()
        let events = try check(call("POST", "/sessions/\(id)/chat/text", json: "{\"text\": \"  我很喜歡 travel  \"}"), against: "54")
        XCTAssertEqual(String(decoding: events.first?.data ?? [], as: UTF8.self), "{\"text\": \"\\u6211\\u5f88\\u559c\\u6b61 travel\"}")
    }
}

/// The learner's recorded phrase the simulator hears as speech.
enum KioskSamples {
    static let learner: [Int16] = try! WAVDecoder.decode(contentsOfFile: SimulatorHarness.samplesDirectory + "/learner-1.wav").samples
}
