import Foundation
@testable import PracticeKit
import PracticeNet
import PracticeSupport
import TestSupport
import XCTest

/// The attempt both backend clients make (``JSONCall``), against practice-sim over real TCP:
/// what it logs, how a JSON answer that does not fit is named, and the answer limit.
final class JSONCallTests: XCTestCase {
    private struct Topic: Decodable { var id: String; var labelEn: String }
    /// A shape the topics do not have: `label_en` read as a number.
    private struct Misread: Decodable { var labelEn: Int }

    private func call(_ sim: SimulatorHarness, limit: Int = .max) -> (JSONCall, MemoryLogSink) {
        let sink = MemoryLogSink()
        let logger = Logger(category: "backend", sink: sink, threshold: .debug)
        return (JSONCall(transport: BackendTransport(clock: DispatchClock()), logger: logger, timeout: 5, limit: limit), sink)
    }

    private func request(_ sim: SimulatorHarness, _ path: String) -> HTTPRequest {
        HTTPRequest(url: sim.baseURL.appendingPathComponent(path), method: "GET")
    }

    func testAnAttemptIsLoggedByItsLabelSizesAndTimeNeverItsBody() async throws {
        let sim = try SimulatorHarness()
        let (exchange, sink) = call(sim)
        guard case .success(let (response, data)) = await exchange.exchange(request(sim, "topics"), body: nil, label: "GET /topics") else {
            return XCTFail("no answer")
        }
        XCTAssertEqual(response.statusCode, 200)
        let topics = try JSONCall.decode([Topic].self, from: data, label: "GET /topics")
        XCTAssertEqual(topics[1].labelEn, "Travel", "snake_case keys")
        let lines = sink.records.map(\.message)
        XCTAssertEqual(lines.count, 1)
        let line = try XCTUnwrap(lines.first)
        XCTAssertTrue(line.hasPrefix("GET /topics → 200 in "), line)
        XCTAssertTrue(line.hasSuffix(" ms (0 bytes out, \(data.count) in)"), line)
        XCTAssertFalse(line.contains("Travel"), "a body in the log")
        XCTAssertEqual(sink.records.first?.level, .debug)
    }

    func testAnAnswerThatDoesNotFitIsNamedByItsKeyPath() async throws {
        let sim = try SimulatorHarness()
        let (exchange, _) = call(sim)
        guard case .success(let (_, data)) = await exchange.exchange(request(sim, "topics"), body: nil, label: "GET /topics") else {
            return XCTFail("no answer")
        }
        XCTAssertThrowsError(try JSONCall.decode([Misread].self, from: data, label: "GET /topics")) { error in
            guard case .invalidResponse(let text)? = error as? BackendError else { return XCTFail("\(error)") }
            XCTAssertTrue(text.hasPrefix("GET /topics: "), text)
            XCTAssertTrue(text.hasSuffix(" at Index 0.labelEn"), text)
        }
        XCTAssertEqual(JSONCall.describe(DecodingError.keyNotFound(Key(stringValue: "cue_id"), .init(codingPath: [Key(stringValue: "cue")], debugDescription: ""))),
                       "missing cue_id at cue")
    }

    func testAnAnswerOverTheLimitIsRefusedAndLogged() async throws {
        let sim = try SimulatorHarness()
        let (exchange, sink) = call(sim, limit: 64)
        guard case .failure(let error) = await exchange.exchange(request(sim, "topics"), body: nil, label: "GET /topics") else {
            return XCTFail("an answer of more than 64 bytes was read")
        }
        XCTAssertEqual(error, .invalidResponse("an answer larger than 64 bytes"))
        XCTAssertTrue(sink.records.first?.message.hasPrefix("GET /topics failed in ") ?? false, "\(sink.records.map(\.message))")
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
