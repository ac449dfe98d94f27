import AudioKernel
import FoundationEssentials

/// The daemon's counters and latency histograms, written in the Prometheus text
/// exposition format (version 0.0.4) for `metrics`.
public final class Metrics: @unchecked Sendable {
    private let lock = Lock()
    private var counters: [String: (help: String, values: [String: Double])] = [:]
    private var gauges: [String: (help: String, values: [String: Double])] = [:]
    private var histograms: [String: Histogram] = [:]

    /// Upper bounds in seconds, from 5 ms to 60 s: device and backend latencies both fit.
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    struct Histogram {
        var help: String
        var bounds: [Double]
        var counts: [UInt64]
        var sum = 0.0
        var count: UInt64 = 0
    }

    public init() {}

    /// Adds to a counter; `value` is its label's (``Metric/label``), nil for one without.
    public func increment(_ metric: Metric, _ value: String? = nil, by amount: Double = 1) {
        precondition(metric.kind == .counter, "\(metric.name) is a \(metric.kind)")
        lock.withLock {
            counters[metric.name, default: (metric.help, [:])].values[metric.labels(value), default: 0] += amount
        }
    }

    /// Sets a counter kept elsewhere (the control server's, the devices') to its current
    /// total: it is still a counter to Prometheus, which needs the `_total` name and type.
    public func setCounter(_ metric: Metric, _ value: String? = nil, to total: Double) {
        precondition(metric.kind == .counter, "\(metric.name) is a \(metric.kind)")
        lock.withLock { counters[metric.name, default: (metric.help, [:])].values[metric.labels(value)] = total }
    }

    public func set(_ metric: Metric, _ value: String? = nil, to level: Double) {
        precondition(metric.kind == .gauge, "\(metric.name) is a \(metric.kind)")
        lock.withLock { gauges[metric.name, default: (metric.help, [:])].values[metric.labels(value)] = level }
    }

    public func observe(_ metric: Metric, seconds: Double) {
        precondition(metric.kind == .histogram, "\(metric.name) is a \(metric.kind)")
        lock.withLock {
            var histogram = histograms[metric.name]
                ?? Histogram(help: metric.help, bounds: metric.buckets, counts: Array(repeating: 0, count: metric.buckets.count))
            for (index, bound) in histogram.bounds.enumerated() where seconds <= bound { histogram.counts[index] += 1 }
            histogram.sum += seconds
            histogram.count += 1
            histograms[metric.name] = histogram
        }
    }

    public func gauge(_ metric: Metric, _ value: String? = nil) -> Double? {
        lock.withLock { gauges[metric.name]?.values[metric.labels(value)] }
    }

    public func counter(_ metric: Metric, _ value: String? = nil) -> Double {
        lock.withLock { counters[metric.name]?.values[metric.labels(value)] ?? 0 }
    }

    /// The exposition text.
    public func exposition() -> String {
        lock.withLock {
            var out = ""
            func number(_ value: Double) -> String {
                value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
            }
            func series(_ name: String, _ labels: String) -> String { labels.isEmpty ? name : "\(name){\(labels)}" }
            for name in counters.keys.sorted() {
                let counter = counters[name]!
                out += "# HELP \(name) \(counter.help)\n# TYPE \(name) counter\n"
                for labels in counter.values.keys.sorted() { out += "\(series(name, labels)) \(number(counter.values[labels]!))\n" }
            }
            for name in gauges.keys.sorted() {
                let gauge = gauges[name]!
                out += "# HELP \(name) \(gauge.help)\n# TYPE \(name) gauge\n"
                for labels in gauge.values.keys.sorted() { out += "\(series(name, labels)) \(number(gauge.values[labels]!))\n" }
            }
            for name in histograms.keys.sorted() {
                let histogram = histograms[name]!
                out += "# HELP \(name) \(histogram.help)\n# TYPE \(name) histogram\n"
                for (index, bound) in histogram.bounds.enumerated() {
                    out += "\(name)_bucket{le=\"\(bound)\"} \(histogram.counts[index])\n"
                }
                out += "\(name)_bucket{le=\"+Inf\"} \(histogram.count)\n\(name)_sum \(histogram.sum)\n\(name)_count \(histogram.count)\n"
            }
            return out
        }
    }
}
