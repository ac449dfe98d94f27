import Foundation

/// What a chaos run saw, shared by its actors: the invariant violations (each one a
/// finding), counters by kind, and reply latencies by command. Thread-safe.
final class ChaosLedger: @unchecked Sendable {
    private let lock = NSLock()
    private var violations: [String] = []
    private var counts: [String: Int] = [:]
    private var latencies: [String: [Double]] = [:]
    /// The session's stage as the checker last saw it (actors aim commands at it).
    private var stage = "idle"

    /// An invariant broken; the run fails with it. Kept to the first 200.
    func violation(_ text: String) {
        lock.withLock { if violations.count < 200 { violations.append(text) } }
        print("chaos violation: \(text)")
    }

    func count(_ key: String, _ n: Int = 1) { lock.withLock { counts[key, default: 0] += n } }

    func latency(_ command: String, seconds: Double) { lock.withLock { latencies[command, default: []].append(seconds) } }

    var currentStage: String {
        get { lock.withLock { stage } }
        set { lock.withLock { stage = newValue } }
    }

    var allViolations: [String] { lock.withLock { violations } }
    var allCounts: [String: Int] { lock.withLock { counts } }

    /// Operations of every actor: requests, raw lines, connections, faults.
    var operations: Int { lock.withLock { counts.filter { $0.key.hasPrefix("op.") }.values.reduce(0, +) } }

    /// The slowest commands' p99 and maximum, in milliseconds.
    func latencySummary() -> String {
        let all = lock.withLock { latencies }
        return all.keys.sorted().compactMap { command in
            let values = all[command]!.sorted()
            guard !values.isEmpty else { return nil }
            let p99 = values[min(values.count - 1, Int(Double(values.count) * 0.99))]
            return String(format: "%@ n=%d p99 %.0f max %.0f", command, values.count, p99 * 1000, values.last! * 1000)
        }.joined(separator: "; ")
    }
}
