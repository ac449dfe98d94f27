import Foundation
import PracticeKit
import SimulatorKit
import TestSupport
import XCTest

/// `https://` over the client's own transport and the system's OpenSSL, against Debian's
/// `stunnel4` terminating TLS in front of practice-sim on loopback: REST and a streamed
/// reply, the certificate chain checked against a CA file or the system's store, the name
/// checked against the URL's host.
final class TLSTransportTests: XCTestCase {
    static let certificates = try! TestCertificates()

    private func tunnel(_ sim: SimulatorHarness, serving server: TestCertificates.Server = .good) throws -> TLSTunnel {
        try TLSTunnel(to: UInt16(sim.baseURL.port!), certificates: Self.certificates, serving: server)
    }

    private func client(_ url: URL, caFile: String? = certificates.caFile) -> BackendClient {
        BackendClient(configuration: SimulatorHarness.configuration(url) {
            $0.retry = .none
            $0.caFile = caFile
        })
    }

    /// The error a call fails with, as text.
    private func failure(_ client: BackendClient) async -> String {
        do {
            _ = try await client.topics()
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    func testRESTAndAStreamedReplyOverTLS() async throws {
        let sim = try SimulatorHarness { $0.connectingMs = 50 }
        let tunnel = try tunnel(sim)
        for host in ["127.0.0.1", "localhost"] {
            let client = client(tunnel.url(host: host))
            let topics = try await client.topics()
            XCTAssertFalse(topics.isEmpty, "topics over https://\(host)")
            let id = try await client.createSession(.init(userId: "tls", topicId: "travel", mode: .conversation)).sessionId
            // The session answers 503 while it connects: a typed turn's stream is retried
            // through it (a recorded turn's is tried once: its delivery retries it).
            let patient = BackendClient(configuration: SimulatorHarness.configuration(tunnel.url(host: host)) {
                $0.caFile = Self.certificates.caFile
                $0.retry.maxAttempts = 20
                $0.retry.initialDelay = 0.05
            })
            let audioEvents = Awaitable(0)
            let summary = try await patient.sendText(sessionID: id, text: "Hello over TLS (\(host))",
                                                     onEvent: { event in if case .audio = event { audioEvents.update { $0 += 1 } } }).outcome()
            XCTAssertEqual(summary.end, .done, "the reply streamed to its end over https://\(host)")
            XCTAssertGreaterThan(summary.audioBytes, 10_000)
            XCTAssertGreaterThan(audioEvents.value, 1, "audio came as events")
        }
    }

    func testACertificateForAnotherHostIsAClearError() async throws {
        let sim = try SimulatorHarness()
        let tunnel = try tunnel(sim, serving: .wrongHost)
        let message = await failure(client(tunnel.url(host: "localhost")))
        XCTAssertTrue(message.contains("not for localhost"), message)
        let byAddress = await failure(client(tunnel.url()))
        XCTAssertTrue(byAddress.contains("not for 127.0.0.1"), byAddress)
    }

    func testAnUntrustedCertificateIsAClearError() async throws {
        let sim = try SimulatorHarness()
        let tunnel = try tunnel(sim, serving: .untrusted)
        let message = await failure(client(tunnel.url(host: "localhost")))
        XCTAssertTrue(message.contains("not trusted by the CA file"), message)
    }

    func testTheSystemStoreDoesNotTrustAPrivateCA() async throws {
        // Without a CA file the system's store decides, and it has never heard of the test CA.
        let sim = try SimulatorHarness()
        let tunnel = try tunnel(sim)
        let message = await failure(client(tunnel.url(host: "localhost"), caFile: nil))
        XCTAssertTrue(message.contains("not trusted by the system's CA store"), message)
    }

    func testAMissingCAFileIsAClearError() async throws {
        let sim = try SimulatorHarness()
        let tunnel = try tunnel(sim)
        let message = await failure(client(tunnel.url(host: "localhost"), caFile: "/nonexistent/ca.pem"))
        XCTAssertTrue(message.contains("/nonexistent/ca.pem"), message)
    }

    func testTLSToAPlainHTTPPortEndsAtTheCallsDeadline() async throws {
        // practice-sim waits for a request line that a ClientHello never completes: the
        // handshake is bounded by the call's deadline like any answer.
        let sim = try SimulatorHarness()
        var components = URLComponents(url: sim.baseURL, resolvingAgainstBaseURL: false)!
        components.scheme = "https"
        let client = BackendClient(configuration: SimulatorHarness.configuration(components.url!) {
            $0.retry = .none
            $0.requestTimeout = 1
        })
        let message = await failure(client)
        XCTAssertTrue(message.contains("did not answer within 1"), message)
    }

    func testPlainHTTPToTheTLSPortIsABadAnswer() async throws {
        let sim = try SimulatorHarness()
        let tunnel = try tunnel(sim)
        let client = BackendClient(configuration: SimulatorHarness.configuration(URL(string: "http://127.0.0.1:\(tunnel.port)")!) {
            $0.retry = .none
            $0.requestTimeout = 5
        })
        let message = await failure(client)
        XCTAssertFalse(message == "no error", message)
        XCTAssertFalse(message.contains("did not answer"), "stunnel closes at once: \(message)")
    }
}
