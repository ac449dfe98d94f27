internal import CAudioShim
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An eventfd that wakes a thread blocked in `poll`: how `stop` always reaches an I/O thread,
/// whether it waits on a PCM's descriptors, a pacing deadline or a reconnect backoff. A
/// backend that waits on something else (PulseAudio's main loop condition) registers an
/// observer that `signal` calls too.
final class EventSignal: @unchecked Sendable {
    let fd: Int32
    /// Mirrors the eventfd's state, so that ``isSet`` (asked by every I/O loop once a
    /// period) costs a load rather than a `poll` system call.
    private let raised = Atomic<Bool>(false)
    private let observer = Locked<(@Sendable () -> Void)?>(nil)

    init() throws(AudioError) {
        let fd = practiced_eventfd_create()
        guard fd >= 0 else {
            throw AudioError(.io, code: errno, message: Errno.current.description, operation: "creating an eventfd")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Wakes the waiting thread; the signal stays set until ``reset()``.
    func signal() {
        raised.store(true, ordering: .releasing)
        _ = practiced_eventfd_signal(fd)
        let notify = observer.withLock { $0 }
        notify?()
    }

    /// Sets (or clears, with nil) the closure `signal` calls besides setting the eventfd.
    func setObserver(_ notify: (@Sendable () -> Void)?) {
        observer.withLock { $0 = notify }
    }

    /// Clears the signal.
    func reset() {
        raised.store(false, ordering: .releasing)
        _ = practiced_eventfd_drain(fd)
    }

    /// Whether the signal is set, without waiting.
    var isSet: Bool { raised.load(ordering: .acquiring) }

    /// Waits until the signal is set or the timeout passes.
    ///
    /// - Returns: true when the signal is set.
    func wait(timeoutNanoseconds: Int64) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = Monotonic.now() + timeoutNanoseconds
        while true {
            let left = max(0, deadline - Monotonic.now())
            // poll's timeout is in milliseconds; round up so a short wait does not spin.
            let millis = Int32(clamping: (left + 999_999) / 1_000_000)
            let r = poll(&entry, 1, millis)
            if r > 0 { return true }
            if r < 0, errno == EINTR { continue }
            if Monotonic.now() >= deadline { return false }
        }
    }

    /// Waits until `self` or `other` is set, or the timeout passes.
    ///
    /// - Returns: which is set (`self` first when both are), or nil after the timeout.
    func wait(or other: EventSignal, timeoutNanoseconds: Int64) -> EventSignal? {
        // On the stack: a device without a clock waits here between periods, where nothing
        // may allocate.
        withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) { entries in
            entries[0] = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            entries[1] = pollfd(fd: other.fd, events: Int16(POLLIN), revents: 0)
            let deadline = Monotonic.now() + timeoutNanoseconds
            while true {
                let left = max(0, deadline - Monotonic.now())
                let r = poll(entries.baseAddress, 2, Int32(clamping: (left + 999_999) / 1_000_000))
                if r > 0 { return entries[0].revents != 0 ? self : other }
                if r < 0, errno == EINTR { continue }
                if Monotonic.now() >= deadline { return nil }
            }
        }
    }
}
