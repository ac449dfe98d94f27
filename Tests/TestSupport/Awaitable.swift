import Foundation

/// A value shared with a device or engine thread, which a test can wait on with a deadline
/// (never a sleep): every update wakes the waiters, who re-check their condition.
public final class Awaitable<State>: @unchecked Sendable {
    private let condition = NSCondition()
    private var state: State

    public init(_ state: State) { self.state = state }

    /// Changes the value and wakes waiters.
    @discardableResult
    public func update<R>(_ body: (inout State) -> R) -> R {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body(&state)
    }

    /// A copy of the value.
    public var value: State {
        condition.lock()
        defer { condition.unlock() }
        return state
    }

    /// Waits until `predicate` holds, at most `timeout` seconds.
    @discardableResult
    public func wait(timeout: TimeInterval, _ predicate: (State) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(state) {
            if !condition.wait(until: deadline) { return predicate(state) }
        }
        return true
    }
}
