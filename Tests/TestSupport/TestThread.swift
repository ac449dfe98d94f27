import Foundation

/// A thread a test starts and joins with a deadline: its end is an event the joiner waits on
/// (``Awaitable``), never a poll of `Thread.isFinished`.
public final class TestThread: Sendable {
    private let finished = Awaitable(false)

    /// Starts `body` on a new thread named `name`.
    public init(name: String? = nil, _ body: @escaping @Sendable () -> Void) {
        let finished = finished
        let thread = Thread {
            body()
            finished.update { $0 = true }
        }
        if let name { thread.name = name }
        thread.start()
    }

    /// Whether the body has returned.
    public var isFinished: Bool { finished.value }

    /// Waits until the body has returned, at most `timeout` seconds; false if it has not.
    @discardableResult
    public func join(timeout: TimeInterval = 30) -> Bool { finished.wait(timeout: timeout) { $0 } }
}
