import Foundation
@testable import PracticeKit
import TestSupport
import XCTest

/// A REST call's retries wait on the client's clock (``PracticeClock``), not on the task's
/// own sleep: the test's clock runs them at once and sees every delay.
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

    /// Every attempt at a backend that is down: the policy's delays (doubling, with its
    /// jitter) asked of the clock, each run only when the test moves it, then the
    /// transport's error.
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
            XCTAssertTrue(clock.waitForDelays(index + 1), "retry \(index + 1) was not asked of the clock")
            let delay = clock.delays[index]
            let range = expected * (1 - policy.jitter) - 1e-9...expected * (1 + policy.jitter) + 1e-9
            XCTAssertTrue(range.contains(delay), "retry \(index + 1) waits \(delay) s, not \(expected) ± \(policy.jitter)")
            XCTAssertNil(result.value, "the call ended before its retry \(index + 1)")
            clock.advance(by: delay)
        }
        XCTAssertTrue(result.wait(timeout: 10) { $0 != nil })
        guard case .failure(let error) = result.value else { return XCTFail("the call succeeded against a backend that is down") }
        guard case .transport = error else { return XCTFail("\(error), not the transport's error") }
        XCTAssertEqual(clock.delays.count, policy.maxAttempts - 1, "\(policy.maxAttempts) attempts in all")
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
        XCTAssertTrue(clock.waitForDelays(1))
        task.cancel()
        XCTAssertTrue(result.wait(timeout: 10) { $0 != nil }, "the cancelled call went on waiting")
        guard case .failure(.cancelled) = result.value else { return XCTFail("\(String(describing: result.value)), not cancelled") }
        XCTAssertEqual(clock.delays.count, 1)
    }
}
