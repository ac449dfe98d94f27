import FoundationEssentials
import Glibc

/// A JSON value with its members in order: the control protocol's messages (read with
/// `JSONDecoder`, written compact) and practice-sim's answers, written byte for byte as the
/// real backend writes them: REST replies compact UTF-8 (FastAPI), SSE data in Python's
/// `json.dumps` default style (`", "` and `": "` separators, everything outside ASCII escaped
/// as `\uXXXX`), so that clients meet the same escapes and spacing as in production.
public indirect enum JSONValue: Equatable, Sendable, Codable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// Keys keep their order, as Python's dicts do.
    case object([(String, JSONValue)])

    public enum Style: Sendable {
        /// `{"a":1,"b":"é"}`: FastAPI's JSONResponse.
        case compact
        /// `{"a": 1, "b": "\u00e9"}`: Python's `json.dumps` defaults.
        case python
        /// Indented by two spaces, a member or element per line (files people read).
        case pretty
    }

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements) }

    /// A string or null.
    public static func optional(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }

    /// Structural equality; object members compare regardless of order.
    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            guard x.count == y.count else { return false }
            let other = Dictionary(y, uniquingKeysWith: { first, _ in first })
            return x.allSatisfy { key, value in other[key] == value }
        default: return false
        }
    }

    /// The member `key` of an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    public func serialized(_ style: Style) -> String {
        var out = ""
        if style == .pretty { writePretty(to: &out, indent: "") } else { write(to: &out, style) }
        return out
    }

    private func writePretty(to out: inout String, indent: String) {
        let inner = indent + "  "
        switch self {
        case .array(let elements) where !elements.isEmpty:
            out += "[\n"
            for (i, element) in elements.enumerated() {
                out += inner
                element.writePretty(to: &out, indent: inner)
                out += i < elements.count - 1 ? ",\n" : "\n"
            }
            out += indent + "]"
        case .object(let members) where !members.isEmpty:
            out += "{\n"
            for (i, (key, value)) in members.enumerated() {
                out += inner
                Self.writeString(key, to: &out, asciiOnly: false)
                out += ": "
                value.writePretty(to: &out, indent: inner)
                out += i < members.count - 1 ? ",\n" : "\n"
            }
            out += indent + "}"
        default:
            write(to: &out, .compact)
        }
    }

    public func bytes(_ style: Style = .compact) -> [UInt8] { Array(serialized(style).utf8) }

    private func write(to out: inout String, _ style: Style) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value):
            // Python prints floats with repr: always a decimal point or exponent.
            var text = String(value)
            if !text.contains(".") && !text.contains("e") && value.isFinite { text += ".0" }
            out += text
        case .string(let value): Self.writeString(value, to: &out, asciiOnly: style == .python)
        case .array(let elements):
            out += "["
            for (i, element) in elements.enumerated() {
                if i > 0 { out += style == .python ? ", " : "," }
                element.write(to: &out, style)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += style == .python ? ", " : "," }
                Self.writeString(key, to: &out, asciiOnly: style == .python)
                out += style == .python ? ": " : ":"
                value.write(to: &out, style)
            }
            out += "}"
        }
    }

    private static func writeString(_ value: String, to out: inout String, asciiOnly: Bool) {
        out += "\""
        for unit in value.unicodeScalars {
            switch unit {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if unit.value < 0x20 || (asciiOnly && unit.value > 0x7E) {
                    // Beyond the BMP Python writes a surrogate pair.
                    for code in String(unit).utf16 { out += "\\u" + hex4(code) }
                } else {
                    out.unicodeScalars.append(unit)
                }
            }
        }
        out += "\""
    }

    private static func hex4(_ value: UInt16) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// Reads any JSON. Object members come out sorted by key (the decoder does not keep the
    /// text's order, and a fixed order keeps output reproducible); numbers that are whole and
    /// fit an Int are `.int`.
    public init(from decoder: Decoder) throws {
        if let container = try? decoder.container(keyedBy: AnyKey.self) {
            let keys = container.allKeys.sorted { $0.stringValue < $1.stringValue }
            self = .object(try keys.map { ($0.stringValue, try container.decode(JSONValue.self, forKey: $0)) })
            return
        }
        if var container = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !container.isAtEnd { elements.append(try container.decode(JSONValue.self)) }
            self = .array(elements)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    /// Writes the value through any encoder (the protocol's types hold `JSONValue` members
    /// for what the backend passes through).
    public func encode(to encoder: Encoder) throws {
        switch self {
        case .object(let members):
            var container = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in members { try container.encode(value, forKey: AnyKey(stringValue: key)) }
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .int(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .double(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var doubleValue: Double? {
        switch self {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: return nil
        }
    }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    public var isObject: Bool { if case .object = self { return true } else { return false } }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var intValue: Int? { if case .int(let i) = self { return i } else { return nil } }
    public var isNull: Bool { if case .null = self { return true } else { return false } }
}
