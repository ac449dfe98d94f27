/// A value shared across threads behind a pthread mutex, with `Mutex`'s `withLock`.
///
/// Why not Synchronization's `Mutex`: on Linux it locks through a futex that
/// ThreadSanitizer cannot see, so TSan reports the accesses it guards as races (it did in
/// CI, for the recorder's mailbox, between the session's queue and the capture thread);
/// a pthread mutex it intercepts. Uncontended, the two cost the same (an atomic exchange),
/// and neither allocates per call, which the capture and playback threads rely on.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = Lock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, the lock held.
    @inline(__always)
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
