@preconcurrency import Benchmark
import Foundation

/// CI's allocation gate (`.ci/run`: `thresholds check --metric mallocCountTotal`) asks whether
/// a benchmark allocates once warm, which a few iterations show as well as thousands. With
/// `PRACTICED_BENCHMARK_GATE` set, every benchmark registered so far is capped at a few
/// iterations and a short duration, its warm-up kept as it is (the allocations a warm-up
/// makes are the ones the gate must not count): the gate's runs took 2 min 18 s at full
/// length. Without it, nothing changes, and the figures in docs/performance.md come from
/// full-length runs.
public enum BenchmarkGate {
    public static let isGating = ProcessInfo.processInfo.environment["PRACTICED_BENCHMARK_GATE"] != nil

    /// Called last in a target's `benchmarks` closure.
    public static func capIfGating() {
        guard isGating else { return }
        for benchmark in Benchmark.benchmarks {
            benchmark.configuration.maxIterations = min(benchmark.configuration.maxIterations, 5)
            benchmark.configuration.maxDuration = min(benchmark.configuration.maxDuration, .milliseconds(200))
        }
    }
}
