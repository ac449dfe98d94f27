import Foundation
import PracticeKit
import PracticeNet
import PracticeProtocol
import SimulatorKit

/// One line a chaos client sends, and what the daemon owes it: a reply carrying `id`
/// within `deadline` seconds, or (for a line over the limit) an error and then an orderly
/// end of the connection.
struct ChaosRequest {
    enum Expectation { case reply(id: JSONValue), fatal }

    var command: String
    var bytes: [UInt8]
    var expectation: Expectation
    var deadline: Double
    /// Whether the line is well formed (a reply may be `ok`); garbage must be refused.
    var wellFormed: Bool

    /// Commands that wait on the backend: a REST call of 30 s at most, retried with backoff
    /// for GETs and 503s (under a stalled backend, a minute or more is legitimate).
    static let backendCommands: Set<String> = ["session.start", "session.end", "review.get", "review.finish", "correction.ask",
                                               "topics", "profile", "spool.retry"]
    /// Everything else is answered by the daemon alone (`status` checks the backend for
    /// 3 s at most; `play` opens a file for 5 s at most).
    static func deadline(of command: String) -> Double { backendCommands.contains(command) ? 240 : 15 }

    /// The session commands and the daemon's own, weighted by how often a kiosk UI sends them.
    static let menu: [(String, Int)] = [
        ("session.start", 6), ("listen", 8), ("turn.start", 4), ("turn.stop", 4), ("turn.cancel", 2), ("say", 4),
        ("session.end", 4), ("review.get", 3), ("review.finish", 3), ("correction.ask", 2), ("session.close", 1),
        ("session.get", 3), ("spool.list", 3), ("spool.retry", 2), ("spool.discard", 1), ("topics", 2), ("profile", 2),
        ("ping", 3), ("status", 2), ("devices", 1), ("config.get", 1), ("metrics", 1), ("level.watch", 1),
        ("subscribe", 2), ("unsubscribe", 1), ("hello", 1), ("play", 4), ("playback.stop", 2), ("session.explode", 1),
    ]
    static let local = ["ping", "session.get", "spool.list", "config.get", "metrics", "devices", "status", "hello", "playback.stop"]

    /// Paths a client may name: playable sounds and every kind of file a hostile client would try.
    struct Paths {
        var playable: [String]
        var hostile: [String]
    }

    /// A random request. `stage` (the session's last seen stage) makes most draws commands
    /// the stage accepts, so that sessions get somewhere; the rest are refused by design.
    static func random(_ random: inout SeededRandom, id: Int, client: Int, stage: String, turnIDs: [String], paths: Paths) -> ChaosRequest {
        let draw = random.next() % 100
        if draw < 6 { return garbage(&random, id: id) }
        var command = pick(menu, &random)
        if draw < 60, let current = SessionStage(rawValue: stage) {
            // Aimed draws leave out what ends a session or a turn from every stage: the
            // plain draws send those often enough, and sessions should get somewhere.
            let accepted = menu.filter { !["session.close", "spool.discard"].contains($0.0) && (ProtocolCatalog.command(named: $0.0)?.stages.map { $0.contains(current) } ?? false) }
            if !accepted.isEmpty { command = pick(accepted, &random) }
        }
        let malformed = draw >= 90
        let args = malformed ? malformedArgs(&random) : validArgs(command, &random, turnIDs: turnIDs, paths: paths)
        let requestID: JSONValue = random.next() % 3 == 0 ? .string("c\(client)-\(id)") : .int(id)
        let line: JSONValue = ["id": requestID, "command": .string(command), "args": args]
        return ChaosRequest(command: command, bytes: line.bytes(.compact) + [0x0A], expectation: .reply(id: requestID),
                            deadline: deadline(of: command), wellFormed: true)
    }

    static func pick(_ weighted: [(String, Int)], _ random: inout SeededRandom) -> String {
        var n = Int(random.next() % UInt64(weighted.reduce(0) { $0 + $1.1 }))
        for (name, weight) in weighted {
            if n < weight { return name }
            n -= weight
        }
        return weighted[0].0
    }

    static func element<T>(_ list: [T], _ random: inout SeededRandom) -> T { list[Int(random.next() % UInt64(list.count))] }

    static func validArgs(_ command: String, _ random: inout SeededRandom, turnIDs: [String], paths: Paths) -> JSONValue {
        switch command {
        case "session.start":
            return random.next() % 5 == 0 ? ["mode": "review"] : ["topic_id": .string(element(["travel", "daily_life", "work", "no-such-topic"], &random))]
        case "say":
            return ["text": .string(element(["I would like to book a room.", "Can you repeat that?", "Yesterday I go to the market.", "  ", "ok"], &random))]
        case "correction.ask":
            return ["segment_id": .int(Int(random.next() % 60)), "message": .string(element(["Why is it wrong?", "Explain, please."], &random))]
        case "spool.retry", "spool.discard":
            let id = turnIDs.isEmpty || random.next() % 4 == 0 ? "no-such-turn" : element(turnIDs, &random)
            return ["turn_id": .string(id)]
        case "profile":
            let action = element(["get", "get", "evaluate", "learning_goal"], &random)
            return action == "learning_goal" ? ["action": "learning_goal", "learning_goal": "Speak at work"] : ["action": .string(action)]
        case "level.watch":
            return ["enabled": .bool(random.next() % 2 == 0)]
        case "subscribe":
            return ["topics": .array(["session", "playback", "device", "level"].filter { _ in random.next() % 2 == 0 }.map { .string($0) })]
        case "play":
            let path = random.next() % 3 == 0 ? element(paths.playable, &random) : element(paths.hostile, &random)
            return ["path": .string(path)]
        default:
            return [:]
        }
    }

    /// Arguments of the wrong type, size or sign, under the names commands read.
    static func malformedArgs(_ random: inout SeededRandom) -> JSONValue {
        let key = element(["topic_id", "mode", "text", "segment_id", "message", "turn_id", "path", "topics", "enabled", "action", "learning_goal"], &random)
        let value: JSONValue = element([
            .int(-1), .int(Int.max), .int(Int.min), .double(1e308), .double(-0.0), .string(""), .string(String(repeating: "é", count: 20_000)),
            .string("../../../../etc/shadow"), .string("/dev/zero"), .string("\u{0}"), .bool(true), .null, .array([]),
            .array([.int(1), .null]), .object([("a", .object([("b", .array([]))]))]),
        ], &random)
        return .object([(key, value)])
    }

    /// A line that is not a valid request: each must be refused with an error, the id
    /// carried when it could be read.
    static func garbage(_ random: inout SeededRandom, id: Int) -> ChaosRequest {
        let deep = String(repeating: "[", count: 30_000) + String(repeating: "]", count: 30_000)
        let cases: [(String, JSONValue)] = [
            ("not json", .null), ("[1,2,3]", .null), ("{\"id\":{\"a\":1},\"command\":\"ping\"}", .null), ("{\"id\":\(id)}", .int(id)),
            ("{\"id\":\(id),\"command\":\"\"}", .int(id)), ("{\"id\":\(id),\"command\":\"ping\",\"args\":[]}", .int(id)),
            ("{\"id\":\(id),\"command\":\"ping\",\"args\":\(deep)}", .null), ("{\"id\":1e999,\"command\":\"ping\"}", .null),
            ("{\"id\":\(id),\"command\":42}", .int(id)), ("\"\\ud800\"", .null), ("{", .null), (deep, .null),
        ]
        if random.next() % 8 == 0 {
            // Bytes that are not UTF-8, and a line over the 64 KiB limit.
            if random.next() % 2 == 0 {
                return ChaosRequest(command: "garbage", bytes: [0xFF, 0xFE, 0xC0, 0x80, 0x0A], expectation: .reply(id: .null), deadline: 15, wellFormed: false)
            }
            return ChaosRequest(command: "line_too_long", bytes: [UInt8](repeating: 0x7B, count: 70_000) + [0x0A], expectation: .fatal,
                                deadline: 15, wellFormed: false)
        }
        let (text, expected) = element(cases, &random)
        return ChaosRequest(command: "garbage", bytes: Array(text.utf8) + [0x0A], expectation: .reply(id: expected), deadline: 15, wellFormed: false)
    }
}
