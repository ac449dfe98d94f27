import FoundationEssentials
import Glibc
import PracticeNet

/// Reads the protocol's JSON into its types, by the wire names of ``WireName``: a request's
/// `args` into the command's arguments, and the offline cache's records. A wrong member is
/// a `bad_arguments` error that names it and says what it must be; unknown members are
/// ignored (a newer client may send more), and `null` counts as absent.
public enum ProtocolDecoder {
    public static func decode<T: Decodable>(_ type: T.Type, from args: JSONValue) throws(ControlError) -> T {
        do {
            return try T(from: ArgumentReader(value: args, path: []))
        } catch let error as ControlError {
            throw error
        } catch {
            // Only the types' own checks throw other errors (a custom `init(from:)`).
            throw ControlError(.badArguments, "\(error)")
        }
    }
}

private struct ArgumentReader: Decoder {
    let value: JSONValue
    let path: [String]
    var codingPath: [CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    var name: String { path.isEmpty ? "args" : path.joined(separator: ".") }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard value.isObject else { throw ControlError(.badArguments, "'\(name)' must be an object") }
        return KeyedDecodingContainer(KeyedReader<Key>(reader: self))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer {
        guard let elements = value.arrayValue else { throw ControlError(.badArguments, "'\(name)' must be a list") }
        return UnkeyedReader(elements: elements, path: path)
    }

    func singleValueContainer() throws -> SingleValueDecodingContainer { SingleReader(reader: self) }

    /// One value, with the protocol's messages for a wrong type.
    func read<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == JSONValue.self { return value as! T }
        if T.self == String.self {
            guard let text = value.stringValue else { throw ControlError(.badArguments, "'\(name)' must be a string") }
            return text as! T
        }
        if T.self == Bool.self {
            guard let flag = value.boolValue else { throw ControlError(.badArguments, "'\(name)' must be true or false") }
            return flag as! T
        }
        if T.self == Int.self {
            guard let number = value.intValue else { throw ControlError(.badArguments, "'\(name)' must be a whole number") }
            return number as! T
        }
        if T.self == Double.self {
            guard let number = value.doubleValue, number.isFinite else { throw ControlError(.badArguments, "'\(name)' must be a number") }
            return number as! T
        }
        if T.self == [String].self {
            guard let items = value.arrayValue, items.allSatisfy({ $0.stringValue != nil }) else {
                throw ControlError(.badArguments, "'\(name)' must be a list of strings")
            }
            return items.map { $0.stringValue! } as! T
        }
        if let enumeration = T.self as? WireEnumerable.Type {
            guard let text = value.stringValue, enumeration.wireValues.contains(text) else {
                throw ControlError(.badArguments, "'\(name)' must be \(choices(enumeration.wireValues))")
            }
        }
        return try T(from: self)
    }
}

private struct KeyedReader<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let reader: ArgumentReader
    var codingPath: [CodingKey] { [] }
    var allKeys: [Key] {
        guard case .object(let members) = reader.value else { return [] }
        return members.compactMap { Key(stringValue: $0.0) }
    }

    private func member(_ key: Key) -> JSONValue? {
        guard let found = reader.value[WireName.of(key)], !found.isNull else { return nil }
        return found
    }

    private func child(_ key: Key, _ value: JSONValue) -> ArgumentReader { ArgumentReader(value: value, path: reader.path + [WireName.of(key)]) }

    func contains(_ key: Key) -> Bool { member(key) != nil }
    func decodeNil(forKey key: Key) throws -> Bool { member(key) == nil }

    // Every overload goes through `required` or `optional`: the protocol's default
    // primitive overloads would not give this type's messages.
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try required(type, key) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try optional(type, key) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try required(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try required(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try required(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try required(type, key) }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optional(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optional(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optional(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optional(type, key) }

    private func required<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        guard let value = member(key) else { throw ControlError(.badArguments, "'\(child(key, .null).name)' is required") }
        return try child(key, value).read(T.self)
    }

    private func optional<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
        guard let value = member(key) else { return nil }
        return try child(key, value).read(T.self)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key, member(key) ?? .null).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer { try child(key, member(key) ?? .null).unkeyedContainer() }
    func superDecoder() throws -> Decoder { reader }
    func superDecoder(forKey key: Key) throws -> Decoder { child(key, member(key) ?? .null) }
}

private struct UnkeyedReader: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let path: [String]
    var codingPath: [CodingKey] { [] }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }
    var currentIndex = 0

    init(elements: [JSONValue], path: [String]) {
        self.elements = elements
        self.path = path
    }

    private mutating func next() throws -> ArgumentReader {
        guard !isAtEnd else { throw ControlError(.badArguments, "'\(path.joined(separator: "."))' is too short") }
        defer { currentIndex += 1 }
        var elementPath = path.isEmpty ? ["args"] : path
        elementPath[elementPath.count - 1] += "[\(currentIndex)]"
        return ArgumentReader(value: elements[currentIndex], path: elementPath)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().read(T.self) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> Decoder { try next() }
}

private struct SingleReader: SingleValueDecodingContainer {
    let reader: ArgumentReader
    var codingPath: [CodingKey] { [] }
    func decodeNil() -> Bool { reader.value.isNull }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        // An enum's synthesized init reads its raw String here; other types their own way.
        if T.self == String.self {
            guard let text = reader.value.stringValue else { throw ControlError(.badArguments, "'\(reader.name)' must be a string") }
            return text as! T
        }
        return try reader.read(T.self)
    }
}
