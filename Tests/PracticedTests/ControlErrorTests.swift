import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport
import XCTest

/// Every error code of practiced/1, each produced by a real bad input on the real socket,
/// and after each the daemon still serves another client.
final class ControlErrorTests: XCTestCase {
    private var daemon: DaemonHarness!

    override func setUpWithError() throws { daemon = try DaemonHarness() }
    override func tearDown() { daemon = nil }

    /// The daemon still answers a fresh client.
    private func assertStillServing(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try daemon.client().request(Command.Ping.self)["pong"], .bool(true), file: file, line: line)
    }

    private func rawReply(_ client: ControlClient) throws -> JSONValue { try client.readMessage(timeout: 10) }

    func testMalformedJSONGarbageAndInvalidUTF8() throws {
        let client = try daemon.client()
        try client.send(Array("{{{ not json\n".utf8))
        var reply = try rawReply(client)
        XCTAssertEqual(reply["ok"], .bool(false))
        XCTAssertEqual(reply["id"], .null)
        XCTAssertEqual(reply["error"]?["code"], "malformed_json")
        XCTAssertEqual(reply["error"]?["retryable"], .bool(false))

        try client.send([0xFF, 0xFE, 0x7B, 0x7D, 0x0A])  // invalid UTF-8 around "{}"
        reply = try rawReply(client)
        XCTAssertEqual(reply["error"]?["code"], "malformed_json")
        XCTAssertTrue(reply["error"]?["message"]?.stringValue?.contains("UTF-8") ?? false)

        try client.send(Array("[1, 2]\n\"text\"\n".utf8))
        XCTAssertEqual(try rawReply(client)["error"]?["code"], "malformed_json")
        XCTAssertEqual(try rawReply(client)["error"]?["code"], "malformed_json")
        // The same connection goes on working.
        XCTAssertEqual(try client.request(Command.Ping.self)["pong"], .bool(true))
        assertStillServing()
    }

    func testLineTooLongClosesTheConnection() throws {
        let client = try daemon.client()
        try? client.send([UInt8](repeating: 0x61, count: 1 << 20) + [0x0A])  // the daemon may close before all is sent
        let reply = try rawReply(client)
        XCTAssertEqual(reply["error"]?["code"], "line_too_long")
        XCTAssertThrowsError(try client.readLine(timeout: 5)) {
            XCTAssertEqual($0 as? ControlClient.Failure, .protocolError("the daemon closed the connection"))
        }
        assertStillServing()
    }

    func testUnknownCommandBadArgumentsAndIDs() throws {
        let client = try daemon.client()
        XCTAssertEqual(client.failure("make.coffee")?.code, .unknownCommand)
        XCTAssertEqual(client.failure(Command.Play.self)?.code, .badArguments)
        XCTAssertEqual(client.failure(Command.Play.self, ["path": 5])?.code, .badArguments)
        XCTAssertEqual(client.failure(Command.Play.self, ["path": "relative.wav"])?.code, .badArguments)
        XCTAssertEqual(client.failure(Command.Subscribe.self, ["topics": ["weather"]])?.code, .badArguments)
        // `state` is a topic (the snapshot's) but not one to follow: refused, with the ones that are.
        let state = client.failure(Command.Subscribe.self, ["topics": ["level", "state"]])
        XCTAssertEqual(state?.code, .badArguments)
        XCTAssertTrue(state?.message.contains("cue, daemon, device, level, playback, session, speech") ?? false, "\(String(describing: state))")
        XCTAssertEqual(client.failure(Command.Subscribe.self, ["topics": "level"])?.code, .badArguments)
        XCTAssertEqual(client.failure(Command.LevelWatch.self, ["enabled": "yes"])?.code, .badArguments)
        try client.send(Array(#"{"id": [1], "command": "ping"}"#.utf8) + [0x0A])
        XCTAssertEqual(try rawReply(client)["error"]?["code"], "bad_arguments")
        try client.send(Array(#"{"id": "a7", "args": {}}"#.utf8) + [0x0A])
        let reply = try rawReply(client)
        XCTAssertEqual(reply["id"], "a7", "the id is echoed even when the request is bad")
        XCTAssertEqual(reply["error"]?["code"], "bad_arguments")
        assertStillServing()
    }

    func testHelloRulesInvalidStateAndUnsupportedProtocol() throws {
        let late = try daemon.client()
        _ = try late.request(Command.Ping.self)
        XCTAssertEqual(late.failure(Command.Hello.self, ["protocol": "practiced/1"])?.code, .invalidState, "hello comes first or not at all")

        let future = try daemon.client()
        XCTAssertEqual(future.failure(Command.Hello.self, ["protocol": "practiced/2"])?.code, .unsupportedProtocol)
        XCTAssertThrowsError(try future.readLine(timeout: 5), "the connection is closed after an unsupported version")
        assertStillServing()
    }

    func testFileErrorAndDeviceError() throws {
        let client = try daemon.client()
        // Outside play.directories a missing file is not told apart from a stranger's file.
        XCTAssertEqual(client.failure(Command.Play.self, ["path": "/nonexistent/clip.wav"])?.code, .permissionDenied)
        XCTAssertEqual(client.failure(Command.Play.self, ["path": .string("\(daemon.directory)/state/sounds/missing.wav")])?.code, .fileError)
        let notWAV = "\(daemon.directory)/not.wav"
        _ = FileManager.default.createFile(atPath: notWAV, contents: Data("hello".utf8))
        XCTAssertEqual(client.failure(Command.Play.self, ["path": .string(notWAV)])?.code, .fileError)

        // A speaker that cannot open: play is a retryable device error; the rest works.
        let broken = try DaemonHarness(arguments: ["--playback-device", "alsa:no_such_pcm_for_tests"])
        let other = try broken.client()
        let error = try XCTUnwrap(other.failure(Command.Play.self, ["path": .string("\(SimulatorHarness.samplesDirectory)/reply-1.wav")]))
        XCTAssertEqual(error.code, .deviceError)
        XCTAssertTrue(error.retryable)
        let playback = try other.request(Command.Status.self)["devices"]?["playback"]
        XCTAssertEqual(playback?["state"], "failed")
        XCTAssertTrue(playback?["error"]?.stringValue?.contains("no_such_pcm_for_tests") ?? false, "the failure's text, in its own member: \(String(describing: playback))")
        XCTAssertTrue(broken.log.contains("playback device alsa:no_such_pcm_for_tests"), "logged")
    }

    func testBackendUnavailableWithoutACache() throws {
        // The default backend of the harness is a closed port, and the state is fresh.
        let error = try XCTUnwrap(try daemon.client().failure(Command.Topics.self))
        XCTAssertEqual(error.code, .backendUnavailable)
        XCTAssertTrue(error.retryable)
        assertStillServing()
    }

    func testHalfALineThenAHangUpAndAFloodOfRequests() throws {
        do {
            let half = try daemon.client()
            try half.send(Array(#"{"id": 1, "comm"#.utf8))
        }  // closed here, in the middle of a line
        XCTAssertTrue(daemon.waitForLog("hung up in the middle of a line"), daemon.log)

        let flood = try daemon.client()
        let count = 3_000
        var burst: [UInt8] = []
        for id in 0..<count { burst += Array(#"{"id": \#(id), "command": "ping"}"#.utf8) + [0x0A] }
        try flood.send(burst)
        for id in 0..<count {
            let reply = try rawReply(flood)
            XCTAssertEqual(reply["id"], .int(id))
            guard reply["ok"] == .bool(true) else { return XCTFail("reply \(id): \(reply.serialized(.compact))") }
        }
        assertStillServing()
    }

    func testPermissionDeniedForAnotherUser() throws {
        // Open the file mode, so that only the daemon's SO_PEERCRED check stands in the way.
        XCTAssertEqual(chmod(daemon.socketPath, 0o666), 0)
        chmod("\(daemon.directory)/run", 0o755)
        let run = try DaemonHarness.practicectl(["ping"], socket: daemon.socketPath, asUser: "65534")
        XCTAssertEqual(run.status, 77, run.stderr)
        XCTAssertTrue(run.stderr.contains("permission denied"), run.stderr)
        XCTAssertTrue(daemon.log.contains("uid 65534 is not allowed"), "refusals are logged with pid and uid")
        assertStillServing()
    }
}

/// The socket group: its members may connect, through the file mode and the peer check.
final class SocketGroupTests: XCTestCase {
    func testAMemberOfTheSocketGroupMayConnect() throws {
        let daemon = try DaemonHarness(arguments: ["--socket-group", "nogroup"])
        var info = stat()
        XCTAssertEqual(stat(daemon.socketPath, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o660)
        XCTAssertEqual(info.st_gid, PeerCredentials.groupID("nogroup"))
        let run = try DaemonHarness.practicectl(["ping"], socket: daemon.socketPath, asUser: "65534")
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.hasPrefix("pong"))
    }
}
