import AudioKernel
internal import CAudioShim
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Tells a serial queue when one descriptor is readable or writable, as Dispatch's read and
/// write sources would, through ``DescriptorEventLoop`` (see there why not Dispatch).
///
/// Every method is called on `queue`, and the handlers run there. The registration is
/// one-shot: after each event the descriptor is disarmed until the handlers have run, then
/// armed again with what is wanted then; so a handler never runs twice at once, never after
/// ``cancel()``, and a descriptor nobody wants to hear about wakes nobody (a writable socket
/// with nothing to send must not fire on every turn of the loop). Readiness is level
/// triggered: bytes left unread fire again. A hang-up or an error calls the handlers that
/// are wanted, which find the end or the error by reading or writing; while neither is
/// wanted, `onHangUp` hears it (a client that left while its requests wait unread).
package final class DescriptorWatch: @unchecked Sendable {
    let fd: Int32
    private let queue: DispatchQueue
    private let loop = DescriptorEventLoop.shared
    private var id: UInt64 = 0
    private var onReadable: (() -> Void)?
    private var onWritable: (() -> Void)?
    private var onHangUp: (() -> Void)?

    // Touched only on the queue.
    private var reading = false
    private var writing = false
    /// The descriptor is in epoll (armed, or fired and waiting to be armed again).
    private var registered = false
    private var delivering = false
    private(set) var isCancelled = false

    package init(fd: Int32, queue: DispatchQueue, onReadable: @escaping () -> Void, onWritable: @escaping () -> Void = {},
         onHangUp: (() -> Void)? = nil) {
        self.fd = fd
        self.queue = queue
        self.onReadable = onReadable
        self.onWritable = onWritable
        self.onHangUp = onHangUp
        id = loop.register(self)
    }

    /// Whether `onReadable` is wanted.
    package func setReading(_ wanted: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard wanted != reading, !isCancelled else { return }
        reading = wanted
        if !delivering { arm() }
    }

    /// Whether `onWritable` is wanted.
    package func setWriting(_ wanted: Bool) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard wanted != writing, !isCancelled else { return }
        writing = wanted
        if !delivering { arm() }
    }

    /// Removes the descriptor from epoll at once: no handler runs after this, and the caller
    /// may close the descriptor as soon as it returns (nothing else holds it).
    package func cancel() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !isCancelled else { return }
        isCancelled = true
        if registered {
            _ = loop.control(EPOLL_CTL_DEL, fd: fd, events: 0, id: id)
            registered = false
        }
        loop.unregister(id)
        // The handlers hold their owner; the owner holds the watch.
        onReadable = nil
        onWritable = nil
        onHangUp = nil
    }

    /// From the loop's thread: the one-shot registration fired with `events`.
    func fired(_ events: UInt32) {
        queue.async { [self] in deliver(events) }
    }

    private func deliver(_ events: UInt32) {
        guard !isCancelled else { return }
        delivering = true
        let failed = events & (UInt32(EPOLLERR.rawValue) | UInt32(EPOLLHUP.rawValue)) != 0
        if failed, !reading, !writing {
            onHangUp?()
            delivering = false
            // Not armed again: a hang-up lasts, and would fire again at once. Wanting to
            // read or write arms it, and that handler then meets the end.
            return
        }
        if reading, failed || events & UInt32(EPOLLIN.rawValue) != 0 { onReadable?() }
        if !isCancelled, writing, failed || events & UInt32(EPOLLOUT.rawValue) != 0 { onWritable?() }
        delivering = false
        if !isCancelled { arm() }
    }

    /// Registers what is wanted now (one-shot), or leaves epoll when nothing is.
    private func arm() {
        let wanted = (reading ? UInt32(EPOLLIN.rawValue) : 0) | (writing ? UInt32(EPOLLOUT.rawValue) : 0)
        guard wanted != 0 || onHangUp != nil else {
            // Disarmed is not enough: a hang-up is reported even for no events.
            if registered { _ = loop.control(EPOLL_CTL_DEL, fd: fd, events: 0, id: id) }
            registered = false
            return
        }
        let events = wanted | UInt32(EPOLLONESHOT.rawValue)
        var failure = loop.control(registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd: fd, events: events, id: id)
        if failure?.rawValue == ENOENT { failure = loop.control(EPOLL_CTL_ADD, fd: fd, events: events, id: id) }
        if failure?.rawValue == EEXIST { failure = loop.control(EPOLL_CTL_MOD, fd: fd, events: events, id: id) }
        registered = failure == nil
        if failure != nil {
            // A descriptor epoll refuses: the handlers meet the reason when they read or write.
            fired(UInt32(EPOLLERR.rawValue))
        }
    }
}
