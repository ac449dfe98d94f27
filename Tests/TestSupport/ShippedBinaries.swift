import Foundation

/// The executables the process-level tests run: this build's (next to the test bundle), or
/// the shipped ones from `$PRACTICED_BIN_DIR` (CI points it at the release build: the
/// optimizer changes lifetimes, and a debug-only run hid a release daemon that ignored
/// SIGTERM). `$PRACTICED_BINARY` still names the daemon alone (the proof runs).
public enum ShippedBinaries {
    /// Whether the binaries under test are not this (debug) build's own.
    public static var isOverridden: Bool {
        let environment = ProcessInfo.processInfo.environment
        return !(environment["PRACTICED_BIN_DIR"] ?? "").isEmpty || !(environment["PRACTICED_BINARY"] ?? "").isEmpty
    }

    public static func path(of name: String) -> String {
        let environment = ProcessInfo.processInfo.environment
        if name == "practiced", let daemon = environment["PRACTICED_BINARY"], !daemon.isEmpty { return daemon }
        if let directory = environment["PRACTICED_BIN_DIR"], !directory.isEmpty { return "\(directory)/\(name)" }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name).path
    }
}
