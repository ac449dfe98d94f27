/// An ONNX graph as these models need it: the nodes in file order (ONNX requires
/// topological order), the initializers by name, and each node's attributes, including the
/// subgraphs of `If`. Nothing is executed from it: the models' code walks it to find their
/// weights and quantization parameters, so a graph of another shape is refused when loading.
final class ONNXGraph {
    struct Attribute {
        var int: Int64 = 0
        var float: Float = 0
        var ints: [Int64] = []
        var string = ""
        var graph: ONNXGraph?
        var tensor: ONNXTensor?
    }

    struct Node {
        let opType: String
        let name: String
        let inputs: [String]
        let outputs: [String]
        let attributes: [String: Attribute]
    }

    let name: String
    let nodes: [Node]
    let initializers: [String: ONNXTensor]
    private let consumersByInput: [String: [Int]]
    private let producerByOutput: [String: Int]

    init(message: Slice<UnsafeRawBufferPointer>) throws(ModelError) {
        var name = ""
        var nodes: [Node] = []
        var initializers: [String: ONNXTensor] = [:]
        for field in try ProtobufReader.fields(of: message) {
            switch field.number {
            case 1: nodes.append(try Self.node(field.bytes))
            case 2: name = try ProtobufReader.string(field)
            case 5:
                let tensor = try ONNXTensor(message: field.bytes)
                initializers[tensor.name] = tensor
            default: break
            }
        }
        self.name = name
        self.nodes = nodes
        self.initializers = initializers
        var consumers: [String: [Int]] = [:]
        var producers: [String: Int] = [:]
        for (index, node) in nodes.enumerated() {
            for input in node.inputs where !input.isEmpty { consumers[input, default: []].append(index) }
            for output in node.outputs { producers[output] = index }
        }
        consumersByInput = consumers
        producerByOutput = producers
    }

    private static func node(_ bytes: Slice<UnsafeRawBufferPointer>) throws(ModelError) -> Node {
        var inputs: [String] = [], outputs: [String] = []
        var name = "", opType = ""
        var attributes: [String: Attribute] = [:]
        for field in try ProtobufReader.fields(of: bytes) {
            switch field.number {
            case 1: inputs.append(try ProtobufReader.string(field))
            case 2: outputs.append(try ProtobufReader.string(field))
            case 3: name = try ProtobufReader.string(field)
            case 4: opType = try ProtobufReader.string(field)
            case 5:
                var attributeName = ""
                var attribute = Attribute()
                for part in try ProtobufReader.fields(of: field.bytes) {
                    switch part.number {
                    case 1: attributeName = try ProtobufReader.string(part)
                    case 2: attribute.float = Float(bitPattern: UInt32(truncatingIfNeeded: part.varint))
                    case 3: attribute.int = Int64(bitPattern: part.varint)
                    case 4: attribute.string = try ProtobufReader.string(part)
                    case 5: attribute.tensor = try ONNXTensor(message: part.bytes)
                    case 6: attribute.graph = try ONNXGraph(message: part.bytes)
                    case 8: attribute.ints += try ProtobufReader.integers(part)
                    default: break
                    }
                }
                attributes[attributeName] = attribute
            default: break
            }
        }
        return Node(opType: opType, name: name, inputs: inputs, outputs: outputs, attributes: attributes)
    }

    // MARK: Walking

    func initializer(_ name: String) throws(ModelError) -> ONNXTensor {
        guard let tensor = initializers[name] else { throw .missingTensor(name) }
        return tensor
    }

    /// The tensor with `dims`, checked.
    func initializer(_ name: String, dims: [Int], type: ONNXTensor.ElementType = .float) throws(ModelError) -> ONNXTensor {
        let tensor = try initializer(name)
        guard tensor.dims == dims, tensor.type == type else {
            throw .wrongShape("\(name) is \(tensor.type) \(tensor.dims), expected \(type) \(dims)")
        }
        return tensor
    }

    func consumers(of tensor: String) -> [Node] {
        (consumersByInput[tensor] ?? []).map { nodes[$0] }
    }

    func producer(of tensor: String) -> Node? {
        producerByOutput[tensor].map { nodes[$0] }
    }

    /// The one node of `opType` that reads `tensor`.
    func consumer(of tensor: String, op opType: String) throws(ModelError) -> Node {
        let found = consumers(of: tensor).filter { $0.opType == opType }
        guard found.count == 1 else {
            throw .unexpectedGraph("\(found.count) \(opType) nodes read \(tensor), expected one")
        }
        return found[0]
    }

    /// The node of `opType` whose input at `index` is `initializer`, e.g. the LayerNormalization
    /// that uses a named weight.
    func node(op opType: String, input initializer: String) throws(ModelError) -> Node {
        let found = consumers(of: initializer).filter { $0.opType == opType }
        guard found.count == 1 else {
            throw .unexpectedGraph("\(found.count) \(opType) nodes use \(initializer), expected one")
        }
        return found[0]
    }
}
