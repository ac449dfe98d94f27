import Dispatch
import Foundation
@testable import PracticeKit
import TestSupport
import XCTest

/// ``ReplyStream`` over a transport in memory that answers as its script says: retries,
/// the retry budget, what is not retried, and a stream's events, in milliseconds and
/// without a socket. The process suites and the trace replays keep what only a real
/// connection proves.
final class ReplyStreamInMemoryTests: XCTestCase {
    /// One scripted answer per request started.
    enum Answer {
        case status(Int, String)
        case refused
        case stream(String)
    }

    final class ScriptedTransport: StreamTransport, @unchecked Sendable {
        let queue = DispatchQueue(label: "test.transport")
        private var script: [Answer]
        private(set) var started: [(method: String, body: Data?)] = []

        init(_ script: [Answer]) { self.script = script }

        final class Task: TransportTask, @unchecked Sendable { func cancel() {} }

        func start(_ request: HTTPRequest, body: Data?, handler: TaskHandler) -> TransportTask? {
            started.append((request.httpMethod, body))
            let answer = script.isEmpty ? .status(500, "script ended") : script.removeFirst()
            queue.async {
                switch answer {
                case .status(let code, let detail):
                    handler.taskDidReceive(response: HTTPResponse(statusCode: code, headerFields: ["Content-Type": "application/json"]))
                    handler.taskDidReceive(data: Data(#"{"detail":"\#(detail)"}"#.utf8))
                    handler.taskDidComplete(error: nil)
                case .refused:
                    handler.taskDidComplete(error: TransportError(.cannotConnectToHost, "connection refused"))
                case .stream(let text):
                    handler.taskDidReceive(response: HTTPResponse(statusCode: 200, headerFields: ["Content-Type": "text/event-stream"]))
                    handler.taskDidReceive(data: Data(text.utf8))
                    handler.taskDidComplete(error: nil)
                }
            }
            return Task()
        }
    }

    private func run(_ script: [Answer], method: String = "POST", attempts: Int = 6) -> (ScriptedTransport, ReplyRecorder, Result<ReplySummary, BackendError>?) {
        var configuration = BackendConfiguration(baseURL: URL(string: "http://backend.invalid")!)
        configuration.retry.maxAttempts = attempts
        configuration.retry.initialDelay = 0.001
        configuration.retry.maxDelay = 0.004
        let transport = ScriptedTransport(script)
        let recorder = ReplyRecorder()
        let stream = ReplyStream(owner: transport, transport: transport, request: HTTPRequest(url: configuration.baseURL, method: method),
                                 body: Data("turn".utf8), configuration: configuration, logger: .disabled, onEvent: recorder.handler)
        stream.begin()
        return (transport, recorder, stream.wait(timeout: 5))
    }

    private static let reply = "event: transcript\ndata: {\"text\":\"hi\"}\n\nevent: done\ndata: {}\n\n"

    func testTurnedAwayAndRefusedAttemptsAreRetriedWithTheSameBody() throws {
        let (transport, recorder, result) = run([.status(503, "still connecting"), .refused, .stream(Self.reply)])
        let summary = try XCTUnwrap(result).get()
        XCTAssertEqual(summary.attempts, 3)
        XCTAssertEqual(summary.end, .done)
        XCTAssertEqual(transport.started.map(\.body), Array(repeating: Data("turn".utf8), count: 3))
        XCTAssertEqual(recorder.events.filter { if case .retrying = $0 { true } else { false } },
                       [.retrying(attempt: 1, status: 503), .retrying(attempt: 2, status: nil)])
        XCTAssertEqual(recorder.events.suffix(3), [.accepted, .transcript("hi"), .done])
    }

    func testTheRetryBudgetEndsInTheLastError() {
        let (transport, _, result) = run(Array(repeating: .status(503, "busy"), count: 10), attempts: 3)
        XCTAssertEqual(transport.started.count, 3)
        guard case .failure(.http(let status, _))? = result else { return XCTFail("\(String(describing: result))") }
        XCTAssertEqual(status, 503)
    }

    func testAPostThatMayHaveReachedTheServerIsNotSentAgain() {
        // A 500 to a POST: the server may have acted on it. A GET would be asked again.
        let (post, _, postResult) = run([.status(500, "boom"), .stream(Self.reply)])
        XCTAssertEqual(post.started.count, 1)
        guard case .failure(.http(500, _))? = postResult else { return XCTFail("\(String(describing: postResult))") }
        let (get, _, getResult) = run([.status(500, "boom"), .stream(Self.reply)], method: "GET")
        XCTAssertEqual(get.started.count, 2)
        XCTAssertNotNil(try? getResult?.get())
    }

    func testATurnIsTriedOnceAsItsDeliveryOwnsItsRetries() {
        // The policy BackendClient.sendTurn gives a turn's stream.
        let (transport, recorder, result) = run([.status(503, "still connecting"), .stream(Self.reply)], attempts: RetryPolicy.none.maxAttempts)
        XCTAssertEqual(transport.started.count, 1)
        XCTAssertFalse(recorder.events.contains { if case .retrying = $0 { true } else { false } })
        guard case .failure(.http(503, _))? = result else { return XCTFail("\(String(describing: result))") }
    }
}
