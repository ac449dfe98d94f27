import FoundationEssentials
import Glibc
import PracticeNet

/// The JSON Schema of everything `practiced/1` carries, built from ``ProtocolCatalog``'s
/// types (``SchemaBuilder``): `practiced --print-schema` prints it, and
/// `docs/protocol/practiced-1.schema.json` is this output, checked for drift in CI.
///
/// The root validates any line the daemon writes: the hello, a reply, an event. A reply
/// does not name its command; a client that knows what it asked validates the result
/// against `#/$defs/commands/<name>/result`. `#/$defs/request` describes what a client
/// sends, with each command's arguments at `#/$defs/commands/<name>/args`.
public enum ProtocolSchema {
    public static var document: JSONValue {
        let events = ProtocolCatalog.events.map { event in (event.name, eventSchema(event)) }
        let commands = ProtocolCatalog.commands.map { command in (command.name, commandSchema(command)) }
        return [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://practiced.invalid/schema/practiced-1.json",
            "title": .string("\(ControlProtocol.identifier): the control socket's protocol"),
            "description": .string("One JSON object per LF-terminated line, at most \(ControlProtocol.maximumLineBytes) bytes. "
                + "Generated from the daemon's Swift types by `practiced --print-schema`; do not edit."),
            "oneOf": [["$ref": "#/$defs/hello"], ["$ref": "#/$defs/reply"], ["$ref": "#/$defs/event"]],
            "$defs": [
                "hello": SchemaBuilder.schema(for: ServerHello.self, optionalsPresent: true).setting("properties.type", ["const": "hello"]),
                "request": request,
                "reply": reply,
                "error": error,
                "event": ["oneOf": .array(events.map { ["$ref": .string("#/$defs/events/\($0.0)")] })],
                "events": .object(events),
                "commands": .object(commands),
            ],
        ]
    }

    /// The schema as `--print-schema` writes it: pretty, members in a fixed order, a final LF.
    public static var text: String { document.serialized(.pretty) + "\n" }

    private static var request: JSONValue {
        [
            "type": "object",
            "properties": [
                "id": ["type": ["string", "integer"], "description": "Echoed in the reply."],
                "command": ["type": "string", "enum": .array(ProtocolCatalog.commandNames.map { .string($0) })],
                "args": ["type": "object", "description": "The command's arguments: #/$defs/commands/<command>/args."],
            ],
            "required": ["id", "command"],
        ]
    }

    private static var reply: JSONValue {
        [
            "type": "object",
            "properties": [
                "type": ["const": "reply"],
                "id": ["type": ["string", "integer", "null"], "description": "The request's id; null when it could not be read."],
                "ok": ["type": "boolean"],
                "result": ["description": "When ok: the command's result, #/$defs/commands/<command>/result."],
                "error": ["$ref": "#/$defs/error"],
            ],
            "required": ["type", "id", "ok"],
            "additionalProperties": false,
            "oneOf": [
                ["properties": ["ok": ["const": true]], "required": ["result"]],
                ["properties": ["ok": ["const": false]], "required": ["error"]],
            ],
        ]
    }

    private static var error: JSONValue {
        [
            "type": "object",
            "properties": [
                "code": ["type": "string", "enum": .array(ControlErrorCode.wireValues.map { .string($0) })],
                "message": ["type": "string"],
                "retryable": ["type": "boolean"],
                "status": ["type": "integer", "description": "The backend's HTTP status, for backend_error."],
                "reason": ["type": "string", "description": "The backend's reason, for refused (its hint or code)."],
            ],
            "required": ["code", "message", "retryable"],
            "additionalProperties": false,
        ]
    }

    private static func eventSchema(_ event: any ProtocolEvent.Type) -> JSONValue {
        [
            "description": .string(event.summary),
            "type": "object",
            "properties": [
                "type": ["const": "event"],
                "seq": ["type": "integer", "description": "Counts every event the daemon published; a gap means events were missed."],
                "topic": ["const": .string(event.topic.rawValue)],
                "event": ["const": .string(event.name)],
                "mono_ns": ["type": "integer", "description": "CLOCK_MONOTONIC when published."],
                "data": dataSchema(event),
            ],
            "required": ["type", "seq", "topic", "event", "mono_ns", "data"],
            "additionalProperties": false,
        ]
    }

    static func dataSchema<E: ProtocolEvent>(_ event: E.Type) -> JSONValue { SchemaBuilder.schema(for: E.self, optionalsPresent: true) }

    private static func commandSchema<C: ControlCommand>(_ command: C.Type) -> JSONValue {
        [
            "description": .string(C.summary),
            "args": SchemaBuilder.schema(for: C.Arguments.self, optionalsPresent: false),
            "result": SchemaBuilder.schema(for: C.Result.self, optionalsPresent: true),
        ]
    }
}

extension JSONValue {
    /// A copy of an object with one more member.
    func adding(_ key: String, _ value: JSONValue) -> JSONValue {
        guard case .object(let members) = self else { return self }
        return .object(members + [(key, value)])
    }

    /// A copy with the member at a dotted path replaced (the path's objects must exist).
    func setting(_ path: String, _ value: JSONValue) -> JSONValue {
        guard case .object(var members) = self else { return self }
        let parts = path.split(separator: ".", maxSplits: 1).map(String.init)
        guard let index = members.firstIndex(where: { $0.0 == parts[0] }) else { return self }
        members[index].1 = parts.count == 1 ? value : members[index].1.setting(parts[1], value)
        return .object(members)
    }
}
