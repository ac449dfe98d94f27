import Foundation

/// A filesystem that hangs, as a stalled NFS or USB mount does: a FUSE mount (fusepy, run
/// by Debian's python3) whose `stalled.wav` can be looked up (a regular file of 1 MiB) but
/// whose `open` never returns. ``release()`` kills the filesystem: the kernel then fails
/// every request still waiting on it (ENOTCONN), as a lazy unmount of a dead mount does.
public final class StalledMount: @unchecked Sendable {
    public let directory: URL
    public var mountPoint: String { directory.appendingPathComponent("mnt").path }
    public var stalledFile: String { mountPoint + "/stalled.wav" }
    private var process: ChildProcess?

    static let filesystem = """
    import errno, stat, sys, threading
    from fusepy import FUSE, Operations, FuseOSError
    class Stalled(Operations):
        def getattr(self, path, fh=None):
            if path == '/':
                return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2)
            if path == '/stalled.wav':
                return dict(st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=1 << 20)
            raise FuseOSError(errno.ENOENT)
        def readdir(self, path, fh):
            return ['.', '..', 'stalled.wav']
        def open(self, path, flags):
            threading.Event().wait()  # never answers
    FUSE(Stalled(), sys.argv[1], foreground=True, nothreads=False, allow_other=True)
    """

    public init() throws {
        directory = try makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.appendingPathComponent("mnt").path, withIntermediateDirectories: true)
        let script = directory.appendingPathComponent("stalled.py")
        try Data(Self.filesystem.utf8).write(to: script)
        process = try ChildProcess(executable: "/usr/bin/python3", arguments: [script.path, mountPoint], environment: ["PATH": "/usr/bin:/bin"],
                                   stderrPath: directory.appendingPathComponent("fuse.log").path)
        let deadline = Date().addingTimeInterval(10)
        while !isMounted {
            guard process?.isRunning == true, Date() < deadline else {
                let log = (try? String(contentsOf: directory.appendingPathComponent("fuse.log"), encoding: .utf8)) ?? ""
                throw ToolError(command: "fusepy mount at \(mountPoint)", status: -1, stderr: log)
            }
            usleep(20_000)  // polling the mount table, bounded by the deadline above
        }
    }

    /// Whether /proc/mounts lists the mount point.
    public var isMounted: Bool {
        ((try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? "").contains(" \(mountPoint) fuse")
    }

    /// The filesystem dies; every open still waiting on it fails.
    public func release() {
        process?.terminate(signal: SIGKILL)
        process = nil
        _ = try? runTool("umount", ["-l", mountPoint])
    }

    deinit {
        release()
        try? FileManager.default.removeItem(at: directory)
    }
}
