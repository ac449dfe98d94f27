import Synchronization

/// The stream life cycle shared by capture and playback: it opens the backend (at once, so a
/// missing device fails fast), runs one thread that repeats one period of I/O, counts xruns,
/// and when the device is lost closes it and reopens it with backoff until it is back or the
/// stream is stopped. `stop` sets an eventfd that every blocking wait in the loop polls, so it
/// always takes effect within one period.
///
/// The backend is touched by the owner's thread only while no I/O thread runs (`start`,
/// after `stop`), and by the I/O thread only while it runs.
final class DeviceRunner<Backend>: @unchecked Sendable {
    /// One period of I/O on the open backend; returns what happened.
    typealias Step = (Backend) throws(AudioError) -> DeviceIOResult
    typealias Open = () throws(AudioError) -> Backend

    let wake: EventSignal
    /// Views a backend as its common protocol (`Backend` is an existential such as
    /// `any CaptureBackend`, which does not conform to `DeviceBackend` itself).
    private let common: (Backend) -> any DeviceBackend
    private let statistics = Locked(AudioDeviceStatistics())
    private var thread: IOThread?
    private var backend: Backend?

    /// Backoff between reopen attempts: 50 ms doubling up to 2 s.
    static var initialBackoffNanoseconds: Int64 { 50_000_000 }
    static var maximumBackoffNanoseconds: Int64 { 2_000_000_000 }

    init(common: @escaping (Backend) -> any DeviceBackend) throws(AudioError) {
        self.wake = try EventSignal()
        self.common = common
    }

    deinit { stop() }

    var isRunning: Bool { thread != nil }

    var currentStatistics: AudioDeviceStatistics { statistics.withLock { $0 } }

    /// Opens the backend and starts the loop.
    ///
    /// - Parameters:
    ///   - label: names the thread and the errors, e.g. "capture on alsa:default".
    ///   - open: opens the backend; called now and again after a loss.
    ///   - step: one period of I/O.
    func start(
        label: String,
        framesPerPeriod: Int,
        open: @escaping Open,
        step: @escaping Step,
        onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void
    ) throws(AudioError) {
        guard thread == nil else {
            throw AudioError(.invalidState, message: "already started", operation: "starting \(label)")
        }
        backend = try open()
        wake.reset()
        let loop = Loop(open: open, step: step, framesPerPeriod: framesPerPeriod, onEvent: onEvent)
        do {
            thread = try IOThread(name: label) { [self] in self.run(loop) }
        } catch {
            backend.map { common($0).close() }
            backend = nil
            throw error
        }
    }

    /// Stops the loop, waits for its thread, then hands the backend (if open) to `finish`
    /// before closing it.
    func stop(finish: (Backend) -> Void = { _ in }) {
        if let thread {
            wake.signal()
            thread.join()
            self.thread = nil
        }
        if let backend {
            finish(backend)
            common(backend).close()
        }
        backend = nil
    }

    private struct Loop: @unchecked Sendable {
        let open: Open
        let step: Step
        let framesPerPeriod: Int
        let onEvent: @Sendable (AudioDeviceEvent) -> Void
    }

    private func run(_ loop: Loop) {
        var started = false
        var endReported = false
        var periodsSinceSample = 0
        defer { publishThreadUsage() }
        while !wake.isSet {
            guard let backend else { return }
            let result: DeviceIOResult
            do {
                result = try loop.step(backend)
            } catch {
                guard reopen(after: error, loop) else { return }
                continue
            }
            switch result {
            case .woken:
                return
            case .xrun, .transferredAfterXrun:
                let total = statistics.withLock { s -> Int in
                    s.xruns += 1
                    return s.xruns
                }
                loop.onEvent(.xrun(total: total))
                if result == .xrun { continue }
                fallthrough
            case .transferred:
                // Latency and thread usage are sampled every 10 periods: cheap, and fresh
                // enough for status and metrics.
                periodsSinceSample += 1
                let sample = periodsSinceSample >= 10
                if sample { periodsSinceSample = 0 }
                let latency = sample ? common(backend).latencyFrames() : nil
                let cpu = sample ? ThreadUsage.cpuNanoseconds() : 0
                let wakeups = sample ? ThreadUsage.voluntarySwitches() : 0
                statistics.withLock { s in
                    s.periods += 1
                    s.frames += loop.framesPerPeriod
                    if sample {
                        if let latency { s.latencyFrames = latency }
                        s.ioThreadCPUNanoseconds = cpu
                        s.ioThreadWakeups = wakeups
                    }
                }
                if !started {
                    started = true
                    loop.onEvent(.started)
                }
                if !endReported, common(backend).reachedEnd {
                    endReported = true
                    loop.onEvent(.endOfInput)
                }
            }
        }
    }

    /// Handles a failed step: the device is reported lost, closed, and reopened with backoff.
    /// - Returns: false when the loop must end (stopped while waiting).
    private func reopen(after error: AudioError, _ loop: Loop) -> Bool {
        statistics.withLock { $0.losses += 1 }
        loop.onEvent(.deviceLost(error))
        backend.map { common($0).close() }
        backend = nil
        var backoff = Self.initialBackoffNanoseconds
        var attempts = 0
        while true {
            if wake.wait(timeoutNanoseconds: backoff) { return false }
            attempts += 1
            do {
                backend = try loop.open()
                statistics.withLock { $0.reopens += 1 }
                loop.onEvent(.deviceRestored(attempts: attempts))
                return true
            } catch {
                backoff = min(backoff * 2, Self.maximumBackoffNanoseconds)
            }
        }
    }

    private func publishThreadUsage() {
        let cpu = ThreadUsage.cpuNanoseconds()
        let wakeups = ThreadUsage.voluntarySwitches()
        statistics.withLock { s in
            s.ioThreadCPUNanoseconds = cpu
            s.ioThreadWakeups = wakeups
        }
    }
}
