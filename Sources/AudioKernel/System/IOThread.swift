internal import CAudioShim
#if canImport(Glibc)
import Glibc
#endif

/// A named POSIX thread running one closure: the home of a device's I/O loop. Joined
/// exactly once, by ``join()``.
public final class IOThread: @unchecked Sendable {
    private var thread: pthread_t
    private var joined = false

    private final class Start {
        let name: String
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Starts `body` on a new thread named `name`.
    convenience init(name: String, body: @escaping @Sendable () -> Void) throws(AudioError) {
        try self.init(name: name, stackBytes: nil, body: body)
    }

    /// Starts `body` on a new thread named `name` with a stack of `stackBytes` (the
    /// system's default when nil).
    init(name: String, stackBytes: Int?, body: @escaping @Sendable () -> Void) throws(AudioError) {
        let start = Unmanaged.passRetained(Start(name: name, body: body))
        var handle = pthread_t()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if let stackBytes { pthread_attr_setstacksize(&attributes, max(stackBytes, Int(PTHREAD_STACK_MIN))) }
        let result = pthread_create(&handle, &attributes, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            start.name.withCString { practiced_thread_set_name($0) }
            start.body()
            return nil
        }, start.toOpaque())
        guard result == 0 else {
            start.release()
            throw AudioError(.io, code: result, message: Errno(rawValue: result).description, operation: "starting thread \(name)")
        }
        thread = handle
    }

    /// Runs `body` on a new thread named `name` that nobody joins (it ends by itself).
    public static func detach(name: String, stackBytes: Int? = nil, body: @escaping @Sendable () -> Void) throws(AudioError) {
        let thread = try IOThread(name: name, stackBytes: stackBytes, body: body)
        thread.joined = true
        pthread_detach(thread.thread)
    }

    /// Waits for the thread to finish.
    func join() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }

    /// Whether the caller runs on this thread.
    var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }
}

/// CPU time and wake-ups of the calling thread.
enum ThreadUsage {
    static func cpuNanoseconds() -> Int64 { practiced_thread_cpu_time_ns() }
    static func voluntarySwitches() -> Int64 { practiced_thread_voluntary_switches() }
}
