import Foundation

/// What the kernel says about a running process, read from `/proc/<pid>`: CPU time, resident
/// memory, open descriptors, threads and context switches (each switch away from a thread
/// that blocked is one wake-up when it runs again).
public struct ProcessStatistics: Sendable, CustomStringConvertible {
    public var cpuSeconds: Double
    public var residentBytes: Int
    public var peakResidentBytes: Int
    public var fileDescriptors: Int
    public var threads: Int
    /// Voluntary and involuntary switches of each live thread, by thread id.
    public var switchesByThread: [String: Int]
    public var contextSwitches: Int { switchesByThread.values.reduce(0, +) }
    /// Thread names (`comm`), for a report of what was left behind.
    public var threadNames: [String]
    /// CPU seconds of each live thread, by thread id, with its name.
    public var cpuByThread: [String: (name: String, seconds: Double)]

    public init(pid: pid_t) throws {
        let base = "/proc/\(pid)"
        let stat = try String(contentsOfFile: "\(base)/stat", encoding: .utf8)
        // Fields after the command name, which may hold spaces: utime and stime are 14 and 15.
        guard let close = stat.lastIndex(of: ")") else { throw ToolError(command: "read \(base)/stat", status: 0, stderr: stat) }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        cpuSeconds = (Double(fields[11]) ?? 0) / ticks + (Double(fields[12]) ?? 0) / ticks
        let status = try String(contentsOfFile: "\(base)/status", encoding: .utf8)
        residentBytes = Self.kilobytes("VmRSS", in: status) * 1024
        peakResidentBytes = Self.kilobytes("VmHWM", in: status) * 1024
        fileDescriptors = (try? FileManager.default.contentsOfDirectory(atPath: "\(base)/fd").count) ?? 0
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "\(base)/task")) ?? []
        threads = tasks.count
        var switches: [String: Int] = [:]
        var names: [String] = []
        var cpu: [String: (name: String, seconds: Double)] = [:]
        for task in tasks {
            if let stat = try? String(contentsOfFile: "\(base)/task/\(task)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")"),
               let open = stat.firstIndex(of: "(") {
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                let name = String(stat[stat.index(after: open)..<close])
                cpu[task] = (name, ((Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)) / ticks)
            }
            guard let text = try? String(contentsOfFile: "\(base)/task/\(task)/status", encoding: .utf8) else { continue }
            switches[task] = Self.kilobytes("voluntary_ctxt_switches", in: text) + Self.kilobytes("nonvoluntary_ctxt_switches", in: text)
            if let name = try? String(contentsOfFile: "\(base)/task/\(task)/comm", encoding: .utf8) {
                names.append(name.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        switchesByThread = switches
        threadNames = names.sorted()
        cpuByThread = cpu
    }

    /// CPU seconds each thread name used between `earlier` and this reading (threads that
    /// ended in between are not counted; threads born in between count from zero), largest
    /// first.
    public func cpuByName(since earlier: ProcessStatistics) -> [(name: String, seconds: Double)] {
        var byName: [String: Double] = [:]
        for (task, now) in cpuByThread {
            byName[now.name, default: 0] += now.seconds - (earlier.cpuByThread[task]?.seconds ?? 0)
        }
        return byName.map { ($0.key, $0.value) }.sorted { $0.seconds > $1.seconds }
    }

    /// Context switches per second of each thread name between `earlier` and this reading
    /// (its wake-ups: almost all of a daemon's switches are voluntary), largest first.
    public func switchesByName(since earlier: ProcessStatistics, seconds: Double) -> [(name: String, perSecond: Double)] {
        var byName: [String: Int] = [:]
        for (task, now) in switchesByThread {
            let name = cpuByThread[task]?.name ?? "?"
            byName[name, default: 0] += now - (earlier.switchesByThread[task] ?? 0)
        }
        return byName.map { ($0.key, Double($0.value) / seconds) }.sorted { $0.perSecond > $1.perSecond }
    }

    /// The number after `key:` in a `status` file (kB for memory lines, a count otherwise).
    private static func kilobytes(_ key: String, in status: String) -> Int {
        for line in status.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Int(line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? 0
        }
        return 0
    }

    public var description: String {
        String(format: "cpu %.2f s, rss %.1f MB (peak %.1f MB), %d fds, %d threads", cpuSeconds, Double(residentBytes) / 1_048_576,
               Double(peakResidentBytes) / 1_048_576, fileDescriptors, threads)
    }

    /// Wake-ups per second and the share of one core used over `seconds` of watching.
    public static func idle(pid: pid_t, seconds: Double) throws -> (wakeupsPerSecond: Double, coreShare: Double) {
        let before = try ProcessStatistics(pid: pid)
        let start = Date()
        // Watching needs time to pass; nothing here waits for an event.
        usleep(UInt32(seconds * 1_000_000))
        let after = try ProcessStatistics(pid: pid)
        let elapsed = Date().timeIntervalSince(start)
        // Per thread: a thread that ended meanwhile takes its count with it; a new one
        // counts from zero.
        let switches = after.switchesByThread.reduce(0) { $0 + $1.value - (before.switchesByThread[$1.key] ?? 0) }
        return (Double(switches) / elapsed, (after.cpuSeconds - before.cpuSeconds) / elapsed)
    }
}

/// Percentiles of a list of figures, for the proof runs' reports.
public struct Percentiles: Sendable, CustomStringConvertible {
    public let count: Int
    public let p50: Double
    public let p95: Double
    public let p99: Double
    public let max: Double

    public init(_ values: [Double]) {
        let sorted = values.sorted()
        count = sorted.count
        func rank(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            // Nearest rank: the smallest value with at least p of the values at or below it.
            return sorted[Swift.max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
        }
        p50 = rank(0.50)
        p95 = rank(0.95)
        p99 = rank(0.99)
        max = sorted.last ?? .nan
    }

    public var description: String { String(format: "p50 %.2f, p95 %.2f, p99 %.2f, max %.2f (n=%d)", p50, p95, p99, max, count) }
}
