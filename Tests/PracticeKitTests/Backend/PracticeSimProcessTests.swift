import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PracticeKit
import SimulatorKit
import TestSupport
import XCTest

/// The practice-sim executable as a real process: flags, the control endpoint, SIGTERM.
final class PracticeSimProcessTests: XCTestCase {
    /// practice-sim next to the test bundle, or the shipped one (``ShippedBinaries``).
    static var executable: String { ShippedBinaries.path(of: "practice-sim") }

    private func launch(_ arguments: [String], stderr: String = "/dev/null") throws -> (ChildProcess, URL) {
        let process = try ChildProcess(executable: Self.executable, arguments: ["--port", "0", "--quiet"] + arguments,
                                       environment: ProcessInfo.processInfo.environment, stdoutPath: nil, stderrPath: stderr)
        let banner = try XCTUnwrap(process.readLine(timeout: 10), "practice-sim printed no banner")
        let address = try XCTUnwrap(banner.split(separator: " ").first { $0.hasPrefix("http://") }, banner)
        return (process, try XCTUnwrap(URL(string: String(address))))
    }

    func testServesTheContractAndStopsCleanlyOnSIGTERM() async throws {
        let (process, url) = try launch(["--fast", "--connecting-ms", "0", "--first-audio-ms", "0"])
        let client = BackendClient(configuration: SimulatorHarness.configuration(url))
        let id = try await client.createSession(.init(userId: "p1", topicId: "food_dining", mode: .conversation)).sessionId
        let recorder = ReplyRecorder()
        let summary = try await client.startGreeting(sessionID: id, onEvent: recorder.handler).outcome()
        XCTAssertEqual(summary.end, .done)
        XCTAssertEqual(recorder.audio, SimulatorHarness.speech.greeting.pcm)
        XCTAssertEqual(process.terminate(signal: SIGTERM), 0)
    }

    func testFaultsByFlagAndByTheControlEndpoint() async throws {
        let (process, url) = try launch(["--fast", "--connecting-ms", "0", "--fail-count", "2", "--fail-status", "503"])
        defer { process.terminate() }
        let client = BackendClient(configuration: SimulatorHarness.configuration(url))
        let topics = try await client.topics()
        XCTAssertEqual(topics.count, 6, "retried through the two 503s set by flag")

        var put = URLRequest(url: url.appendingPathComponent("_sim/faults"))
        put.httpMethod = "PUT"
        put.httpBody = Data(#"{"omit_done": true, "odd_chunks": true}"#.utf8)
        let (body, response) = try await URLSession.shared.data(for: put)
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 200)
        let faults = try JSONDecoder().decode(SimulatorFaults.self, from: body)
        XCTAssertTrue(faults.omitDone)
        XCTAssertEqual(faults.failCount, 0, "a PUT replaces the whole set")

        let id = try await client.createSession(.init(userId: "p2", topicId: "travel", mode: .conversation)).sessionId
        let summary = try await client.sendText(sessionID: id, text: "hi", onEvent: { _ in }).outcome()
        XCTAssertEqual(summary.end, .endedWithoutDone)

        var bad = URLRequest(url: url.appendingPathComponent("_sim/faults"))
        bad.httpMethod = "PUT"
        bad.httpBody = Data(#"{"fail_status": 200}"#.utf8)
        let (_, badResponse) = try await URLSession.shared.data(for: bad)
        XCTAssertEqual((badResponse as? HTTPURLResponse)?.statusCode, 400)
    }

    func testBadFlagsExitWithUsageError() throws {
        let stderr = NSTemporaryDirectory() + "practice-sim-\(UUID().uuidString).err"
        defer { try? FileManager.default.removeItem(atPath: stderr) }
        let process = try ChildProcess(executable: Self.executable, arguments: ["--pace", "-1"],
                                       environment: [:], stdoutPath: "/dev/null", stderrPath: stderr)
        XCTAssertEqual(process.waitForExit(timeout: 10), 64)
        let message = try String(contentsOfFile: stderr, encoding: .utf8)
        XCTAssertTrue(message.contains("--pace: '-1'"), message)
    }

    func testSameSeedSameRunDifferentSeedDifferentRun() async throws {
        func run(seed: UInt64) async throws -> (String, [Int]) {
            let sim = try SimulatorHarness { $0.seed = seed }
            let client = sim.client()
            let id = try await client.createSession(.init(userId: "s", topicId: "travel", mode: .conversation)).sessionId
            let recorder = ReplyRecorder()
            _ = try await client.startGreeting(sessionID: id, onEvent: recorder.handler).outcome()
            return (id, recorder.audioChunkSizes)
        }
        let a = try await run(seed: 7), b = try await run(seed: 7), c = try await run(seed: 8)
        XCTAssertEqual(a.0, b.0)
        XCTAssertEqual(a.1, b.1)
        XCTAssertNotEqual(a.0, c.0)
        XCTAssertNotEqual(a.1, c.1)
    }
}
