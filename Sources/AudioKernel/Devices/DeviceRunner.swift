import Synchronization

/// The I/O loop shared by capture and playback: one thread that repeats one period of I/O,
/// counts xruns, and when the device is lost reopens it with backoff until it is back or
/// the stream is stopped. `stop` sets an eventfd that every blocking wait in the loop
/// polls, so it always takes effect within one period.
final class DeviceRunner: @unchecked Sendable {
    /// One period of I/O; returns what happened.
    typealias Step = () throws(AudioError) -> DeviceIOResult

    let label: String
    let wake: EventSignal
    private let statistics = Mutex(AudioDeviceStatistics())
    private var thread: IOThread?

    /// Backoff between reopen attempts: 50 ms doubling up to 2 s.
    static let initialBackoffNanoseconds: Int64 = 50_000_000
    static let maximumBackoffNanoseconds: Int64 = 2_000_000_000

    init(label: String) throws(AudioError) {
        self.label = label
        self.wake = try EventSignal()
    }

    var isRunning: Bool { thread != nil }

    var currentStatistics: AudioDeviceStatistics { statistics.withLock { $0 } }

    /// Starts the loop. `step` runs once per period; `reopen` opens the backend again after
    /// a loss (and throws while it cannot); `latency` reads the device's latency.
    func start(
        step: @escaping Step,
        reopen: @escaping () throws(AudioError) -> Void,
        closeBackend: @escaping () -> Void,
        latency: @escaping () -> Int?,
        reachedEnd: @escaping () -> Bool,
        framesPerPeriod: Int,
        onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void
    ) throws(AudioError) {
        guard thread == nil else {
            throw AudioError(.invalidState, message: "already started", operation: "starting \(label)")
        }
        wake.reset()
        let box = LoopState(step: step, reopen: reopen, closeBackend: closeBackend, latency: latency,
                            reachedEnd: reachedEnd, framesPerPeriod: framesPerPeriod, onEvent: onEvent)
        thread = try IOThread(name: label) { [self] in self.run(box) }
    }

    /// Stops the loop and waits for the thread to end.
    func stop() {
        guard let thread else { return }
        wake.signal()
        thread.join()
        self.thread = nil
    }

    private final class LoopState: @unchecked Sendable {
        let step: Step
        let reopen: () throws(AudioError) -> Void
        let closeBackend: () -> Void
        let latency: () -> Int?
        let reachedEnd: () -> Bool
        let framesPerPeriod: Int
        let onEvent: @Sendable (AudioDeviceEvent) -> Void
        init(step: @escaping Step, reopen: @escaping () throws(AudioError) -> Void, closeBackend: @escaping () -> Void,
             latency: @escaping () -> Int?, reachedEnd: @escaping () -> Bool, framesPerPeriod: Int,
             onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void) {
            self.step = step
            self.reopen = reopen
            self.closeBackend = closeBackend
            self.latency = latency
            self.reachedEnd = reachedEnd
            self.framesPerPeriod = framesPerPeriod
            self.onEvent = onEvent
        }
    }

    private func run(_ loop: LoopState) {
        var started = false
        var endReported = false
        var periodsSinceLatency = 0
        defer { publishThreadUsage() }
        while !wake.isSet {
            let result: DeviceIOResult
            do {
                result = try loop.step()
            } catch {
                guard recover(from: error, loop) else { return }
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
                periodsSinceLatency += 1
                let sample = periodsSinceLatency >= 10
                if sample { periodsSinceLatency = 0 }
                let latency = sample ? loop.latency() : nil
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
                if !endReported, loop.reachedEnd() {
                    endReported = true
                    loop.onEvent(.endOfInput)
                }
            }
        }
    }

    /// Handles a failed step: a lost device is closed and reopened with backoff.
    /// - Returns: false when the loop must end (stopped while waiting, or a fatal error).
    private func recover(from error: AudioError, _ loop: LoopState) -> Bool {
        statistics.withLock { $0.losses += 1 }
        loop.onEvent(.deviceLost(error))
        loop.closeBackend()
        var backoff = Self.initialBackoffNanoseconds
        var attempts = 0
        while true {
            if wake.wait(timeoutNanoseconds: backoff) { return false }
            attempts += 1
            do {
                try loop.reopen()
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
