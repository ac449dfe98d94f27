import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeSupport

/// Writes the metrics every few seconds to a `.prom` file for node_exporter's textfile
/// collector, so that a fleet's Prometheus scrapes the kiosk without a new listening socket.
///
/// Each write goes to a temporary file in the same directory and is renamed over the old one:
/// the collector reads either the old file or the new one, never half of one. The temporary
/// name does not end in `.prom`, so the collector never reads it. The file is not fsynced: a
/// crash loses at most one interval of figures that are rewritten at the next start anyway.
/// The file is removed when the daemon stops, so that a stopped daemon's figures do not look
/// current (node_exporter would serve a stale file for ever).
final class MetricsTextfile: @unchecked Sendable {
    let path: String
    let intervalSeconds: Int
    private let render: @Sendable () -> String
    private let logger: Logger
    private let queue = DispatchQueue(label: "practiced.metrics-textfile", qos: .utility)
    private var timer: DispatchSourceTimer?
    /// The last failure logged (on `queue`): a missing directory is logged once, not every
    /// interval, and its recovery once.
    private var lastFailure: String?

    private var temporaryPath: String { FilePaths.join(FilePaths.parent(of: path), ".\(FilePaths.lastComponent(of: path)).\(getpid()).tmp") }

    init(path: String, intervalSeconds: Int, logger: Logger, render: @escaping @Sendable () -> String) {
        self.path = path
        self.intervalSeconds = intervalSeconds
        self.logger = logger
        self.render = render
    }

    deinit { timer?.cancel() }

    /// Writes at once, then every interval.
    func start() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: .seconds(intervalSeconds), leeway: .milliseconds(250))
        timer.setEventHandler { [weak self] in self?.writeNow() }
        timer.resume()
        self.timer = timer
    }

    /// Stops writing and removes the file (and a temporary one a failed write left).
    func stop() {
        queue.sync {
            timer?.cancel()
            timer = nil
            unlink(path)
            unlink(temporaryPath)
        }
    }

    /// One write (on `queue`); failures are logged once per kind and retried next interval.
    func writeNow() {
        do throws(SystemError) {
            try write(render())
            if lastFailure != nil {
                logger.notice("metrics textfile \(path) written again")
                lastFailure = nil
            }
        } catch {
            let message = "\(error)"
            if message != lastFailure {
                logger.warning("metrics textfile not written (retried every \(intervalSeconds) s): \(message)")
                lastFailure = message
            }
        }
    }

    private func write(_ text: String) throws(SystemError) {
        let temporary = temporaryPath
        // O_EXCL|O_NOFOLLOW: a link planted under the temporary name is not followed; one left
        // by a crashed write of this same process id is removed and the open tried once more.
        var fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        if fd < 0, errno == EEXIST {
            unlink(temporary)
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { throw Errno.current.failure("creating \(temporary)") }
        var text = text
        let written = text.withUTF8 { SystemCall.writeAll(fd, UnsafeRawBufferPointer($0)) }
        close(fd)
        if case .failure(let failure) = written {
            unlink(temporary)
            throw failure.failure("writing \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            let failure = Errno.current
            unlink(temporary)
            throw failure.failure("renaming \(temporary) to \(path)")
        }
    }
}
