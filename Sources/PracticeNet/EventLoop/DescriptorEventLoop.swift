import AudioKernel
internal import CAudioShim
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// The process's one epoll instance and the thread that waits on it: readiness of the
/// control sockets and the backend's connections, handed to each ``DescriptorWatch``'s
/// serial queue.
///
/// Why not Dispatch's read and write sources: on Linux, libdispatch multiplexes every source
/// of a descriptor onto one epoll registration (a "muxnote"), and its bookkeeping breaks
/// under churn: sources made and cancelled while others of the same or a reused descriptor
/// fire. The daemon died of it under a 64-client flood (SIGSEGV in
/// `_dispatch_unote_register_muxed`) and during the soak ("BUG IN LIBDISPATCH: Source
/// finalized twice", a trap in `_dispatch_source_refs_finalize_unregistration`); upstream
/// tracks the same class of faults as swift-corelibs-libdispatch #833 and #949, open. Here
/// each descriptor has one registration, owned by one watch, removed synchronously before
/// the descriptor is closed, and events name the watch by a number never reused, so an
/// event that was already on its way for a closed descriptor finds nothing.
final class DescriptorEventLoop: @unchecked Sendable {
    static let shared = DescriptorEventLoop()

    private let epoll: Int32
    /// What the loop keeps, under its one lock: the watches by number, the next number, and
    /// whether the thread runs.
    private struct State {
        var watches: [UInt64: DescriptorWatch] = [:]
        var nextID: UInt64 = 1
        var started = false
    }
    private let state = Locked(State())

    private init() {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epoll >= 0, "epoll_create1: \(Errno.current)")
    }

    /// A number for a new watch, never given twice.
    func register(_ watch: DescriptorWatch) -> UInt64 {
        let (id, first) = state.withLock { state -> (UInt64, Bool) in
            defer {
                state.nextID += 1
                state.started = true
            }
            state.watches[state.nextID] = watch
            return (state.nextID, !state.started)
        }
        if first { start() }
        return id
    }

    /// Forgets a watch: an event for it already taken from epoll is dropped.
    func unregister(_ id: UInt64) {
        _ = state.withLock { $0.watches.removeValue(forKey: id) }
    }

    /// `epoll_ctl` for one descriptor; the errno on failure.
    func control(_ operation: Int32, fd: Int32, events: UInt32, id: UInt64) -> Errno? {
        var event = epoll_event()
        event.events = events
        event.data.u64 = id
        return epoll_ctl(epoll, operation, fd, &event) == 0 ? nil : Errno.current
    }

    /// The thread, started by the first registration.
    private func start() {
        do {
            try IOThread.detach(name: "descriptor events") { [self] in run() }
        } catch {
            preconditionFailure("starting the descriptor event thread: \(error)")
        }
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), -1) }
            if count < 0 {
                if errno == EINTR { continue }
                preconditionFailure("epoll_wait: \(Errno.current)")
            }
            for index in 0..<Int(count) {
                let id = events[index].data.u64
                let ready = events[index].events
                guard let watch = state.withLock({ $0.watches[id] }) else { continue }
                watch.fired(ready)
            }
        }
    }
}
