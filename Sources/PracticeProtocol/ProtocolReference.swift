import FoundationEssentials
import PracticeNet

/// The reference part of docs/protocol: every command with its arguments and result, every
/// event with its payload, rendered from ``ProtocolSchema`` (`practiced
/// --print-protocol-reference`; `docs/protocol/reference.md` is this output, checked for
/// drift with the schema). The prose around it is docs/protocol.md.
public enum ProtocolReference {
    public static var markdown: String {
        let schema = ProtocolSchema.document
        var out = """
            # `\(ControlProtocol.identifier)` reference

            For whoever writes a client. Generated from the daemon's types by `practiced --print-protocol-reference`;
            do not edit (the framing, errors and rules are in [../protocol.md](../protocol.md); the machine-readable
            form is [practiced-1.schema.json](practiced-1.schema.json)). Optional members of what the daemon writes
            are present as `null`; optional arguments may be left out.

            ## Commands

            """
        for command in ProtocolCatalog.commands {
            let entry = schema["$defs"]?["commands"]?[command.name] ?? .null
            out += "\n### `\(command.name)`\n\n\(command.summary)\n\n"
            out += table("Arguments", entry["args"] ?? .null, none: "none")
            out += table("Result", entry["result"] ?? .null, none: "an empty object")
        }
        out += "\n## Events\n"
        for topic in EventTopic.allCases {
            let events = ProtocolCatalog.events.filter { $0.topic == topic }
            guard !events.isEmpty else { continue }
            out += "\n### Topic `\(topic.rawValue)`\n"
            for event in events {
                let data = schema["$defs"]?["events"]?[event.name]?["properties"]?["data"] ?? .null
                out += "\n#### `\(event.name)`\n\n\(event.summary)\n\n"
                out += table("Data", data, none: "an empty object")
            }
        }
        return out
    }

    /// A member table for an object schema (nested objects flattened as `a.b`).
    private static func table(_ title: String, _ schema: JSONValue, none: String) -> String {
        var rows: [(String, String, Bool)] = []
        collect(schema, prefix: "", into: &rows)
        if rows.isEmpty {
            if let described = describe(schema), schema["properties"] == nil { return "\(title): \(described).\n\n" }
            return "\(title): \(none).\n\n"
        }
        var out = "\(title):\n\n| member | type | required |\n|---|---|---|\n"
        for (name, type, required) in rows { out += "| `\(name)` | \(type) | \(required ? "yes" : "no") |\n" }
        return out + "\n"
    }

    private static func collect(_ schema: JSONValue, prefix: String, into rows: inout [(String, String, Bool)]) {
        guard case .object(let properties)? = schema["properties"] else { return }
        let required = Set(schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        for (name, member) in properties {
            let path = prefix + name
            rows.append((path, describe(member) ?? "any", required.contains(name)))
            let inner = member["anyOf"]?.arrayValue?.first ?? member
            if inner["properties"] != nil { collect(inner, prefix: path + ".", into: &rows) }
            if let items = inner["items"], items["properties"] != nil { collect(items, prefix: path + "[].", into: &rows) }
        }
    }

    private static func describe(_ schema: JSONValue) -> String? {
        if let options = schema["anyOf"]?.arrayValue {
            return options.compactMap(describe).joined(separator: " or ")
        }
        if let values = schema["enum"]?.arrayValue {
            return values.compactMap(\.stringValue).map { "`\($0)`" }.joined(separator: ", ")
        }
        if let constant = schema["const"]?.stringValue { return "`\(constant)`" }
        if let types = schema["type"]?.arrayValue { return types.compactMap(\.stringValue).joined(separator: " or ") }
        guard let type = schema["type"]?.stringValue else { return schema.isObject ? "any" : nil }
        switch type {
        case "array": return "array of " + (schema["items"].flatMap(describe) ?? "any")
        case "object":
            if let values = schema["additionalProperties"], values.isObject { return "object of " + (describe(values) ?? "any") }
            return "object"
        default: return type
        }
    }
}
