/// The steps of a walk over a QDQ graph (each product between DequantizeLinear nodes and
/// followed by a QuantizeLinear–DequantizeLinear pair), from named anchors along the data flow.
struct GraphWalker {
    let graph: ONNXGraph

    /// The QuantizeLinear reading `tensor`, and the output of the DequantizeLinear after it.
    func quantization(after tensor: String) throws(ModelError) -> (quantization: Quantization, dequantized: String) {
        let quantize = try graph.consumer(of: tensor, op: "QuantizeLinear")
        let scale = try graph.initializer(quantize.inputs[1]).scalar()
        let zero = try graph.initializer(quantize.inputs[2])
        guard zero.type == .uint8, zero.count == 1, scale > 0 else {
            throw .unexpectedGraph("\(quantize.name) does not quantize to one uint8 scale")
        }
        let dequantize = try graph.consumer(of: quantize.outputs[0], op: "DequantizeLinear")
        return (Quantization(scale: scale, zeroPoint: Int32(zero.bytes[0])), dequantize.outputs[0])
    }

    /// The dequantized form of a product's result (its QuantizeLinear–DequantizeLinear pair).
    func dequantized(_ tensor: String) throws(ModelError) -> String {
        try quantization(after: tensor).dequantized
    }

    /// The first node of `op` along the data flow from `tensor`, through nodes that only move
    /// values (Reshape, Transpose) or are listed in `skipping`; shape computations are ignored.
    func follow(_ tensor: String, to op: String, skipping: Set<String> = []) throws(ModelError) -> ONNXGraph.Node {
        var current = tensor
        for _ in 0..<16 {
            let next = graph.consumers(of: current).filter { $0.opType != "Shape" }
            if let found = next.first(where: { $0.opType == op }) { return found }
            guard let step = next.first(where: { ["Reshape", "Transpose"].contains($0.opType) || skipping.contains($0.opType) }) else { break }
            current = step.outputs[0]
        }
        throw .unexpectedGraph("no \(op) follows \(tensor)")
    }

    func norm(_ prefix: String) throws(ModelError) -> SmartTurnWeights.Norm {
        let weight = try graph.initializer(prefix + ".weight")
        return SmartTurnWeights.Norm(weight: try weight.floats(),
                                     bias: try graph.initializer(prefix + ".bias", dims: weight.dims).floats())
    }

    /// A MatMul, Gemm or Conv node's int8 weight (as [outputs][inputs]), its result's
    /// quantization and the bias added after it: the named initializer `bias`, or the node's
    /// own third input (Gemm and Conv, an int32 tensor with its own scales).
    func linear(_ node: ONNXGraph.Node, bias: String?) throws(ModelError) -> SmartTurnWeights.Linear {
        guard let dequantize = graph.producer(of: node.inputs[1]), dequantize.opType == "DequantizeLinear" else {
            throw .unexpectedGraph("\(node.name)'s weight is not dequantized int8")
        }
        let values = try graph.initializer(dequantize.inputs[0])
        let scales = try graph.initializer(dequantize.inputs[1]).floats()
        let zeros = try graph.initializer(dequantize.inputs[2])
        guard values.type == .int8, zeros.bytes.allSatisfy({ $0 == 0 }) else {
            throw .unexpectedGraph("\(values.name) is not symmetric int8")
        }
        let raw = try values.int8s()
        let axis = dequantize.attributes["axis"]?.int ?? 1
        let matrix: QuantizedMatrix
        if node.opType == "MatMul" {
            // [K][N], scaled per column: stored transposed.
            guard values.dims.count == 2, axis == 1, scales.count == values.dims[1] else {
                throw .wrongShape("\(values.name) is \(values.dims) with \(scales.count) scales")
            }
            let (k, n) = (values.dims[0], values.dims[1])
            var transposed = [Int8](repeating: 0, count: k * n)
            for i in 0..<k { for j in 0..<n { transposed[j * k + i] = raw[i * n + j] } }
            matrix = QuantizedMatrix(values: transposed, scales: scales, outputs: n, inputs: k)
        } else {
            // Gemm with transB and Conv: [N][...], scaled per output.
            guard axis == 0, scales.count == values.dims[0] else {
                throw .wrongShape("\(values.name) is \(values.dims) with \(scales.count) scales")
            }
            if node.opType == "Gemm", node.attributes["transB"]?.int != 1 {
                throw .unexpectedGraph("\(node.name) is not a Gemm with transB")
            }
            if node.opType == "Conv" {
                // [N][C][K] stored [N][K][C]: a window of K consecutive frames of a [t][C]
                // activation is then one contiguous span, which the product reads in place
                // (the sums are integers: the order of their terms changes nothing).
                guard values.dims.count == 3 else { throw .wrongShape("\(values.name) is \(values.dims), not [out][in][width]") }
                let (n, c, k) = (values.dims[0], values.dims[1], values.dims[2])
                var reordered = [Int8](repeating: 0, count: raw.count)
                for o in 0..<n { for i in 0..<c { for j in 0..<k { reordered[(o * k + j) * c + i] = raw[(o * c + i) * k + j] } } }
                matrix = QuantizedMatrix(values: reordered, scales: scales, outputs: n, inputs: c * k)
            } else {
                matrix = QuantizedMatrix(values: raw, scales: scales, outputs: values.dims[0], inputs: values.count / values.dims[0])
            }
        }
        let output = try quantization(after: node.outputs[0]).quantization
        guard let inputDequantize = graph.producer(of: node.inputs[0]), inputDequantize.opType == "DequantizeLinear" else {
            throw .unexpectedGraph("\(node.name)'s input is not dequantized")
        }
        let inputScale = try graph.initializer(inputDequantize.inputs[1]).scalar()
        // As onnxruntime computes them: (a_scale · b_scale) / y_scale, in float.
        let multipliers = scales.map { inputScale * $0 / output.scale }
        var biasValues = [Float](repeating: 0, count: matrix.outputs)
        var integerBias: [Int32]?
        if let bias {
            biasValues = try graph.initializer(bias, dims: [matrix.outputs]).floats()
        } else if node.inputs.count > 2, let dq = graph.producer(of: node.inputs[2]), dq.opType == "DequantizeLinear" {
            let q = try graph.initializer(dq.inputs[0]).int32s()
            let s = try graph.initializer(dq.inputs[1]).floats()
            guard q.count == matrix.outputs, s.count == q.count else { throw .wrongShape("\(dq.name) has \(q.count) values, \(s.count) scales") }
            // The fused kernels add the Int32 bias to the sums: its scale must be theirs.
            for n in 0..<q.count where abs(s[n] - inputScale * scales[n]) > 1e-6 * s[n] {
                throw .unexpectedGraph("\(dq.name)'s scale \(s[n]) is not input × weight scale")
            }
            integerBias = q
        }
        return SmartTurnWeights.Linear(matrix: matrix, output: output, multipliers: multipliers, bias: biasValues, integerBias: integerBias)
    }
}
