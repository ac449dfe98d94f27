import Dispatch
import Foundation
@testable import PracticeKit
import PracticeNet
import PracticeSupport
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
        /// Headers (when `started`) and these bytes, then nothing: the connection hangs
        /// until the stream gives up on it.
        case hang(started: Bool, String)
    }

    final class ScriptedTransport: StreamTransport, @unchecked Sendable {
        let queue = DispatchQueue(label: "test.transport")
        private var script: [Answer]
        private(set) var started: [(method: String, body: [UInt8]?)] = []

        init(_ script: [Answer]) { self.script = script }

        final class Task: TransportTask, @unchecked Sendable {
            var onCancel: () -> Void = {}
            func cancel() { onCancel() }
        }

        func start(_ request: HTTPRequest, body: HTTPBody?, handler: TaskHandler) -> TransportTask? {
            started.append((request.httpMethod, body?.bytes))
            let answer = script.isEmpty ? .status(500, "script ended") : script.removeFirst()
            let task = Task()
            if case .hang = answer {
                // Closed when the stream gives up: the transport reports the cancellation.
                task.onCancel = { [queue] in queue.async { handler.taskDidComplete(error: TransportError(.cancelled, "cancelled")) } }
            }
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
                case .hang(let started, let text):
                    guard started else { return }
                    handler.taskDidReceive(response: HTTPResponse(statusCode: 200, headerFields: ["Content-Type": "text/event-stream"]))
                    handler.taskDidReceive(data: Data(text.utf8))
                }
            }
            return task
        }
    }

    /// A stream over `script` on a clock the test moves.
    private func start(_ script: [Answer], clock: TestClock, idle: Double = 30, total: Double = 120)
        -> (ReplyStream, ReplyRecorder, ScriptedTransport) {
        var configuration = BackendConfiguration(baseURL: URL(string: "http://backend.invalid")!)
        configuration.streamIdleTimeout = idle
        configuration.streamTotalTimeout = total
        let transport = ScriptedTransport(script)
        let recorder = ReplyRecorder()
        let stream = ReplyStream(owner: transport, transport: transport, request: HTTPRequest(url: configuration.baseURL, method: "POST"),
                                 body: nil, configuration: configuration, logger: .disabled, clock: clock, onEvent: recorder.handler)
        stream.begin()
        // The stream's start, then the transport's first answer, which it queued.
        transport.queue.sync {}
        transport.queue.sync {}
        return (stream, recorder, transport)
    }

    /// A reply that goes quiet is given up after the idle deadline, not a moment before:
    /// interrupted, what came kept.
    func testAStreamThatGoesQuietEndsAtItsIdleDeadline() throws {
        let clock = TestClock()
        clock.manual()
        let (stream, recorder, transport) = start([.hang(started: true, "event: transcript\ndata: {\"text\":\"hi\"}\n\n")], clock: clock)
        clock.advance(by: 29.9)
        transport.queue.sync {}
        XCTAssertFalse(stream.isFinished, "given up before its idle deadline")
        clock.advance(by: 0.2)
        let summary = try XCTUnwrap(stream.wait(timeout: 5)).get()
        XCTAssertEqual(summary.end, .interrupted(.timedOut(seconds: 30)))
        XCTAssertEqual(summary.transcript, "hi")
        XCTAssertTrue(recorder.events.contains(.transcript("hi")))
    }

    /// Each chunk pushes the idle deadline back; the whole stream's deadline holds over all
    /// of it, retries included.
    func testTheTotalDeadlineHoldsOverRetriesAndChunks() {
        let clock = TestClock()
        clock.manual()
        let (stream, _, transport) = start([.status(503, "still connecting"), .hang(started: false, "")], clock: clock, idle: 1_000, total: 120)
        clock.advance(by: 1)  // past the first retry's pause: the second attempt hangs
        transport.queue.sync {}
        transport.queue.sync {}
        XCTAssertEqual(transport.started.count, 2)
        clock.advance(by: 118.5)
        transport.queue.sync {}
        XCTAssertFalse(stream.isFinished)
        clock.advance(by: 1)
        guard case .failure(.timedOut(let seconds))? = stream.wait(timeout: 5) else { return XCTFail("not timed out") }
        XCTAssertEqual(seconds, 120)
    }

    private func run(_ script: [Answer], method: String = "POST", attempts: Int = 6) -> (ScriptedTransport, ReplyRecorder, Result<ReplySummary, BackendError>?) {
        var configuration = BackendConfiguration(baseURL: URL(string: "http://backend.invalid")!)
        configuration.retry.maxAttempts = attempts
        configuration.retry.initialDelay = 0.001
        configuration.retry.maxDelay = 0.004
        let transport = ScriptedTransport(script)
        let recorder = ReplyRecorder()
        let stream = ReplyStream(owner: transport, transport: transport, request: HTTPRequest(url: configuration.baseURL, method: method),
                                 body: HTTPBody(Data("turn".utf8)), configuration: configuration, logger: .disabled, clock: DispatchClock(), onEvent: recorder.handler)
        stream.begin()
        return (transport, recorder, stream.wait(timeout: 5))
    }

    private static let reply = "event: transcript\ndata: {\"text\":\"hi\"}\n\nevent: done\ndata: {}\n\n"

    func testTurnedAwayAndRefusedAttemptsAreRetriedWithTheSameBody() throws {
        let (transport, recorder, result) = run([.status(503, "still connecting"), .refused, .stream(Self.reply)])
        let summary = try XCTUnwrap(result).get()
        XCTAssertEqual(summary.attempts, 3)
        XCTAssertEqual(summary.end, .done)
        XCTAssertEqual(transport.started.map(\.body), Array(repeating: Array("turn".utf8), count: 3))
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
