#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread mutex guarding state held elsewhere (``Locked`` when the lock owns the value).
///
/// Foundation's `NSLock` did this before; the daemon links only FoundationEssentials,
/// which has no lock (its resident memory is the reason, see docs/performance.md). A pthread
/// mutex rather than Synchronization's `Mutex` for the reason ``Locked`` gives: ThreadSanitizer
/// sees it.
public final class Lock: @unchecked Sendable {
    fileprivate let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` with the lock held.
    @inline(__always)
    public func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A lock with a condition variable: `NSCondition`'s shape on a pthread mutex and a
/// condition that waits on the monotonic clock (a deadline is not moved by a clock step).
public final class Condition: @unchecked Sendable {
    private let mutex = Lock()
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if !canImport(Darwin)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    public func lock() { mutex.lock() }
    public func unlock() { mutex.unlock() }

    @inline(__always)
    public func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        try mutex.withLock(body)
    }

    /// Wakes every waiter; call with the lock held.
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits, the lock held, until woken or until `deadline` (``Monotonic/now()``)
    /// passes; false when the deadline passed.
    public func wait(untilMonotonic deadline: Int64) -> Bool {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex.mutex, &time) != ETIMEDOUT
    }
}
