import Foundation
import PracticeProtocol
import PracticeNet
import TestSupport
import XCTest

/// The typed protocol: its wire conventions, its argument errors, the schema generated from
/// it, and the committed copies of that schema and reference (drift fails here and in CI).
final class ProtocolSchemaTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func testTheCommittedSchemaIsTheGeneratedOne() throws {
        let committed = try String(contentsOf: Self.root.appendingPathComponent("docs/protocol/practiced-1.schema.json"), encoding: .utf8)
        XCTAssertTrue(committed == ProtocolSchema.text,
                      "docs/protocol/practiced-1.schema.json is stale: regenerate it with `practiced --print-schema > docs/protocol/practiced-1.schema.json`")
        // It is JSON any tool reads.
        XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(committed.utf8)))
    }

    func testTheCommittedReferenceIsTheGeneratedOne() throws {
        let committed = try String(contentsOf: Self.root.appendingPathComponent("docs/protocol/reference.md"), encoding: .utf8)
        XCTAssertTrue(committed == ProtocolReference.markdown,
                      "docs/protocol/reference.md is stale: regenerate it with `practiced --print-protocol-reference > docs/protocol/reference.md`")
    }

    func testTheUIsProtocolModuleIsTheGeneratedOne() throws {
        let committed = try String(contentsOf: Self.root.appendingPathComponent("samples/kiosk-ui/js/protocol.js"), encoding: .utf8)
        XCTAssertTrue(committed == ProtocolJavaScriptModule.text,
                      "samples/kiosk-ui/js/protocol.js is stale: regenerate it with `practiced --print-protocol-module > samples/kiosk-ui/js/protocol.js`")
        XCTAssertTrue(committed.contains("  SessionStart: \"session.start\","))
        XCTAssertTrue(committed.contains("  SignInChanged: \"signin.changed\", // cue"))
    }

    /// The UI sends commands and switches on events by the module's names only: a command or
    /// an event spelt by hand is one the drift test above cannot see.
    func testTheUISpellsNoCommandOrEventByHand() throws {
        let names = Set(ProtocolCatalog.commandNames + ProtocolCatalog.events.map { $0.name })
        let folder = Self.root.appendingPathComponent("samples/kiosk-ui/js")
        var spelt: [String] = []
        for case let file as String in FileManager.default.enumerator(atPath: folder.path) ?? NSEnumerator()
        where file.hasSuffix(".js") && file != "protocol.js" {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /(?:request|act)\(\s*"([a-z_.]+)"|case\s+"([a-z_.]+)"\s*:/) {
                let name = String(match.1 ?? match.2 ?? "")
                if names.contains(name) { spelt.append("\(file): \"\(name)\"") }
            }
        }
        XCTAssertEqual(spelt, [], "wire names spelt by hand in the UI (use Command.X / Event.X from protocol.js)")
    }

    /// The tests send the protocol's commands by their types (`request(Command.Status.self)`):
    /// a name spelt by hand keeps compiling when the daemon renames the command. Strings stay
    /// for names the protocol does not have (an unknown or hostile command).
    func testTheTestsSendCommandsByType() throws {
        let names = Set(ProtocolCatalog.commandNames)
        let folder = Self.root.appendingPathComponent("Tests")
        var spelt: [String] = []
        for case let file as String in FileManager.default.enumerator(atPath: folder.path) ?? NSEnumerator() where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /(?:\.request|\bfailure)\("([a-z_.]+)"/) where names.contains(String(match.1)) {
                spelt.append("\(file): \"\(match.1)\"")
            }
        }
        XCTAssertEqual(spelt, [], "commands spelt by hand in the tests (use Command.X.self)")
    }

    /// The tests wait for the protocol's events by their types too (`wait(for: Event.X.self)`).
    func testTheTestsWaitForEventsByType() throws {
        let names = Set(ProtocolCatalog.events.map { $0.name })
        let folder = Self.root.appendingPathComponent("Tests")
        var spelt: [String] = []
        for case let file as String in FileManager.default.enumerator(atPath: folder.path) ?? NSEnumerator() where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /(?:\bwait\(for: |\bwaitForEvent\(|\ball\(|\bposition\(of: )"([a-z_.]+)"/) where names.contains(String(match.1)) {
                spelt.append("\(file): \"\(match.1)\"")
            }
        }
        XCTAssertEqual(spelt, [], "events spelt by hand in the tests' waits (use Event.X.self)")
    }

    func testTheCatalogNamesEveryCommandOnce() {
        let names = ProtocolCatalog.commandNames
        XCTAssertEqual(Set(names).count, names.count, "a command is listed twice")
        // Who answers each: the server its three, a stage list only on the session's.
        XCTAssertEqual(Set(ProtocolCatalog.commands.filter { $0.route == .server }.map { $0.name }), ["hello", "subscribe", "unsubscribe"])
        for command in ProtocolCatalog.commands where command.stages != nil { XCTAssertEqual(command.route, .session, command.name) }
        let events = ProtocolCatalog.events.map { $0.name }
        XCTAssertEqual(Set(events).count, events.count, "an event is listed twice")
        XCTAssertEqual(ProtocolCatalog.subscribableTopics, [.level, .speech, .playback, .device, .session, .daemon, .cue, .visit])
    }

    /// The daemon's table is checked against the catalog at start: a table missing a route's
    /// commands, or holding one the catalog does not route there, is told apart.
    func testACommandTableIsCheckedAgainstTheCatalog() {
        let table = CommandTable()
        let levels = Awaitable([Double?]())
        table.register(Command.VolumeSet.self) { args, reply in
            levels.update { $0.append(args.level) }
            reply.fail(ControlError(.internalError, "not kept"))
        }
        let (missing, extra) = table.mismatches(routes: [.daemon])
        XCTAssertEqual(missing, ["config.get", "devices", "level.watch", "metrics", "ping", "play", "playback.rate", "playback.stop", "spool.list", "status", "visit.end", "visit.touch", "volume.get"])
        XCTAssertEqual(extra, [])
        XCTAssertEqual(table.mismatches(routes: [.cue]).extra, ["volume.set"], "volume.set is not cue practice's")
        // Typed: the table reads the arguments, and names the bad one before the handler runs.
        let answers = Awaitable([Result<JSONValue, ControlError>]())
        XCTAssertTrue(table.run(ControlRequest(id: 1, command: "volume.set", args: ["level": .double(0.5)])) { result in answers.update { $0.append(result) } })
        XCTAssertTrue(table.run(ControlRequest(id: 2, command: "volume.set", args: ["level": "loud"])) { result in answers.update { $0.append(result) } })
        XCTAssertEqual(levels.value, [0.5])
        XCTAssertEqual(answers.value.map { result -> ControlErrorCode? in if case .failure(let error) = result { error.code } else { nil } }, [.internalError, .badArguments])
        XCTAssertFalse(table.run(ControlRequest(id: 3, command: "session.start")) { _ in XCTFail("no handler ran") })
    }

    /// The flow a daemon does not run: its commands are refused in the table (the one flow
    /// the daemon built registers the refusal), with the error it names, before their
    /// arguments are read and without opening anything for them.
    func testAnotherFlowsCommandsAreRefusedByTheTable() throws {
        let table = CommandTable()
        table.refuse(route: .cue) { name in ControlError(.invalidState, "\(name) needs another backend") }
        XCTAssertEqual(table.mismatches(routes: [.cue]).missing, [], "every cue command is answered")
        let record = try XCTUnwrap(table.entry(for: Command.CueRecord.name))
        XCTAssertTrue(record.refuses)
        XCTAssertTrue(record.command.needsDevices, "a command that would open the devices, were it run")
        let answers = Awaitable([Result<JSONValue, ControlError>]())
        XCTAssertTrue(table.run(ControlRequest(id: 1, command: Command.CueRecord.name, args: ["cue_id": "not a number"])) { result in
            answers.update { $0.append(result) }
        })
        guard case .failure(let error)? = answers.value.first else { return XCTFail("cue.record was not refused: \(answers.value)") }
        XCTAssertEqual(error.code, .invalidState, "refused before its arguments are read")
        XCTAssertEqual(error.message, "cue.record needs another backend")
        XCTAssertNil(table.entry(for: Command.SessionStart.name), "the other routes are left to their flow")
    }

    func testEveryCommandAndEventHasASchemaAndASummary() throws {
        let schema = ProtocolSchema.document
        for command in ProtocolCatalog.commands {
            let entry = try XCTUnwrap(schema["$defs"]?["commands"]?[command.name], command.name)
            XCTAssertEqual(entry["args"]?["type"], "object", command.name)
            XCTAssertNotNil(entry["result"]?["type"], command.name)
            XCTAssertFalse(command.summary.isEmpty)
        }
        for event in ProtocolCatalog.events {
            let data = try XCTUnwrap(schema["$defs"]?["events"]?[event.name]?["properties"]?["data"], event.name)
            XCTAssertEqual(data["type"], "object", event.name)
            XCTAssertFalse(event.summary.isEmpty)
        }
    }

    func testTheEncoderWritesSnakeCaseInOrderWithNulls() {
        let event = Event.TurnPending(turnId: "t1", reason: .undelivered, message: "503")
        XCTAssertEqual(ProtocolEncoder.encode(event).serialized(.compact),
                       #"{"turn_id":"t1","reason":"undelivered","message":"503","attempts":null}"#)
        var finished = Event.ReplyFinished.interrupted(turnId: nil, greeting: true)
        finished.serverTimings = ["stt_ms": 1.5, "LLM": 2]
        let json = ProtocolEncoder.encode(finished)
        XCTAssertEqual(json["server_timings"], ["LLM": .double(2), "stt_ms": .double(1.5)], "dictionary keys are data: kept as they are")
        XCTAssertEqual(json["first_audio_to_sound_ms"], .null)
        XCTAssertEqual(ProtocolEncoder.encode(Event.SpeechStarted()), .object([]), "an event without members has an empty object")
    }

    func testArgumentsAreReadWithMessagesThatNameTheMember() throws {
        func failure<C: ControlCommand>(_ command: C.Type, _ args: JSONValue) -> String? {
            do {
                _ = try ControlRequest(id: 1, command: C.name, args: args).arguments(command)
                return nil
            } catch {
                return error.code == .badArguments ? error.message : "wrong code \(error.code)"
            }
        }
        XCTAssertEqual(failure(Command.SessionStart.self, ["mode": "chat"]), "'mode' must be conversation or review")
        XCTAssertEqual(failure(Command.SessionStart.self, ["topic_id": 7]), "'topic_id' must be a string")
        XCTAssertEqual(failure(Command.Profile.self, ["action": "delete"]), "'action' must be get, evaluate or learning_goal")
        XCTAssertEqual(failure(Command.CorrectionAsk.self, ["message": "why?"]), "'segment_id' is required")
        XCTAssertEqual(failure(Command.CorrectionAsk.self, ["segment_id": .double(1.5), "message": "why?"]), "'segment_id' must be a whole number")
        XCTAssertEqual(failure(Command.LevelWatch.self, ["enabled": "yes"]), "'enabled' must be true or false")
        XCTAssertEqual(failure(Command.Subscribe.self, ["topics": ["session", 3]]), "'topics[1]' must be level, speech, playback, device, session, daemon, cue, visit or state")
        XCTAssertEqual(failure(Command.Say.self, ["text": .null]), "'text' is required")
        // Null is absent; unknown members are ignored.
        XCTAssertNil(failure(Command.SessionStart.self, ["mode": .null, "topic_id": "travel", "future_option": true]))
        let args = try ControlRequest(id: 1, command: "profile", args: ["action": "learning_goal", "learning_goal": "IELTS"]).arguments(Command.Profile.self)
        XCTAssertEqual(args.action, .learningGoal)
        XCTAssertEqual(args.learningGoal, "IELTS")
    }

    func testTheValidatorRefusesWhatBreaksAnEventsSchema() {
        func line(_ data: JSONValue, event: String = "turn.spooled", topic: String = "session") -> JSONValue {
            ["type": "event", "seq": 3, "topic": .string(topic), "event": .string(event), "mono_ns": 12, "data": data]
        }
        XCTAssertEqual(ProtocolConformance.problems(line(["turn_id": "t", "bytes": 44]), answering: nil), [])
        XCTAssertFalse(ProtocolConformance.problems(line(["turn_id": "t"]), answering: nil).isEmpty, "a member missing")
        XCTAssertFalse(ProtocolConformance.problems(line(["turn_id": "t", "bytes": "44"]), answering: nil).isEmpty, "a member of the wrong type")
        XCTAssertFalse(ProtocolConformance.problems(line(["turn_id": "t", "bytes": 44, "extra": 1]), answering: nil).isEmpty, "an undocumented member")
        XCTAssertFalse(ProtocolConformance.problems(line(["turn_id": "t", "bytes": 44], topic: "device"), answering: nil).isEmpty, "the wrong topic")
        XCTAssertFalse(ProtocolConformance.problems(line([:], event: "turn.exploded"), answering: nil).isEmpty, "an undocumented event")
        // Replies: the envelope, and the result against the command that was sent.
        let reply: JSONValue = ["type": "reply", "id": 4, "ok": true, "result": ["pong": true, "uptime_s": .double(1.5)]]
        XCTAssertEqual(ProtocolConformance.problems(reply, answering: "ping"), [])
        XCTAssertFalse(ProtocolConformance.problems(reply, answering: "status").isEmpty)
        let error: JSONValue = ["type": "reply", "id": 4, "ok": false, "error": ["code": "no_such_code", "message": "", "retryable": false]]
        XCTAssertFalse(ProtocolConformance.problems(error, answering: nil).isEmpty)
    }

    /// A state goes out and comes back the same, and its schema accepts it.
    func testASessionStateRoundTripsThroughTheWire() throws {
        let state = SessionState(stage: .uploading, sessionId: "s1", mode: .conversation, topicId: nil, turns: 2,
                                 spool: SpoolState(turns: 1, bytes: 48_044, durable: true, error: nil), delivering: "t1")
        let json = ProtocolEncoder.encode(state)
        XCTAssertEqual(json["topic_id"], .null)
        XCTAssertEqual(json["spool"]?["bytes"], 48_044)
        XCTAssertEqual(try ProtocolDecoder.decode(SessionState.self, from: json), state)
        // The offline cache keeps lists (a top-level array) and backend models the same way.
        let topics: JSONValue = [["id": "travel", "label_en": "Travel", "label_zh": "旅行", "prompt_hint": "a trip"]]
        XCTAssertEqual(ProtocolEncoder.encode(try ProtocolDecoder.decode([Topic].self, from: topics)), topics)
        let schema = try XCTUnwrap(ProtocolConformance.validator.resolve("#/$defs/commands/session.get/result"))
        XCTAssertEqual(ProtocolConformance.validator.problems(json, against: schema), [])
    }
}
