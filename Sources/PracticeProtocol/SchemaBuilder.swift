import FoundationEssentials
import PracticeNet

/// Derives a JSON Schema (draft 2020-12, the subset the protocol needs) from a protocol
/// type, by walking its `init(from:)` with a decoder that records each member it asks for:
/// its wire name (``WireName``), its type, and whether it is optional. The schema is thus
/// the types', not a second description that could drift from them.
///
/// `optionalsPresent`: the daemon writes every member, an absent optional as `null`
/// (``ProtocolEncoder``), so in what it writes every member is required and an optional
/// one may be null; in what a client sends, an optional member may be left out.
public enum SchemaBuilder {
    public static func schema<T: Decodable>(for type: T.Type, optionalsPresent: Bool) -> JSONValue {
        do {
            return try walk(T.self).shape.json(optionalsPresent: optionalsPresent)
        } catch {
            preconditionFailure("no schema for \(T.self): \(error)")
        }
    }

    /// The shape of `T` and a placeholder value of it (the walk must return one to go on).
    static func walk<T: Decodable>(_ type: T.Type) throws -> (shape: Shape, value: T) {
        if T.self == JSONValue.self { return (.any, JSONValue.null as! T) }
        if T.self == String.self { return (.string, "" as! T) }
        if T.self == Bool.self { return (.boolean, false as! T) }
        if T.self == Int.self { return (.integer, 0 as! T) }
        if T.self == Double.self { return (.number, 0.0 as! T) }
        if let enumeration = T.self as? WireEnumerable.Type {
            let first = enumeration.wireValues.first ?? ""
            return (.enumeration(enumeration.wireValues), try T(from: SchemaWalker(node: Node(), enumValue: first)))
        }
        if let dictionary = T.self as? WireDictionary.Type {
            return (.dictionary(try valueShape(dictionary.valueType)), dictionary.empty as! T)
        }
        let node = Node()
        let value = try T(from: SchemaWalker(node: node, enumValue: nil))
        // A struct without members reads nothing: it is an empty object.
        if case .any = node.shape { return (.object([]), value) }
        return (node.shape, value)
    }

    private static func valueShape<V: Decodable>(_ type: V.Type) throws -> Shape { try walk(type).shape }

    indirect enum Shape {
        case any, string, integer, number, boolean
        case enumeration([String])
        case array(Shape)
        case object([Member])
        case dictionary(Shape)

        struct Member {
            var name: String
            var shape: Shape
            var optional: Bool
        }

        func json(optionalsPresent: Bool) -> JSONValue {
            switch self {
            case .any: return .object([])
            case .string: return ["type": "string"]
            case .integer: return ["type": "integer"]
            case .number: return ["type": "number"]
            case .boolean: return ["type": "boolean"]
            case .enumeration(let values): return ["type": "string", "enum": .array(values.map { .string($0) })]
            case .array(let element): return ["type": "array", "items": element.json(optionalsPresent: optionalsPresent)]
            case .dictionary(let value): return ["type": "object", "additionalProperties": value.json(optionalsPresent: optionalsPresent)]
            case .object(let members):
                let properties: [(String, JSONValue)] = members.map { member in
                    let schema = member.shape.json(optionalsPresent: optionalsPresent)
                    return (member.name, member.optional ? Self.nullable(schema) : schema)
                }
                let required = members.filter { optionalsPresent || !$0.optional }.map { JSONValue.string($0.name) }
                // What the daemon writes has exactly these members; what a client sends may
                // hold more (ignored: a newer client talking to an older daemon).
                var schema: JSONValue = ["type": "object", "properties": .object(properties), "required": .array(required)]
                if optionalsPresent { schema = schema.adding("additionalProperties", false) }
                return schema
            }
        }

        /// `T` or null: a type list for the simple types, `anyOf` for the rest.
        static func nullable(_ schema: JSONValue) -> JSONValue {
            if case .object(let members) = schema, members.count == 1, let type = schema["type"]?.stringValue {
                return ["type": [.string(type), "null"]]
            }
            if case .object(let members) = schema, members.isEmpty { return schema }
            return ["anyOf": [schema, ["type": "null"]]]
        }
    }

    final class Node {
        var shape = Shape.any

        func add(_ name: String, _ shape: Shape, optional: Bool) {
            var members: [Shape.Member]
            if case .object(let existing) = self.shape { members = existing } else { members = [] }
            if let index = members.firstIndex(where: { $0.name == name }) {
                members[index] = Shape.Member(name: name, shape: shape, optional: optional && members[index].optional)
            } else {
                members.append(Shape.Member(name: name, shape: shape, optional: optional))
            }
            self.shape = .object(members)
        }
    }
}

/// `[String: V]`, which the walk would see as an object without members.
protocol WireDictionary {
    static var valueType: any Decodable.Type { get }
    static var empty: Self { get }
}

extension Dictionary: WireDictionary where Key == String, Value: Decodable {
    static var valueType: any Decodable.Type { Value.self }
    static var empty: Self { [:] }
}

private struct SchemaWalker: Decoder {
    let node: SchemaBuilder.Node
    /// Set while walking a string enumeration: the raw value its init reads.
    let enumValue: String?
    var codingPath: [CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if case .object = node.shape {} else { node.shape = .object([]) }
        return KeyedDecodingContainer(KeyedWalker<Key>(node: node))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer { UnkeyedWalker(node: node) }

    func singleValueContainer() throws -> SingleValueDecodingContainer { SingleWalker(node: node, enumValue: enumValue) }
}

private struct KeyedWalker<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let node: SchemaBuilder.Node
    var codingPath: [CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try record(type, key, optional: false) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try record(type, key, optional: true) }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try record(type, key, optional: false) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try record(type, key, optional: false) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try record(type, key, optional: false) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try record(type, key, optional: false) }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try record(type, key, optional: true) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try record(type, key, optional: true) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try record(type, key, optional: true) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try record(type, key, optional: true) }

    private func record<T: Decodable>(_ type: T.Type, _ key: Key, optional: Bool) throws -> T {
        let (shape, value) = try SchemaBuilder.walk(T.self)
        node.add(WireName.of(key), shape, optional: optional)
        return value
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw SchemaUnsupported(what: "nested containers")
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer { throw SchemaUnsupported(what: "nested containers") }
    func superDecoder() throws -> Decoder { throw SchemaUnsupported(what: "super decoders") }
    func superDecoder(forKey key: Key) throws -> Decoder { throw SchemaUnsupported(what: "super decoders") }
}

/// An array's init decodes elements until the end: one element is walked, then it ends.
private struct UnkeyedWalker: UnkeyedDecodingContainer {
    let node: SchemaBuilder.Node
    var codingPath: [CodingKey] { [] }
    var count: Int? { 1 }
    var isAtEnd: Bool { currentIndex > 0 }
    var currentIndex = 0

    init(node: SchemaBuilder.Node) {
        self.node = node
        node.shape = .array(.any)
    }

    mutating func decodeNil() throws -> Bool { false }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (shape, value) = try SchemaBuilder.walk(T.self)
        node.shape = .array(shape)
        currentIndex += 1
        return value
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        throw SchemaUnsupported(what: "nested containers")
    }
    mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer { throw SchemaUnsupported(what: "nested containers") }
    mutating func superDecoder() throws -> Decoder { throw SchemaUnsupported(what: "super decoders") }
}

private struct SingleWalker: SingleValueDecodingContainer {
    let node: SchemaBuilder.Node
    let enumValue: String?
    var codingPath: [CodingKey] { [] }
    func decodeNil() -> Bool { false }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == String.self, let enumValue { return enumValue as! T }
        let (shape, value) = try SchemaBuilder.walk(T.self)
        node.shape = shape
        return value
    }
}

struct SchemaUnsupported: Error, CustomStringConvertible {
    var what: String
    var description: String { "the schema walk does not support \(what); give the type a plain Codable shape" }
}
