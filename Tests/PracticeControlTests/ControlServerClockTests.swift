import AudioKernel
import Foundation
@testable import PracticeControl
@testable import PracticeKit
import PracticeNet
import PracticeProtocol
import PracticeSupport
import TestSupport
import XCTest

/// The control server on the test's clock, over a real Unix socket with a real client: the
/// idle limit and the rate limit are counted in the clock's time, so a minute of idleness
/// runs at once and a throttled line is served exactly when the clock reaches its token.
final class ControlServerClockTests: XCTestCase {
    /// Answers every command it is handed as `ping` is answered (the tests send only that).
    private final class Answering: ControlCommandHandler, @unchecked Sendable {
        func handle(_ request: ControlRequest, client: ControlClientInfo, reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void) {
            reply(.success(ProtocolEncoder.encode(Command.Ping.Result(pong: true, uptimeS: 0))))
        }

        func snapshot() -> DaemonSnapshot {
            DaemonSnapshot(version: "test", capture: .closed, playback: .closed, playing: false, session: .idle)
        }
    }

    private let clock = TestClock()
    private let handler = Answering()
    private var server: ControlServer?
    private var directory: URL?

    override func tearDown() {
        server?.stop()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func start(_ limits: ControlServerLimits) throws -> (ControlServer, String) {
        clock.manual()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("control-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        let path = directory.appendingPathComponent("practiced.sock").path
        let server = ControlServer(listener: try UnixListener.bind(path: path, group: nil), serverVersion: "test", capabilities: [],
                                   topics: Set(EventTopic.allCases), socketGroup: nil, limits: limits,
                                   logger: Logger(category: "test", sink: DiscardLogSink()), handler: handler, clock: clock)
        server.start()
        self.server = server
        return (server, path)
    }

    private func line(_ id: Int, _ command: String) -> [UInt8] { Array("{\"id\": \(id), \"command\": \"\(command)\"}\n".utf8) }

    func testAClientIdleForTheLimitOfTheClockIsClosedAndNotBefore() throws {
        var limits = ControlServerLimits()
        limits.idleSeconds = 60
        let (server, path) = try start(limits)
        let client = try ControlClient(path: path)
        XCTAssertEqual(server.queue.sync { server.connections.count }, 1)

        clock.advance(by: 60)
        XCTAssertEqual(server.queue.sync { server.connections.count }, 1, "closed before it had been idle for more than 60 s")
        clock.advance(by: 1)
        XCTAssertEqual(server.queue.sync { server.connections.count }, 0, "still open after 61 s of the clock")
        XCTAssertThrowsError(try client.readLine(timeout: 5)) { error in
            XCTAssertEqual(error as? ControlClient.Failure, .protocolError("the daemon closed the connection"))
        }
    }

    func testAnAnswerCountsAsActivity() throws {
        var limits = ControlServerLimits()
        limits.idleSeconds = 60
        let (server, path) = try start(limits)
        let client = try ControlClient(path: path)
        clock.advance(by: 50)
        XCTAssertEqual(try client.request(Command.Ping.self)["pong"], true)
        // The answer is written before the server notes it (in the same block on its queue):
        // the clock moves only once that block is over, or the answer would count as later.
        server.queue.sync {}
        clock.advance(by: 50)
        XCTAssertEqual(server.queue.sync { server.connections.count }, 1, "closed 50 s after its last request")
        clock.advance(by: 11)
        XCTAssertEqual(server.queue.sync { server.connections.count }, 0)
    }

    func testLinesOverTheRateWaitForTheClockToBringTheirToken() throws {
        var limits = ControlServerLimits()
        limits.requestsPerSecond = 2  // a burst of two, then one every 0.5 s
        let (server, path) = try start(limits)
        let client = try ControlClient(path: path)
        try client.send((1...4).flatMap { line($0, Command.Ping.name) })
        for id in 1...2 { XCTAssertEqual(try client.readMessage(timeout: 5)["id"], .int(id)) }

        // The third line waits for its token: asked of the clock, not of the wall.
        XCTAssertTrue(clock.waitForDelays(1), "the throttled line never asked the clock for its token")
        XCTAssertEqual(clock.delays.last ?? 0, 0.5, accuracy: 1e-9)
        XCTAssertEqual(server.queue.sync { server.connections.values.first?.pendingCount }, 2)
        clock.advance(by: 0.5)
        XCTAssertEqual(try client.readMessage(timeout: 5)["id"], 3)
        XCTAssertTrue(clock.waitForDelays(2))
        XCTAssertEqual(server.queue.sync { server.connections.values.first?.pendingCount }, 1)
        clock.advance(by: 0.5)
        XCTAssertEqual(try client.readMessage(timeout: 5)["id"], 4)
    }
}
