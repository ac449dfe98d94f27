import Synchronization

/// Passes records at or above a threshold that can change at run time (SIGHUP).
package final class FilteringLogSink: LogSink, @unchecked Sendable {
    private let next: any LogSink
    private let level: Atomic<Int>

    package init(_ next: any LogSink, threshold: LogLevel) {
        self.next = next
        level = Atomic(threshold.rawValue)
    }

    package var threshold: LogLevel {
        get { LogLevel(rawValue: level.load(ordering: .relaxed)) ?? .info }
        set { level.store(newValue.rawValue, ordering: .relaxed) }
    }

    package func write(_ record: LogRecord) {
        guard record.level.rawValue >= level.load(ordering: .relaxed) else { return }
        next.write(record)
    }
}
