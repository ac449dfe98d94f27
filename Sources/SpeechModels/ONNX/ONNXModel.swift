/// An ONNX file's top level (ModelProto): the opset it was exported for and its main graph.
struct ONNXModel {
    let opsetVersion: Int
    let graph: ONNXGraph

    init(bytes: [UInt8]) throws(ModelError) {
        let parsed = bytes.withUnsafeBytes { raw in Result { () throws(ModelError) in try Self.parse(raw[...]) } }
        (opsetVersion, graph) = try parsed.get()
    }

    private static func parse(_ raw: Slice<UnsafeRawBufferPointer>) throws(ModelError) -> (Int, ONNXGraph) {
        var opset = 0
        var graph: ONNXGraph?
        for field in try ProtobufReader.fields(of: raw) {
            switch field.number {
            case 7: graph = try ONNXGraph(message: field.bytes)
            case 8:  // OperatorSetIdProto: domain 1, version 2; the default domain is ""
                var domain = "", version: Int64 = 0
                for part in try ProtobufReader.fields(of: field.bytes) {
                    if part.number == 1 { domain = try ProtobufReader.string(part) }
                    if part.number == 2 { version = Int64(bitPattern: part.varint) }
                }
                if domain.isEmpty || domain == "ai.onnx" { opset = Int(version) }
            default: break
            }
        }
        guard let graph else { throw .malformed("no graph") }
        return (opset, graph)
    }
}
