import AudioKernel
import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import XCTest

/// Checks every line a test's ``ControlClient`` reads from the daemon against the protocol's
/// schema (``ProtocolSchema``): the hello, each event with its payload, each reply, and
/// the result of each reply whose command the client sent. A line that breaks the
/// documented protocol fails the running test. Installed by the daemon harnesses.
public enum ProtocolConformance {
    public static let validator = SchemaValidator(ProtocolSchema.document)
    private static let counts = Locked((lines: 0, results: 0))

    /// Lines checked so far in this process, and results checked against their command.
    public static var checked: (lines: Int, results: Int) { counts.withLock { $0 } }

    public static func install() {
        ControlClient.inspector = { message, answering in
            let problems = problems(message, answering: answering)
            counts.withLock {
                $0.lines += 1
                if answering != nil { $0.results += 1 }
            }
            if !problems.isEmpty {
                XCTFail("the daemon wrote a line that breaks the practiced/1 schema:\n\(message.serialized(.compact).prefix(600))\n"
                        + problems.prefix(12).joined(separator: "\n"))
            }
        }
    }

    /// The schema's complaints about one line, and about its result when it answers `answering`.
    public static func problems(_ message: JSONValue, answering: String?) -> [String] {
        // Straight to the schema the line claims (the root's oneOf would try them all: a
        // test that reads 100,000 events should not spend its time here); a line that
        // claims none is checked against the root, which refuses it.
        let claimed: JSONValue?
        switch message["type"]?.stringValue {
        case "event": claimed = message["event"]?.stringValue.flatMap { validator.resolve("#/$defs/events/\($0)") }
        case "reply": claimed = validator.resolve("#/$defs/reply")
        case "hello": claimed = validator.resolve("#/$defs/hello")
        default: claimed = nil
        }
        var problems = validator.problems(message, against: claimed)
        if let answering, message["ok"] == .bool(true), let result = message["result"] {
            if let schema = validator.resolve("#/$defs/commands/\(answering)/result") {
                problems += validator.problems(result, against: schema, at: "$.result")
            } else {
                problems.append("no schema for the result of '\(answering)'")
            }
        }
        return problems
    }
}
