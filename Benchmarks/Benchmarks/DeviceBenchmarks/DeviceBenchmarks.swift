import AudioKernel
@preconcurrency import Benchmark
import BenchmarkGate
import Dispatch
import Foundation

// The capture and playback loops of AudioKernel's devices: CPU time of the I/O thread per
// second of audio, its wake-ups per second, and allocations per period in steady state.
//
// - "alsa-null": ALSA's null PCM through alsa-lib, which has no clock: the loop runs flat out,
//   so its CPU per second of audio is the loop's own cost.
// - "pulse": the PulseAudio null sink and its monitor, in real time; needs PULSE_SERVER
//   (`bash .ci/with-pulse swift package benchmark --target DeviceBenchmarks`), else skipped.
//
// Allocations are counted process-wide between two points in steady state (after a warm-up
// of 20 periods), so libpulse's own threads are included in the pulse figures.

let warmupPeriods = 20
let measuredPeriods = 100

/// Counts periods and signals a semaphore when an armed target is reached. Arming allocates
/// (the semaphore), so it happens before the measured region; `tick` never allocates.
final class PeriodCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var target = Int.max
    private var semaphore = DispatchSemaphore(value: 0)

    func tick() {
        lock.lock()
        count += 1
        let reached = count == target
        lock.unlock()
        if reached { semaphore.signal() }
    }

    /// Prepares to wait for `n` periods in all.
    func arm(_ n: Int) {
        lock.lock()
        // Always created at 0: libdispatch traps when a semaphore is freed below its
        // initial value. A target already passed (a clockless device runs ahead) is
        // signalled at once instead.
        semaphore = DispatchSemaphore(value: 0)
        target = n
        let reached = count >= n
        lock.unlock()
        if reached { semaphore.signal() }
    }

    /// Blocks until the armed target is reached (at most 30 s).
    func waitArmed() -> Bool {
        lock.lock()
        let semaphore = self.semaphore
        lock.unlock()
        return semaphore.wait(timeout: .now() + 30) == .success
    }
}

enum Loop { case capture, playback }

var deviceMetrics: [BenchmarkMetric] {
    [.wallClock, .mallocCountTotal, .custom("cpu_us_per_audio_s"), .custom("wakeups_per_s")]
}

func configuration(gated: Bool) -> Benchmark.Configuration {
    .init(
        metrics: deviceMetrics,
        timeUnits: .milliseconds,
        warmupIterations: 0,
        maxDuration: .seconds(20),
        maxIterations: 3,
        thresholds: gated ? [.mallocCountTotal: .init(absolute: [.p0: 0, .p25: 0, .p50: 0, .p75: 0, .p90: 0, .p99: 0, .p100: 0])] : nil
    )
}

/// Runs one device loop for warm-up plus measured periods; the measured region is the
/// steady state only.
func measure(_ loop: Loop, _ name: AudioDeviceName, _ config: AudioStreamConfiguration, _ benchmark: Benchmark) throws {
    let counter = PeriodCounter()
    counter.arm(warmupPeriods)
    let statistics: () -> AudioDeviceStatistics
    let stop: () -> Void
    switch loop {
    case .capture:
        let device = try CaptureDevice(name: name, configuration: config)
        try device.start(onPeriod: { period in blackHole(period.count); counter.tick() })
        (statistics, stop) = ({ device.statistics }, { device.stop() })
    case .playback:
        let device = try PlaybackDevice(name: name, configuration: config)
        try device.start(render: { buffer in buffer.update(repeating: 0); counter.tick() })
        (statistics, stop) = ({ device.statistics }, { device.stop() })
    }
    guard counter.waitArmed() else { return stop() }
    counter.arm(warmupPeriods + measuredPeriods)
    let start = statistics()
    benchmark.startMeasurement()
    _ = counter.waitArmed()
    benchmark.stopMeasurement()
    stop()
    let end = statistics()
    let audioSeconds = Double(end.frames - start.frames) / Double(config.sampleRate)
    guard audioSeconds > 0 else { return }
    let cpu = Double(end.ioThreadCPUNanoseconds - start.ioThreadCPUNanoseconds) / 1000 / audioSeconds
    let wakeups = Double(end.ioThreadWakeups - start.ioThreadWakeups) / audioSeconds
    benchmark.measurement(.custom("cpu_us_per_audio_s"), Int(cpu.rounded()))
    benchmark.measurement(.custom("wakeups_per_s"), Int(wakeups.rounded()))
}

let benchmarks: @Sendable () -> Void = {
    let alsaNull = AudioStreamConfiguration()
    Benchmark("CaptureLoop.alsa-null", configuration: configuration(gated: true)) { b in
        try measure(.capture, .alsa(pcm: "null"), alsaNull, b)
    }
    Benchmark("PlaybackLoop.alsa-null", configuration: configuration(gated: true)) { b in
        try measure(.playback, .alsa(pcm: "null"), alsaNull, b)
    }
    if let server = ProcessInfo.processInfo.environment["PULSE_SERVER"] {
        var pulse = AudioStreamConfiguration()
        pulse.pulseServer = server
        Benchmark("CaptureLoop.pulse", configuration: configuration(gated: false)) { b in
            try measure(.capture, .pulse(device: "kiosk.monitor"), pulse, b)
        }
        Benchmark("PlaybackLoop.pulse", configuration: configuration(gated: false)) { b in
            try measure(.playback, .pulse(device: "kiosk"), pulse, b)
        }
    }
    BenchmarkGate.capIfGating()
}
