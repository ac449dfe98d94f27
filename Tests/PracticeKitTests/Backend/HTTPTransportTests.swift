import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import PracticeKit
import SimulatorKit
import TestSupport
import XCTest

/// The client's own HTTP/1.1 transport over real TCP, against servers that behave in the
/// ways the simulator's routes do not: kept connections, a server that closes one under a
/// request, garbage instead of a status line, names to resolve. (Every other backend test
/// runs over it too: practice-sim is an `http://` URL.)
final class HTTPTransportTests: XCTestCase {
    private static let topicsBody = Array(#"[{"id":"travel","label_en":"Travel","label_zh":"旅行","prompt_hint":"trips"}]"#.utf8)

    /// A server whose handler sees the request's ordinal (1-based) and answers or not.
    private func server(_ answer: @escaping @Sendable (Int, HTTPResponseWriter) -> Void) throws -> (HTTPServer, Awaitable<Int>) {
        let count = Awaitable(0)
        let server = HTTPServer { _, writer in
            var ordinal = 0
            count.update { $0 += 1; ordinal = $0 }
            answer(ordinal, writer)
        }
        try server.start()
        return (server, count)
    }

    private func client(_ server: HTTPServer, host: String = "127.0.0.1") -> BackendClient {
        BackendClient(configuration: SimulatorHarness.configuration(URL(string: "http://\(host):\(server.port)")!) { $0.retry = .none })
    }

    func testSequentialCallsShareOneKeptConnection() async throws {
        let (server, count) = try server { _, writer in writer.respond(status: 200, body: Self.topicsBody) }
        let client = client(server)
        for _ in 0..<3 {
            let topics = try await client.topics()
            XCTAssertEqual(topics.map(\.id), ["travel"])
        }
        XCTAssertEqual(count.value, 3)
        XCTAssertEqual(server.connectionCount, 1, "keep-alive: one connection carried all three calls")
    }

    /// The pool's age limit (50 s) runs on the client's clock, the daemon's one: a connection
    /// kept idle past it by the clock the test holds is closed and a fresh one made, though
    /// no real second passed. (The pool read Dispatch's own time, which no test could move.)
    func testAKeptConnectionIdlePastItsLifetimeOnTheClientsClockIsNotReused() async throws {
        let (server, count) = try server { _, writer in writer.respond(status: 200, body: Self.topicsBody) }
        let clock = TestClock()
        clock.manual()
        let client = BackendClient(configuration: SimulatorHarness.configuration(URL(string: "http://127.0.0.1:\(server.port)")!) { $0.retry = .none },
                                   clock: clock)
        _ = try await client.topics()
        _ = try await client.topics()
        XCTAssertEqual(server.connectionsAdmitted, 1, "kept and reused within its lifetime")
        clock.advance(by: 51)
        _ = try await client.topics()
        XCTAssertEqual(count.value, 3)
        XCTAssertEqual(server.connectionsAdmitted, 2, "a connection idle for 51 s of the client's clock was reused")
    }

    func testARequestOnAKeptConnectionTheServerClosesIsSentAgainOnAFreshOne() async throws {
        // The second request arrives on the kept connection and the server drops it unanswered
        // (its idle close racing the request); the client sends it once more, fresh.
        let (server, count) = try server { ordinal, writer in
            if ordinal == 2 { writer.dropConnection() } else { writer.respond(status: 200, body: Self.topicsBody) }
        }
        let client = client(server)
        _ = try await client.topics()
        let topics = try await client.topics()
        XCTAssertEqual(topics.map(\.id), ["travel"])
        XCTAssertEqual(count.value, 3)
    }

    func testAFreshConnectionDroppedUnansweredIsAnErrorNotAResend() async throws {
        let (server, count) = try server { _, writer in writer.dropConnection() }
        do {
            _ = try await client(server).topics()
            XCTFail("expected a transport error")
        } catch {
            guard case .transport(_, let message, let sentNothing) = error else { return XCTFail("got \(error)") }
            XCTAssertFalse(sentNothing, "the request reached the server")
            XCTAssertTrue(message.contains("lost"), message)
        }
        XCTAssertEqual(count.value, 1, "nothing sent twice behind the caller's back")
    }

    func testAConnectionResetAtOnceIsHeardEveryTime() async throws {
        // The reset can reach the client before, during or after its connect completes and the
        // request goes out; every time it must end the call as a transport error, not wait
        // for the deadline (libdispatch forgets a descriptor that hangs up, see HTTPConnection).
        let listener = try ResettingListener()
        defer { listener.stop() }
        let client = BackendClient(configuration: SimulatorHarness.configuration(URL(string: "http://127.0.0.1:\(listener.port)")!) {
            $0.retry = .none
            $0.requestTimeout = 5
        })
        for attempt in 0..<40 {
            do {
                _ = try await client.topics()
                XCTFail("attempt \(attempt): expected a transport error")
            } catch {
                guard case .transport(_, let message, _) = error else { return XCTFail("attempt \(attempt): got \(error)") }
                XCTAssertFalse(message.contains("within"), "attempt \(attempt) waited for the deadline: \(message)")
            }
        }
        XCTAssertGreaterThanOrEqual(listener.accepted.value, 40)
    }

    func testGarbageInsteadOfAStatusLineIsATransportError() async throws {
        let (server, _) = try server { _, writer in
            _ = writer.writeRaw(Array("ICY 200 OK\r\n\r\nnot http".utf8))
            writer.dropConnection()
        }
        do {
            _ = try await client(server).topics()
            XCTFail("expected a transport error")
        } catch {
            guard case .transport(_, let message, _) = error else { return XCTFail("got \(error)") }
            XCTAssertTrue(message.contains("bad status line"), message)
        }
    }

    func testAHostNameIsResolvedAndEachAddressTried() async throws {
        // localhost may come first as ::1, where nothing listens: refused, then 127.0.0.1.
        let (server, _) = try server { _, writer in writer.respond(status: 200, body: Self.topicsBody) }
        let topics = try await client(server, host: "localhost").topics()
        XCTAssertEqual(topics.map(\.id), ["travel"])
        do {
            _ = try await client(server, host: "no-such-host.invalid").topics()
            XCTFail("expected a transport error")
        } catch {
            guard case .transport(_, _, let sentNothing) = error else { return XCTFail("got \(error)") }
            XCTAssertTrue(sentNothing, "an unresolvable name sent nothing")
        }
    }

    func testHTTPSToAClosedPortIsRefusedAsSentNothing() async throws {
        // No TLS server here: a refused connect is the same failure over https://.
        let closed = try SimulatorHarness.closedPortURL()
        var components = URLComponents(url: closed, resolvingAgainstBaseURL: false)!
        components.scheme = "https"
        let client = BackendClient(configuration: SimulatorHarness.configuration(components.url!) { $0.retry = .none })
        do {
            _ = try await client.topics()
            XCTFail("expected a transport error")
        } catch {
            guard case .transport(_, _, let sentNothing) = error else { return XCTFail("got \(error)") }
            XCTAssertTrue(sentNothing)
        }
    }
}

extension HTTPTransportTests {
    func testAReplyResetAfterAnyNumberOfEventsOnAKeptConnectionEndsInterrupted() async throws {
        for events in 0..<4 {
            let sim = try SimulatorHarness { $0.connectingMs = 100; $0.faults.dropAfterEvents = events }
            let client = sim.client { $0.streamIdleTimeout = 5; $0.retry.initialDelay = 0.05; $0.retry.maxAttempts = 20 }
            let id = try await client.createSession(.init(userId: "tester", topicId: "travel", mode: .conversation)).sessionId
            // A typed turn: its stream retries through the 503s of a session still connecting.
            let summary = try await client.sendText(sessionID: id, text: "Tell me more (\(events))", onEvent: { _ in }).outcome()
            guard case .interrupted(let error) = summary.end, case .transport = error else {
                XCTFail("after \(events) events: \(summary.end), \(summary.attempts) attempts")
                continue
            }
        }
    }
}

/// A TCP listener that resets each connection as soon as it accepts it, or (every other
/// one) as soon as the request's first byte is in.
private final class ResettingListener: @unchecked Sendable {
    let port: UInt16
    let accepted = Awaitable(0)
    private let fd: Int32

    init() throws {
        let (fd, port) = try LoopbackSocket.bound(listening: 64)
        self.fd = fd
        self.port = port
        let accepted = accepted
        Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    close(fd)  // shut down by stop()
                    return
                }
                var ordinal = 0
                accepted.update { $0 += 1; ordinal = $0 }
                if ordinal % 2 == 0 {  // every other one once the request is in
                    var byte: UInt8 = 0
                    _ = recv(client, &byte, 1, 0)
                }
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                close(client)
            }
        }.start()
    }

    func stop() { shutdown(fd, Int32(SHUT_RDWR)) }
}
