/// A constant tensor of an ONNX file (an initializer or a `Constant`'s value): its shape,
/// element type and little-endian bytes, read whether the exporter wrote `raw_data` or the
/// typed repeated fields.
struct ONNXTensor {
    /// TensorProto.DataType's codes for the types these models use.
    enum ElementType: Int {
        case float = 1, uint8 = 2, int8 = 3, int32 = 6, int64 = 7
        var size: Int {
            switch self {
            case .float, .int32: 4
            case .uint8, .int8: 1
            case .int64: 8
            }
        }
    }

    let name: String
    let dims: [Int]
    let type: ElementType
    /// `count × type.size` bytes, little-endian.
    let bytes: [UInt8]

    var count: Int { dims.reduce(1, *) }

    init(name: String, dims: [Int], type: ElementType, bytes: [UInt8]) {
        self.name = name
        self.dims = dims
        self.type = type
        self.bytes = bytes
    }

    /// Parses a TensorProto message.
    init(message: Slice<UnsafeRawBufferPointer>) throws(ModelError) {
        var name = ""
        var dims: [Int] = []
        var typeCode: Int64 = 0
        var raw: [UInt8]?
        var typed: [UInt8] = []
        for field in try ProtobufReader.fields(of: message) {
            switch field.number {
            case 1: dims += try ProtobufReader.integers(field).map { Int($0) }
            case 2: typeCode = Int64(bitPattern: field.varint)
            case 8: name = try ProtobufReader.string(field)
            case 9: raw = Array(field.bytes)
            case 4:  // float_data: packed fixed32 or single fixed32
                typed += field.wireType == .fixed32 ? Array(field.bytes) : Array(field.bytes)
            case 5, 7:  // int32_data (varints; int8, uint8 and int32 are stored here), int64_data
                for value in try ProtobufReader.integers(field) {
                    let size = typeCode == 7 ? 8 : typeCode == 6 ? 4 : 1
                    for i in 0..<size { typed.append(UInt8(truncatingIfNeeded: value >> (8 * Int64(i)))) }
                }
            case 13, 14:
                throw .malformed("tensor \(name) keeps its data in an external file")
            default: break
            }
        }
        guard let type = ElementType(rawValue: Int(typeCode)) else {
            throw .wrongShape("tensor \(name) has element type \(typeCode), which these models do not use")
        }
        guard dims.allSatisfy({ $0 >= 0 && $0 < 1 << 28 }) else { throw .malformed("tensor \(name) has dimensions \(dims)") }
        let bytes = raw ?? typed
        let count = dims.reduce(1, *)
        guard bytes.count == count * type.size else {
            throw .malformed("tensor \(name) of shape \(dims) holds \(bytes.count) bytes, not \(count * type.size)")
        }
        self.init(name: name, dims: dims, type: type, bytes: bytes)
    }

    private func load<T: FixedWidthInteger>(_: T.Type) -> [T] {
        bytes.withUnsafeBytes { raw in (0..<count).map { T(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * T.bitWidth / 8, as: T.self)) } }
    }

    func floats() throws(ModelError) -> [Float] {
        guard type == .float else { throw .wrongShape("\(name) is not float") }
        return load(UInt32.self).map { Float(bitPattern: $0) }
    }

    func int8s() throws(ModelError) -> [Int8] {
        guard type == .int8 else { throw .wrongShape("\(name) is not int8") }
        return bytes.map { Int8(bitPattern: $0) }
    }

    func uint8s() throws(ModelError) -> [UInt8] {
        guard type == .uint8 else { throw .wrongShape("\(name) is not uint8") }
        return bytes
    }

    func int32s() throws(ModelError) -> [Int32] {
        guard type == .int32 else { throw .wrongShape("\(name) is not int32") }
        return load(Int32.self)
    }

    func int64s() throws(ModelError) -> [Int64] {
        guard type == .int64 else { throw .wrongShape("\(name) is not int64") }
        return load(Int64.self)
    }

    /// The single value of a scalar (or one-element) tensor.
    func scalar() throws(ModelError) -> Float {
        guard count == 1 else { throw .wrongShape("\(name) should hold one value, has shape \(dims)") }
        switch type {
        case .float: return try floats()[0]
        case .uint8: return Float(bytes[0])
        case .int8: return Float(Int8(bitPattern: bytes[0]))
        case .int32: return Float(try int32s()[0])
        case .int64: return Float(try int64s()[0])
        }
    }
}
