/// smart-turn v3.2's weights and quantization parameters, found by walking its ONNX graph
/// (a QDQ export: every matrix product between a DequantizeLinear of each operand and a
/// QuantizeLinear of its result). Named weights anchor the walk (the layer norms, biases and
/// convolutions keep their PyTorch names); the products' weights and every activation's scale
/// are found from them along the data flow, so another export of the model is refused with
/// the node where it differs instead of being run wrongly.
struct SmartTurnWeights {
    struct Norm {
        let weight: [Float], bias: [Float]
    }

    /// A product by a weight, its result quantized to `output`, as onnxruntime fuses each
    /// DequantizeLinear–MatMul/Gemm/Conv–QuantizeLinear into QLinearMatMul, QGemm or
    /// QLinearConv: the Int32 sums (plus a Gemm's or Conv's Int32 bias) times
    /// `multipliers[n] = input scale · weight scale[n] / output scale`, rounded. A MatMul's
    /// bias is a separate float Add after the quantization.
    struct Linear {
        let matrix: QuantizedMatrix
        let output: Quantization
        let multipliers: [Float]
        let bias: [Float]
        let integerBias: [Int32]?

        /// The same product with its weights laid out for ``SparseRowGEMM``.
        func pairedByInputs() -> Linear {
            Linear(matrix: matrix.pairedByInputs(), output: output, multipliers: multipliers, bias: bias, integerBias: integerBias)
        }
    }

    struct Layer {
        let attentionNorm: Norm, attentionInput: Quantization
        let query: Linear, key: Linear, value: Linear
        /// q + bias and k scaled by 1/⁴√64 before their product, each then quantized.
        let headScale: Float
        let scaledQuery: Quantization, scaledKey: Quantization, valueHeads: Quantization
        let scores: Quantization, probabilities: Quantization, softmax: QuantizedSoftmax
        /// The attention's output, quantized after the product and again, with the same
        /// parameters, after the heads are joined (onnxruntime keeps one of the two).
        let context: Quantization
        let outputProjection: Linear
        let feedForwardNorm: Norm, feedForwardInput: Quantization
        let expand: Linear, expandedGELU: Quantization
        let contract: Linear
    }

    let input: Quantization
    let convolution1: Linear, gelu1: Quantization
    let convolution2: Linear
    let positions: [Float]  // [400][384]
    let layers: [Layer]
    let finalNorm: Norm, finalOutput: Quantization
    let poolProjection: Linear, poolTanh: Quantization
    let poolScore: Linear
    let pooled: Quantization
    let classifier1: Linear, classifierNorm: Norm, classifierGELU1: Quantization
    let classifier2: Linear, classifierGELU2: Quantization
    let classifier3: Linear

    static let width = 384, heads = 6, headWidth = 64, expanded = 1536, positionsCount = 400

    init(graph: ONNXGraph) throws(ModelError) {
        let walker = GraphWalker(graph: graph)
        input = try walker.quantization(after: "input_features").quantization
        let conv1 = try graph.node(op: "Conv", input: "inner.encoder.conv1.bias")
        convolution1 = try walker.linear(conv1, bias: nil)
        let (g1, g1Out) = try walker.quantization(after: try walker.follow(walker.dequantized(conv1.outputs[0]), to: "Mul", skipping: ["Div", "Erf", "Add"]).outputs[0])
        gelu1 = g1
        let conv2 = try graph.consumer(of: g1Out, op: "Conv")
        convolution2 = try walker.linear(conv2, bias: nil)
        positions = try graph.initializer("inner.encoder.embed_positions.weight", dims: [Self.positionsCount, Self.width]).floats()
        var layers: [Layer] = []
        for index in 0..<4 {
            layers.append(try walker.layer(index))
        }
        self.layers = layers
        finalNorm = try walker.norm("inner.encoder.layer_norm")
        let final = try walker.quantization(after: try graph.node(op: "LayerNormalization", input: "inner.encoder.layer_norm.weight").outputs[0])
        finalOutput = final.quantization
        let pool1 = try graph.consumer(of: final.dequantized, op: "MatMul")
        poolProjection = try walker.linear(pool1, bias: "inner.pool_attention.0.bias")
        let tanh = try walker.follow(try walker.dequantized(pool1.outputs[0]), to: "Tanh", skipping: ["Add"])
        let tanhQ = try walker.quantization(after: tanh.outputs[0])
        poolTanh = tanhQ.quantization
        let pool2 = try graph.consumer(of: tanhQ.dequantized, op: "MatMul")
        poolScore = try walker.linear(pool2, bias: "inner.pool_attention.2.bias")
        let sum = try walker.follow(final.dequantized, to: "ReduceSum", skipping: ["Mul"])
        let sumQ = try walker.quantization(after: sum.outputs[0])
        pooled = sumQ.quantization
        let gemm1 = try graph.consumer(of: sumQ.dequantized, op: "Gemm")
        classifier1 = try walker.linear(gemm1, bias: nil)
        classifierNorm = try walker.norm("inner.classifier.1")
        let gelu6 = try walker.follow(try graph.node(op: "LayerNormalization", input: "inner.classifier.1.weight").outputs[0], to: "Mul", skipping: ["Div", "Erf", "Add"])
        let gelu6Q = try walker.quantization(after: gelu6.outputs[0])
        classifierGELU1 = gelu6Q.quantization
        let gemm2 = try graph.consumer(of: gelu6Q.dequantized, op: "Gemm")
        classifier2 = try walker.linear(gemm2, bias: nil)
        let gelu7 = try walker.follow(try walker.dequantized(gemm2.outputs[0]), to: "Mul", skipping: ["Div", "Erf", "Add"])
        let gelu7Q = try walker.quantization(after: gelu7.outputs[0])
        classifierGELU2 = gelu7Q.quantization
        let gemm3 = try graph.consumer(of: gelu7Q.dequantized, op: "Gemm")
        classifier3 = try walker.linear(gemm3, bias: nil)
        guard try walker.follow(try walker.dequantized(gemm3.outputs[0]), to: "Sigmoid", skipping: ["Add"]).outputs == ["logits"] else {
            throw .unexpectedGraph("the classifier does not end in the sigmoid named logits")
        }
    }
}

extension GraphWalker {
    /// One encoder layer's weights and quantization points, found from its named norms and biases.
    func layer(_ index: Int) throws(ModelError) -> SmartTurnWeights.Layer {
        let prefix = "inner.encoder.layers.\(index)."
        let norm1 = try graph.node(op: "LayerNormalization", input: prefix + "self_attn_layer_norm.weight")
        let input1 = try quantization(after: norm1.outputs[0])
        let products = graph.consumers(of: input1.dequantized).filter { $0.opType == "MatMul" }
        guard products.count == 3 else { throw .unexpectedGraph("layer \(index) has \(products.count) projections, not 3") }
        var query: (ONNXGraph.Node, String)?, value: (ONNXGraph.Node, String)?, key: ONNXGraph.Node?
        for product in products {
            let result = try dequantized(product.outputs[0])
            let adds = graph.consumers(of: result).filter { $0.opType == "Add" }
            if adds.contains(where: { $0.inputs.contains(prefix + "self_attn.q_proj.bias") }) { query = (product, result) }
            else if adds.contains(where: { $0.inputs.contains(prefix + "self_attn.v_proj.bias") }) { value = (product, result) }
            else { key = product }
        }
        guard let query, let value, let key else { throw .unexpectedGraph("layer \(index)'s q, k and v projections") }
        let queryLinear = try linear(query.0, bias: prefix + "self_attn.q_proj.bias")
        let keyLinear = try linear(key, bias: nil)
        let valueLinear = try linear(value.0, bias: prefix + "self_attn.v_proj.bias")
        // q + bias, scaled; k, scaled; v + bias, split into heads: each then quantized.
        let queryScale = try follow(try graph.consumer(of: query.1, op: "Add").outputs[0], to: "Mul")
        let headScale = try graph.initializer(queryScale.inputs[1]).scalar()
        let scaledQuery = try quantization(after: queryScale.outputs[0])
        let keyScale = try follow(try dequantized(key.outputs[0]), to: "Mul")
        guard try graph.initializer(keyScale.inputs[1]).scalar() == headScale else {
            throw .unexpectedGraph("layer \(index) scales q and k differently")
        }
        let scaledKey = try quantization(after: keyScale.outputs[0])
        let valueHeads = try follow(try graph.consumer(of: value.1, op: "Add").outputs[0], to: "QuantizeLinear")
        let valueQ = try quantization(after: valueHeads.inputs[0])
        let scoresProduct = try graph.consumer(of: scaledQuery.dequantized, op: "MatMul")
        let scores = try quantization(after: scoresProduct.outputs[0])
        let softmax = try graph.consumer(of: scores.dequantized, op: "Softmax")
        let probabilities = try quantization(after: softmax.outputs[0])
        let contextProduct = try graph.consumer(of: probabilities.dequantized, op: "MatMul")
        guard contextProduct.inputs[1] == valueQ.dequantized else { throw .unexpectedGraph("layer \(index)'s attention does not read v") }
        let context1 = try quantization(after: contextProduct.outputs[0])
        let joined = try follow(context1.dequantized, to: "QuantizeLinear")
        let context2 = try quantization(after: joined.inputs[0])
        guard context1.quantization == context2.quantization else {
            throw .unexpectedGraph("layer \(index) quantizes the attention's output twice differently")
        }
        let outputProduct = try graph.consumer(of: context2.dequantized, op: "MatMul")
        let outputLinear = try linear(outputProduct, bias: prefix + "self_attn.out_proj.bias")

        let norm2 = try graph.node(op: "LayerNormalization", input: prefix + "final_layer_norm.weight")
        let input2 = try quantization(after: norm2.outputs[0])
        let fc1 = try graph.consumer(of: input2.dequantized, op: "MatMul")
        let expand = try linear(fc1, bias: prefix + "fc1.bias")
        let gelu = try follow(try graph.consumer(of: try dequantized(fc1.outputs[0]), op: "Add").outputs[0], to: "Mul", skipping: ["Div", "Erf", "Add"])
        let geluQ = try quantization(after: gelu.outputs[0])
        let fc2 = try graph.consumer(of: geluQ.dequantized, op: "MatMul")
        var contract = try linear(fc2, bias: prefix + "fc2.bias")
        for (name, linear) in [("q", queryLinear), ("k", keyLinear), ("v", valueLinear), ("out", outputLinear)]
        where linear.matrix.outputs != SmartTurnWeights.width || linear.matrix.inputs != SmartTurnWeights.width {
            throw .wrongShape("layer \(index)'s \(name) projection is \(linear.matrix.outputs)×\(linear.matrix.inputs)")
        }
        guard expand.matrix.inputs == SmartTurnWeights.width, expand.matrix.outputs == SmartTurnWeights.expanded,
              contract.matrix.inputs == SmartTurnWeights.expanded, contract.matrix.outputs == SmartTurnWeights.width else {
            throw .wrongShape("layer \(index)'s feed-forward is not 384→1536→384")
        }
        // A GELU quantized with zero point 0 rounds its whole negative side, and all below half
        // a step, to 0: most hidden values are 0, and the contraction skips them. Laid out only
        // once its shape is known to be the model's (the sparse product takes inputs in pairs).
        if geluQ.quantization.zeroPoint == 0 { contract = contract.pairedByInputs() }
        return SmartTurnWeights.Layer(
            attentionNorm: try norm(prefix + "self_attn_layer_norm"), attentionInput: input1.quantization,
            query: queryLinear, key: keyLinear, value: valueLinear, headScale: headScale,
            scaledQuery: scaledQuery.quantization, scaledKey: scaledKey.quantization, valueHeads: valueQ.quantization,
            scores: scores.quantization, probabilities: probabilities.quantization,
            softmax: QuantizedSoftmax(input: scores.quantization, output: probabilities.quantization, length: SmartTurnWeights.positionsCount),
            context: context2.quantization, outputProjection: outputLinear,
            feedForwardNorm: try norm(prefix + "final_layer_norm"), feedForwardInput: input2.quantization,
            expand: expand, expandedGELU: geluQ.quantization, contract: contract)
    }
}
