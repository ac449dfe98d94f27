import Foundation

/// A CPU bandwidth limit for processes, as `systemd-run -p CPUQuota=25%` sets one: the
/// kernel's CFS quota, written directly. cgroup v2's `cpu.max` where the unified hierarchy
/// has the cpu controller; otherwise cgroup v1's `cpu.cfs_quota_us` (containers such as
/// this machine's mount v1's cpu controller, and v2 then has none). Both are the same
/// scheduler mechanism: at most `quota` µs of CPU per 100 ms period, throttled beyond it.
public final class CPUQuota {
    public let directory: String
    private let parentProcs: String
    private let statFile: String
    private let version: Int

    /// A new cgroup limited to `percentOfACore` % of one core.
    public init(percentOfACore percent: Int, name: String) throws {
        let period = 100_000, quota = period * percent / 100
        let unified = "/sys/fs/cgroup"
        if let controllers = try? String(contentsOfFile: "\(unified)/cgroup.controllers", encoding: .utf8),
           controllers.split(separator: " ").contains(where: { $0.trimmingCharacters(in: .whitespacesAndNewlines) == "cpu" }) {
            version = 2
            directory = "\(unified)/\(name)"
            parentProcs = "\(unified)/cgroup.procs"
            try? Self.write("+cpu", to: "\(unified)/cgroup.subtree_control")
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            try Self.write("\(quota) \(period)", to: "\(directory)/cpu.max")
        } else if FileManager.default.fileExists(atPath: "\(unified)/cpu/cpu.cfs_quota_us") {
            version = 1
            directory = "\(unified)/cpu/\(name)"
            parentProcs = "\(unified)/cpu/cgroup.procs"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            try Self.write("\(period)", to: "\(directory)/cpu.cfs_period_us")
            try Self.write("\(quota)", to: "\(directory)/cpu.cfs_quota_us")
        } else {
            throw ToolError(command: "cgroup cpu controller", status: -1, stderr: "neither cgroup v2 cpu.max nor v1 cpu.cfs_quota_us is available")
        }
        statFile = "\(directory)/cpu.stat"
    }

    /// Moves a process, every thread of it, into the limit.
    public func add(pid: pid_t) throws { try Self.write("\(pid)", to: "\(directory)/cgroup.procs") }

    /// Periods the group ran in, how many of them it was throttled in, and for how long.
    public var throttling: (periods: Int, throttled: Int, throttledSeconds: Double) {
        let text = (try? String(contentsOfFile: statFile, encoding: .utf8)) ?? ""
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
        }
        let seconds = version == 2 ? (values["throttled_usec"] ?? 0) / 1e6 : (values["throttled_time"] ?? 0) / 1e9
        return (Int(values["nr_periods"] ?? 0), Int(values["nr_throttled"] ?? 0), seconds)
    }

    deinit {
        // A group with processes cannot be removed: what is left goes back to the parent.
        let procs = (try? String(contentsOfFile: "\(directory)/cgroup.procs", encoding: .utf8)) ?? ""
        for pid in procs.split(separator: "\n") { try? Self.write(String(pid), to: parentProcs) }
        rmdir(directory)
    }

    private static func write(_ text: String, to path: String) throws {
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw ToolError(command: "open \(path)", status: errno, stderr: String(cString: strerror(errno)))
        }
        defer { try? handle.close() }
        try handle.write(contentsOf: Data(text.utf8))
    }
}
