import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// A REST call's retries and each attempt's deadline wait on the client's clock
/// (``PracticeClock``), not on the task's own sleep or Dispatch's time: the test's clock runs
/// them at once and sees every delay.
final class BackendClientClockTests: XCTestCase {
    private func call(_ client: BackendClient) -> (task: Task<Void, Never>, result: Awaitable<Result<[Topic], BackendError>?>) {
        let result = Awaitable<Result<[Topic], BackendError>?>(nil)
        let task = Task {
            do throws(BackendError) {
                let topics = try await client.topics()
                result.update { $0 = .success(topics) }
            } catch {
                result.update { $0 = .failure(error) }
            }
        }
        return (task, result)
    }

    /// Every attempt at a backend that is down: its deadline, then the policy's delay
    /// (doubling, with its jitter) asked of the clock, each run only when the test moves it,
    /// then the transport's error.
    func testAGETsRetriesWaitOnTheClientsClock() throws {
        let sim = try SimulatorHarness()
        let clock = TestClock()
        clock.manual()
        let configuration = SimulatorHarness.configuration(sim.baseURL)
        let policy = configuration.retry
        let client = BackendClient(configuration: configuration, clock: clock)
        sim.goDown()
        let (_, result) = call(client)
        let base = (1..<policy.maxAttempts).map { policy.delay(afterAttempt: $0, random: 0) }
        XCTAssertGreaterThanOrEqual(base.count, 3)
        for (index, expected) in base.enumerated() {
            // Attempt n asks for its deadline as it starts, then for the wait before the next.
            guard clock.waitForDelays(2 * index + 2) else { return XCTFail("retry \(index + 1) was not asked of the clock: \(clock.delays)") }
            XCTAssertEqual(clock.delays[2 * index], configuration.requestTimeout, "attempt \(index + 1)'s deadline")
            let delay = clock.delays[2 * index + 1]
            let range = expected * (1 - policy.jitter) - 1e-9...expected * (1 + policy.jitter) + 1e-9
            XCTAssertTrue(range.contains(delay), "retry \(index + 1) waits \(delay) s, not \(expected) ± \(policy.jitter)")
            XCTAssertNil(result.value, "the call ended before its retry \(index + 1)")
            clock.advance(by: delay)
        }
        XCTAssertTrue(result.wait(timeout: 10) { $0 != nil })
        guard case .failure(let error) = result.value else { return XCTFail("the call succeeded against a backend that is down") }
        guard case .transport = error else { return XCTFail("\(error), not the transport's error") }
        XCTAssertEqual(clock.delays.count, 2 * policy.maxAttempts - 1, "\(policy.maxAttempts) attempts in all, each with its deadline")
    }

    /// A call cancelled while it waits to retry ends at once with `cancelled`, the clock
    /// never moved.
    func testACancelledCallWakesFromItsRetryWait() throws {
        let sim = try SimulatorHarness()
        let clock = TestClock()
        clock.manual()
        let client = BackendClient(configuration: SimulatorHarness.configuration(sim.baseURL), clock: clock)
        sim.goDown()
        let (task, result) = call(client)
        XCTAssertTrue(clock.waitForDelays(2))  // the first attempt's deadline, then its retry's wait
        task.cancel()
        XCTAssertTrue(result.wait(timeout: 10) { $0 != nil }, "the cancelled call went on waiting")
        guard case .failure(.cancelled) = result.value else { return XCTFail("\(String(describing: result.value)), not cancelled") }
        XCTAssertEqual(clock.delays.count, 2)
    }

    /// A server that takes the connection and never answers: the call ends `timedOut` when
    /// the clock reaches the deadline, not a moment before, however long the wall waits.
    func testACallTheServerNeverAnswersEndsAtTheClocksDeadline() throws {
        let listener = try SilentListener()
        defer { listener.stop() }
        let clock = TestClock()
        clock.manual()
        let configuration = SimulatorHarness.configuration(URL(string: "http://127.0.0.1:\(listener.port)")!) {
            $0.retry = .none
            $0.requestTimeout = 30
        }
        let (_, result) = call(BackendClient(configuration: configuration, clock: clock))
        XCTAssertTrue(clock.waitForDelays(1), "the deadline was not asked of the clock")
        XCTAssertEqual(clock.delays, [30])
        clock.advance(by: 29.9)
        XCTAssertNil(result.value, "the call ended before its deadline")
        clock.advance(by: 0.1)
        XCTAssertTrue(result.wait(timeout: 10) { $0 != nil }, "the call went on past the clock's deadline")
        guard case .failure(.timedOut(let seconds)) = result.value else { return XCTFail("\(String(describing: result.value)), not timedOut") }
        XCTAssertEqual(seconds, 30)
    }
}

/// A TCP port that takes connections (the kernel's backlog) and never reads or answers.
private final class SilentListener {
    let port: UInt16
    private let fd: Int32

    init() throws { (fd, port) = try LoopbackSocket.bound(listening: 8) }

    func stop() { close(fd) }
}
