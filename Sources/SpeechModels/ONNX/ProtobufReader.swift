/// Reads protocol buffers' wire format: the few message types of an ONNX file, without a
/// protobuf library. Every length is checked against what is left, so a truncated or hostile
/// file ends in ``ModelError/malformed(_:)``, never in a read past the buffer.
struct ProtobufReader {
    enum WireType: UInt8 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, fixed32 = 5
    }

    /// One field: its number, its wire type and, for a length-delimited field, its bytes.
    struct Field {
        let number: Int
        let wireType: WireType
        let varint: UInt64
        let bytes: Slice<UnsafeRawBufferPointer>
    }

    private let buffer: Slice<UnsafeRawBufferPointer>
    private(set) var offset: Int

    init(_ buffer: Slice<UnsafeRawBufferPointer>) {
        self.buffer = buffer
        offset = buffer.startIndex
    }

    var atEnd: Bool { offset >= buffer.endIndex }

    mutating func readVarint() throws(ModelError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < buffer.endIndex, shift < 64 else { throw .malformed("a varint runs past its message") }
            let byte = buffer[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    mutating func next() throws(ModelError) -> Field {
        let key = try readVarint()
        guard let wireType = WireType(rawValue: UInt8(key & 7)), key >> 3 > 0, key >> 3 < 1 << 29 else {
            throw .malformed("field key \(key) has an unknown wire type or number")
        }
        let number = Int(key >> 3)
        switch wireType {
        case .varint:
            return Field(number: number, wireType: wireType, varint: try readVarint(), bytes: buffer[offset..<offset])
        case .fixed64, .fixed32:
            let size = wireType == .fixed64 ? 8 : 4
            guard buffer.endIndex - offset >= size else { throw .malformed("a fixed field runs past its message") }
            var value: UInt64 = 0
            for i in 0..<size { value |= UInt64(buffer[offset + i]) << (8 * UInt64(i)) }
            let bytes = buffer[offset..<offset + size]
            offset += size
            return Field(number: number, wireType: wireType, varint: value, bytes: bytes)
        case .lengthDelimited:
            let length = try readVarint()
            guard length <= UInt64(buffer.endIndex - offset) else {
                throw .malformed("field \(number) claims \(length) bytes, \(buffer.endIndex - offset) are left")
            }
            let bytes = buffer[offset..<offset + Int(length)]
            offset += Int(length)
            return Field(number: number, wireType: wireType, varint: length, bytes: bytes)
        }
    }

    /// The fields of a message, in file order.
    static func fields(of bytes: Slice<UnsafeRawBufferPointer>) throws(ModelError) -> [Field] {
        var reader = ProtobufReader(bytes)
        var fields: [Field] = []
        while !reader.atEnd { fields.append(try reader.next()) }
        return fields
    }

    /// A repeated integer field, packed (one length-delimited run of varints) or not.
    static func integers(_ field: Field) throws(ModelError) -> [Int64] {
        switch field.wireType {
        case .varint: return [Int64(bitPattern: field.varint)]
        case .lengthDelimited:
            var reader = ProtobufReader(field.bytes)
            var values: [Int64] = []
            while !reader.atEnd { values.append(Int64(bitPattern: try reader.readVarint())) }
            return values
        default: throw .malformed("field \(field.number) should hold integers")
        }
    }

    static func string(_ field: Field) throws(ModelError) -> String {
        guard field.wireType == .lengthDelimited else { throw .malformed("field \(field.number) should hold a string") }
        return String(decoding: UnsafeRawBufferPointer(rebasing: field.bytes), as: UTF8.self)
    }
}
