import PracticeKit
import PracticeNet

/// Validates JSON against a JSON Schema, for the subset the protocol's schema uses:
/// `$ref` (within the document), `type`, `enum`, `const`, `properties`, `required`,
/// `additionalProperties`, `items`, `oneOf`, `anyOf`. Anything else in a schema is
/// ignored, as a validator ignores unknown keywords.
public struct SchemaValidator: Sendable {
    public let root: JSONValue

    public init(_ root: JSONValue) { self.root = root }

    /// The problems found, each with the path where it is; empty when the value is valid.
    public func problems(_ value: JSONValue, against schema: JSONValue? = nil, at path: String = "$") -> [String] {
        var found: [String] = []
        check(value, schema ?? root, path, &found)
        return found
    }

    /// The schema at a `#/a/b` reference.
    public func resolve(_ reference: String) -> JSONValue? {
        guard reference.hasPrefix("#") else { return nil }
        var node: JSONValue? = root
        for part in reference.dropFirst().split(separator: "/") {
            let key = part.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            node = node?[key]
        }
        return node
    }

    private func check(_ value: JSONValue, _ schema: JSONValue, _ path: String, _ found: inout [String]) {
        if let reference = schema["$ref"]?.stringValue {
            guard let target = resolve(reference) else { return found.append("\(path): unresolvable $ref \(reference)") }
            check(value, target, path, &found)
        }
        if let types = schema["type"] {
            let allowed = types.arrayValue?.compactMap(\.stringValue) ?? [types.stringValue ?? ""]
            guard allowed.contains(where: { Self.matches(value, type: $0) }) else {
                return found.append("\(path): \(Self.describe(value)) is not \(allowed.joined(separator: " or "))")
            }
        }
        if let constant = schema["const"], constant != value {
            found.append("\(path): \(Self.describe(value)) is not \(constant.serialized(.compact))")
        }
        if let options = schema["enum"]?.arrayValue, !options.contains(value) {
            found.append("\(path): \(Self.describe(value)) is not one of \(JSONValue.array(options).serialized(.compact))")
        }
        if case .object(let members) = value {
            let properties = schema["properties"]
            for required in schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where value[required] == nil {
                found.append("\(path): member '\(required)' is missing")
            }
            for (key, member) in members {
                if let property = properties?[key] {
                    check(member, property, "\(path).\(key)", &found)
                } else if let additional = schema["additionalProperties"] {
                    if additional == .bool(false) {
                        found.append("\(path): member '\(key)' is not in the schema")
                    } else if additional.isObject {
                        check(member, additional, "\(path).\(key)", &found)
                    }
                }
            }
        }
        if case .array(let elements) = value, let items = schema["items"] {
            for (index, element) in elements.enumerated() { check(element, items, "\(path)[\(index)]", &found) }
        }
        if let options = schema["anyOf"]?.arrayValue {
            let results = options.map { problems(value, against: $0, at: path) }
            if !results.contains(where: \.isEmpty) { found.append(contentsOf: Self.closest(results, path, "anyOf")) }
        }
        if let options = schema["oneOf"]?.arrayValue {
            let results = options.map { problems(value, against: $0, at: path) }
            let passing = results.filter(\.isEmpty).count
            if passing == 0 { found.append(contentsOf: Self.closest(results, path, "oneOf")) }
            if passing > 1 { found.append("\(path): matches \(passing) of oneOf's schemas, not exactly one") }
        }
    }

    /// For a failed choice, the problems of the option that came closest (an event that
    /// breaks its schema is reported against that schema, not against all 50).
    private static func closest(_ results: [[String]], _ path: String, _ keyword: String) -> [String] {
        guard let best = results.min(by: { $0.count < $1.count }) else { return ["\(path): no \(keyword) option"] }
        return ["\(path): matches none of \(keyword)'s \(results.count) schemas; the closest says:"] + best.map { "  " + $0 }
    }

    private static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object), ("integer", .int): return true
        case ("number", .int), ("number", .double): return true
        case ("integer", .double(let number)): return number.rounded() == number
        default: return false
        }
    }

    private static func describe(_ value: JSONValue) -> String {
        let text = value.serialized(.compact)
        return text.count > 60 ? String(text.prefix(60)) + "…" : text
    }
}
