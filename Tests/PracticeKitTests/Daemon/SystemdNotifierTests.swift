import Foundation
import Glibc
@testable import PracticeKit
import TestSupport
import XCTest

/// sd_notify(3) as the daemon sends it, to a datagram socket standing in for systemd's.
final class SystemdNotifierTests: XCTestCase {
    /// Every descriptor taken (clients waiting on an activated socket at a low limit take
    /// them all the moment accepting begins): READY=1 and WATCHDOG=1 still go out. Before,
    /// a socket was made per message, failed with EMFILE, and READY=1 never came
    /// (DaemonLifecycleTests, under ASan on a loaded machine).
    func testMessagesGoOutWhenEveryDescriptorIsTaken() throws {
        let path = NSTemporaryDirectory() + "notify-\(UUID().uuidString).sock"
        let listener = try NotifyListener(path: path)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path])
        XCTAssertTrue(notifier.isEnabled)

        var limit = rlimit()
        XCTAssertEqual(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit), 0)
        let saved = limit
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        limit.rlim_cur = rlim_t(open + 16)
        XCTAssertEqual(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit), 0)
        var taken: [Int32] = []
        defer {
            taken.forEach { close($0) }
            var restore = saved
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &restore)
        }
        while true {
            let fd = dup(0)
            if fd < 0 { break }
            taken.append(fd)
        }
        XCTAssertEqual(errno, EMFILE)
        XCTAssertTrue(notifier.send("READY=1\nSTATUS=serving"), "READY=1 with no descriptor left")
        notifier.watchdog()
        taken.forEach { close($0) }
        taken = []
        XCTAssertEqual(listener.next(timeout: 5), "READY=1\nSTATUS=serving")
        XCTAssertEqual(listener.next(timeout: 5), "WATCHDOG=1")
    }

    func testWithoutNotifySocketNothingIsSent() {
        let notifier = SystemdNotifier(environment: [:])
        XCTAssertFalse(notifier.isEnabled)
        XCTAssertFalse(notifier.send("READY=1"))
    }
}
