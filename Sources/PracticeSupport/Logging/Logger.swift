import FoundationEssentials
import Glibc

/// Log levels, with the syslog priority each maps to under the journal.
public enum LogLevel: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible {
    case debug, info, notice, warning, error

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }

    /// The `<N>` prefix systemd's journal reads on stderr lines (sd-daemon.h).
    public var syslogPriority: Int {
        switch self {
        case .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        }
    }

    public var description: String {
        switch self {
        case .debug: return "debug"
        case .info: return "info"
        case .notice: return "notice"
        case .warning: return "warning"
        case .error: return "error"
        }
    }

    public init?(name: String) {
        guard let level = LogLevel.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = level
    }
}

/// One log line before formatting.
public struct LogRecord: Sendable {
    public var level: LogLevel
    public var category: String
    public var message: String

    public init(level: LogLevel, category: String, message: String) {
        self.level = level
        self.category = category
        self.message = message
    }
}

/// Where log records go.
public protocol LogSink: Sendable {
    func write(_ record: LogRecord)
}

/// A named logger with a threshold. Messages are autoclosures: a debug line that is not
/// written costs nothing to format.
public struct Logger: Sendable {
    public let category: String
    public let sink: any LogSink
    public let threshold: LogLevel

    public init(category: String, sink: any LogSink = StandardErrorLogSink.shared, threshold: LogLevel = .info) {
        self.category = category
        self.sink = sink
        self.threshold = threshold
    }

    /// A logger of another category with the same sink and threshold.
    public func named(_ category: String) -> Logger { Logger(category: category, sink: sink, threshold: threshold) }

    public func isEnabled(_ level: LogLevel) -> Bool { level >= threshold }

    public func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard level >= threshold else { return }
        sink.write(LogRecord(level: level, category: category, message: message()))
    }

    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func notice(_ message: @autoclosure () -> String) { log(.notice, message()) }
    public func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }

    /// A logger that drops everything.
    public static let disabled = Logger(category: "", sink: DiscardLogSink(), threshold: .error)
}

/// Writes one line per record to stderr: `<N>category: message` when stderr is the journal
/// (`JOURNAL_STREAM` names the same device and inode as fd 2, as sd_journal_stream_fd
/// documents), `level category: message` otherwise. One write(2) per line, so lines from
/// several threads never interleave.
public final class StandardErrorLogSink: LogSink {
    public static let shared = StandardErrorLogSink()
    private let journal: Bool

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        journal = Self.stderrIsJournal(environment["JOURNAL_STREAM"])
    }

    package static func stderrIsJournal(_ value: String?) -> Bool {
        guard let value else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    public func write(_ record: LogRecord) {
        let line = journal
            ? "<\(record.level.syslogPriority)>\(record.category): \(record.message)\n"
            : "\(record.level) \(record.category): \(record.message)\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { _ = systemWrite(2, $0.baseAddress, $0.count) }
    }
}

public struct DiscardLogSink: LogSink {
    public init() {}
    public func write(_ record: LogRecord) {}
}

/// The C library's write(2), named apart from the sinks' own `write` methods.
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(fd, buffer, count)
}
