import AudioKernel
import Foundation
import PracticeKit
import XCTest

final class ConfigurationLoaderTests: XCTestCase {
    private func file(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "practiced-\(UUID().uuidString).conf"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testLayersOverrideInOrder() throws {
        let path = try file("""
            # comment
            backend.url = http://file.example:1
            audio.period_ms = 20
            user.name = "Ann Lee"
            socket.max_clients = 10
            """)
        let loader = ConfigurationLoader(environment: ["PRACTICED_CONFIG": path, "PRACTICED_SOCKET_MAX_CLIENTS": "12", "HOME": "/home/k",
                                                       "PRACTICED_AUDIO_PERIOD_MS": "15"])
        let result = try loader.load(arguments: ["--audio-period-ms=5", "--capture-device", "alsa:plughw:1,0"])
        let c = result.configuration
        XCTAssertEqual(result.file, path)
        XCTAssertEqual(c.backendURL.absoluteString, "http://file.example:1")
        XCTAssertEqual(c.userName, "Ann Lee", "quotes removed")
        XCTAssertEqual(c.maxClients, 12, "environment over file")
        XCTAssertEqual(c.periodMilliseconds, 5, "flag over environment")
        XCTAssertEqual(c.captureDevice, AudioDeviceURI(.alsa(pcm: "plughw:1,0")))
        XCTAssertEqual(c.stream(for: c.captureDevice).periodFrames, 120)
        XCTAssertEqual(c.recorder.detector.gateThreshold, 300)
    }

    /// `--state-dir` alone carries the spool with it (it stayed at /var/lib/practiced/spool,
    /// whose parent does not exist outside the package, and turns were kept in memory only).
    func testTheSpoolFollowsTheStateDirectoryUnlessSetItself() throws {
        let loader = ConfigurationLoader(environment: ["HOME": "/home/k", "PRACTICED_CONFIG": try file("# empty\n")])
        XCTAssertEqual(try loader.load(arguments: ["--state-dir", "/srv/kiosk/state"]).configuration.spoolDirectory, "/srv/kiosk/state/spool")
        let both = try loader.load(arguments: ["--spool-dir", "/srv/spool", "--state-dir", "/srv/kiosk/state"]).configuration
        XCTAssertEqual(both.spoolDirectory, "/srv/spool")
        XCTAssertEqual(ConfigurationLoader.describe(both).first { $0.key == "spool.dir" }?.value, "/srv/spool")
    }

    func testASpoolIsCreatedWithItsParents() throws {
        let root = NSTemporaryDirectory() + "practiced-spool-\(UUID().uuidString)"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: root) }
        let spool = try TurnSpool(directory: root + "/state/deeper/spool")
        try spool.store(SpooledTurn(sessionID: "s", mode: .conversation, duration: 1, bytes: 44), wav: [UInt8](repeating: 0, count: 44))
        XCTAssertEqual(spool.list().turns.count, 1)
    }

    func testDefaultsFollowTheEnvironment() {
        let user = DaemonConfiguration(environment: ["XDG_RUNTIME_DIR": "/run/user/1000", "XDG_STATE_HOME": "/home/k/.state", "HOME": "/home/k"])
        if getuid() != 0 {
            XCTAssertEqual(user.socketPath, "/run/user/1000/practiced/control.sock")
            XCTAssertEqual(user.stateDirectory, "/home/k/.state/practiced")
        }
        let service = DaemonConfiguration(environment: ["RUNTIME_DIRECTORY": "/run/practiced", "STATE_DIRECTORY": "/var/lib/practiced"])
        XCTAssertEqual(service.socketPath, "/run/practiced/control.sock")
        XCTAssertEqual(service.stateDirectory, "/var/lib/practiced")
        XCTAssertEqual(service.spoolDirectory, "/var/lib/practiced/spool")
    }

    func testErrorsNameKeyValueSourceAndAllowed() throws {
        let bad = try file("log.level = info\n\naudio.prebuffer_ms = -5\n")
        XCTAssertThrowsError(try ConfigurationLoader(environment: [:]).load(arguments: ["--config", bad])) { error in
            XCTAssertEqual("\(error)", "invalid audio.prebuffer_ms = '-5' (\(bad):3): allowed is a whole number of milliseconds from 0 to 2000")
        }
        XCTAssertThrowsError(try ConfigurationLoader(environment: ["PRACTICED_LOG_LEVEL": "loud"]).load(arguments: ["--config", "/dev/null"])) {
            XCTAssertTrue("\($0)".contains("environment PRACTICED_LOG_LEVEL"), "\($0)")
        }
        XCTAssertThrowsError(try ConfigurationLoader(environment: [:]).load(arguments: ["--config", try file("no equals sign\n")]))
        XCTAssertThrowsError(try ConfigurationLoader(environment: [:]).load(arguments: ["--socket-path", "relative.sock", "--config", "/dev/null"]))
        XCTAssertThrowsError(try ConfigurationLoader(environment: [:]).load(arguments: ["--config", "/nonexistent.conf"]))
    }

    /// A configuration path to a device that never ends (an operator's slip, or a hostile
    /// environment variable) is refused after 1 MiB, not read until memory runs out: the
    /// reader before (Foundation's `readToEnd`) never returned on /dev/zero.
    func testAConfigFileThatNeverEndsIsRefusedNotReadForEver() throws {
        XCTAssertThrowsError(try ConfigurationLoader(environment: [:]).load(arguments: ["--config", "/dev/zero"])) { error in
            XCTAssertTrue("\(error)".contains("a readable UTF-8 file of at most 1 MiB"), "\(error)")
            XCTAssertTrue("\(error)".contains("/dev/zero"), "\(error)")
        }
        // A FIFO with a writer is read like a file.
        let fifo = NSTemporaryDirectory() + "practiced-conf-\(UUID().uuidString)"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        defer { unlink(fifo) }
        let writer = Thread {
            let fd = open(fifo, O_WRONLY)
            let text = Array("log.level = debug\n".utf8)
            _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }
        writer.start()
        let result = try ConfigurationLoader(environment: [:]).load(arguments: ["--config", fifo])
        XCTAssertEqual("\(result.configuration.logLevel)", "debug")
    }

    func testGeneratedUserIDIsKept() throws {
        var configuration = DaemonConfiguration(environment: ["HOME": "/tmp"])
        configuration.stateDirectory = NSTemporaryDirectory() + "practiced-state-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: configuration.stateDirectory) }
        let first = try ConfigurationLoader.userID(for: configuration)
        XCTAssertEqual(first.count, 9)
        XCTAssertEqual(try ConfigurationLoader.userID(for: configuration), first, "generated once")
        configuration.userID = "given"
        XCTAssertEqual(try ConfigurationLoader.userID(for: configuration), "given")
    }

    func testEveryKeyAppearsInHelpAndDescription() {
        let described = ConfigurationLoader.describe(DaemonConfiguration(environment: [:])).map(\.key)
        XCTAssertEqual(described.count, 52)
        for key in described { XCTAssertTrue(ConfigurationLoader.usage.contains(key), key) }
    }
}
