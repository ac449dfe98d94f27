import FoundationEssentials
import PracticeNet

/// Encodes the protocol's Swift types as the `JSONValue` the daemon writes. The wire's
/// conventions live here, in one place, so that every message follows them:
/// - a Swift member name becomes its snake_case wire name (`turnId` → `turn_id`,
///   `durationS` → `duration_s`), see ``WireName``;
/// - members keep their declaration order (stable, readable lines);
/// - an optional member without a value is written as `null`, never left out, so that a
///   client sees every member its event or result documents.
public enum ProtocolEncoder {
    public static func encode(_ value: some Encodable) -> JSONValue {
        let box = ValueBox()
        do {
            try ValueEncoder.encode(value, into: box, path: [])
        } catch {
            // The protocol's types encode plain members only; a throw is a bug in one.
            preconditionFailure("protocol value \(type(of: value)) did not encode: \(error)")
        }
        return box.value
    }
}

/// How a Swift member name is spelled on the wire. Shared by the encoder, the argument
/// decoder and the schema, so that the three cannot disagree.
enum WireName {
    static func of(_ key: CodingKey) -> String { of(key.stringValue) }

    static func of(_ name: String) -> String {
        var out = ""
        out.reserveCapacity(name.utf8.count + 4)
        for character in name {
            if character.isUppercase {
                if !out.isEmpty { out.append("_") }
                out.append(contentsOf: character.lowercased())
            } else {
                out.append(character)
            }
        }
        return out
    }
}

/// A box the nested containers write into; resolved to a `JSONValue` at the end.
private final class ValueBox {
    enum Content {
        case value(JSONValue)
        case object([(String, ValueBox)])
        case array([ValueBox])
    }

    var content: Content = .value(.null) { didSet { written = true } }
    /// Whether anything was written: a struct without members writes nothing, and is `{}`.
    var written = false

    var value: JSONValue {
        switch content {
        case .value(let value): return value
        case .object(let members): return .object(members.map { ($0.0, $0.1.value) })
        case .array(let elements): return .array(elements.map(\.value))
        }
    }

    func member(_ name: String) -> ValueBox {
        var members: [(String, ValueBox)]
        if case .object(let existing) = content { members = existing } else { members = [] }
        if let found = members.first(where: { $0.0 == name }) { return found.1 }
        let box = ValueBox()
        members.append((name, box))
        content = .object(members)
        return box
    }

    func append() -> ValueBox {
        var elements: [ValueBox]
        if case .array(let existing) = content { elements = existing } else { elements = [] }
        let box = ValueBox()
        elements.append(box)
        content = .array(elements)
        return box
    }

    func makeObject() { if case .object = content {} else { content = .object([]) } }
    func makeArray() { if case .array = content {} else { content = .array([]) } }
}

private struct ValueEncoder: Encoder {
    var codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    let storage: ValueBox

    init(codingPath: [CodingKey], storage: ValueBox = ValueBox()) {
        self.codingPath = codingPath
        self.storage = storage
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        storage.makeObject()
        return KeyedEncodingContainer(KeyedContainer<Key>(codingPath: codingPath, storage: storage))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        storage.makeArray()
        return UnkeyedContainer(codingPath: codingPath, storage: storage)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { SingleContainer(codingPath: codingPath, storage: storage) }

    /// Encodes a value into a box: JSONValue itself and the primitives directly.
    static func encode(_ value: some Encodable, into box: ValueBox, path: [CodingKey]) throws {
        switch value {
        case let json as JSONValue: box.content = .value(json)
        case let text as String: box.content = .value(.string(text))
        case let flag as Bool: box.content = .value(.bool(flag))
        case let number as Int: box.content = .value(.int(number))
        case let number as Double: box.content = .value(.double(number))
        case let dictionary as any StringKeyedDictionary: try dictionary.encodeMembers(into: box, path: path)
        default:
            try value.encode(to: ValueEncoder(codingPath: path, storage: box))
            if !box.written { box.makeObject() }
        }
    }
}

/// `[String: V]`: its keys are data (a server's timing names, configuration keys), written
/// as they are, in sorted order; not member names to spell in snake_case.
private protocol StringKeyedDictionary {
    func encodeMembers(into box: ValueBox, path: [CodingKey]) throws
}

extension Dictionary: StringKeyedDictionary where Key == String, Value: Encodable {
    fileprivate func encodeMembers(into box: ValueBox, path: [CodingKey]) throws {
        box.makeObject()
        for key in keys.sorted() { try ValueEncoder.encode(self[key]!, into: box.member(key), path: path) }
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    var codingPath: [CodingKey]
    let storage: ValueBox

    mutating func encodeNil(forKey key: Key) throws { storage.member(WireName.of(key)).content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try ValueEncoder.encode(value, into: storage.member(WireName.of(key)), path: codingPath + [key])
    }
    // Optionals: written as null (the synthesized conformance would leave them out).
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try encodeOptional(value.map(Double.init), key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try encodeOptional(value.map { Int($0) }, key) }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try encodeOptional(value.map { Int(clamping: $0) }, key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try encodeOptional(value.map { Int($0) }, key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try encodeOptional(value.map { Int($0) }, key) }

    private mutating func encodeOptional<T: Encodable>(_ value: T?, _ key: Key) throws {
        guard let value else { return try encodeNil(forKey: key) }
        try encode(value, forKey: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let box = storage.member(WireName.of(key))
        box.makeObject()
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(codingPath: codingPath + [key], storage: box))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let box = storage.member(WireName.of(key))
        box.makeArray()
        return UnkeyedContainer(codingPath: codingPath + [key], storage: box)
    }

    mutating func superEncoder() -> Encoder { ValueEncoder(codingPath: codingPath, storage: storage.member("super")) }
    mutating func superEncoder(forKey key: Key) -> Encoder { ValueEncoder(codingPath: codingPath + [key], storage: storage.member(WireName.of(key))) }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    var codingPath: [CodingKey]
    let storage: ValueBox
    var count: Int { if case .array(let elements) = storage.content { return elements.count } else { return 0 } }

    mutating func encodeNil() throws { storage.append().content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try ValueEncoder.encode(value, into: storage.append(), path: codingPath) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let box = storage.append()
        box.makeObject()
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(codingPath: codingPath, storage: box))
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let box = storage.append()
        box.makeArray()
        return UnkeyedContainer(codingPath: codingPath, storage: box)
    }

    mutating func superEncoder() -> Encoder { ValueEncoder(codingPath: codingPath, storage: storage.append()) }
}

private struct SingleContainer: SingleValueEncodingContainer {
    var codingPath: [CodingKey]
    let storage: ValueBox

    mutating func encodeNil() throws { storage.content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try ValueEncoder.encode(value, into: storage, path: codingPath) }
}
