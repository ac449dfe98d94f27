#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// smart-turn v3.2 (BSD-2, pipecat-ai/smart-turn) in Swift: given Whisper log-mel features of
/// the last 8 s, the probability that the speaker has finished their turn.
///
/// The network: Whisper-tiny's encoder (two convolutions with GELU, 400 positions of 384, four
/// pre-norm transformer layers of six heads with a 1536-wide feed-forward, a final norm),
/// attention pooling over time (384 → 256 → tanh → 1, softmax) and a classifier (384 → 256,
/// norm, GELU → 64, GELU → 1, sigmoid). It runs as the int8 QDQ export defines it: every
/// product takes 8-bit operands (``IntegerGEMM``: exact integer sums) and every quantization
/// point of the graph rounds its activation onto the same grid onnxruntime uses.
///
/// Buffers are allocated once: ``probability(features:)`` allocates nothing. On two threads
/// every row-wise stage runs in two lanes of rows (``LaneTeam``), each with its own scratch
/// (``SmartTurnLane``); the integer sums are exact and every other step is a row's own, so
/// the result is the same to the bit on one thread or two.
public final class SmartTurnModel: LaneWork {
    let weights: SmartTurnWeights
    static let width = SmartTurnWeights.width, positions = SmartTurnWeights.positionsCount
    static let heads = SmartTurnWeights.heads, headWidth = SmartTurnWeights.headWidth
    static let expanded = SmartTurnWeights.expanded
    static let frames = WhisperFeatures.frames, bins = WhisperFeatures.bins

    let residual: UnsafeMutablePointer<Float>  // [400][384]
    let activations: UnsafeMutablePointer<Int16>  // centred operands, [400][384]
    /// The padded quantized features, then lane 0's block of the feed-forward expansion, and
    /// the pooling's scores.
    let columns: UnsafeMutablePointer<Int16>
    /// A row of zeros, then the queries, keys and values. Before the layers it holds the first
    /// convolution's output ([800][384]), which the second reads in place, its first window
    /// starting on the row of zeros (its padding): no buffer for it alone (0.3 MB less). In
    /// the feed-forward stage the queries' room is lane 1's expansion block.
    private let headsArea: UnsafeMutablePointer<Int16>
    var convolved: UnsafeMutablePointer<Int16> { headsArea + Self.width }
    let queries: UnsafeMutablePointer<Int16>, keys: UnsafeMutablePointer<Int16>  // [head][400][64]
    let values: UnsafeMutablePointer<Int16>  // [head][400 / 2][64][2] (``SparsePairGEMM``)
    private let timeWeights: UnsafeMutablePointer<Float>
    /// One lane on one thread, two on two.
    let lanes: [SmartTurnLane]
    private let team: LaneTeam?
    /// What ``performLane(_:)`` does: set by ``run(_:)`` before the lanes start.
    private var stage = Stage.convolution1
    /// The GELUs after the first convolution and each feed-forward expansion, as tables
    /// (``QuantizedGELU``).
    let convolutionGELU: [UInt8]
    /// The GELU of each of the second convolution's 256 output steps, in float.
    let convolution2GELU: [Float]
    let expandedGELU: [[UInt8]]

    /// Called with each quantized activation as it is computed (its graph's QuantizeLinear
    /// output name and the uint8 values, in the graph's layout where it is [t][c]-ordered):
    /// for comparing a run with onnxruntime's, stage by stage. Nil in the daemon. While it is
    /// set the lanes run one after the other, in order.
    public var inspect: ((String, [UInt8]) -> Void)?
    /// The feed-forward expansion and contraction of the current layer, gathered for `inspect`.
    var inspectedExpansion: [UInt8] = [], inspectedContraction: [UInt8] = []

    func report(_ name: String, _ values: UnsafePointer<Int16>, count: Int, zeroPoint: Int32) {
        guard let inspect else { return }
        inspect(name, (0..<count).map { UInt8(Int32(values[$0]) + zeroPoint) })
    }

    /// Loads the model from its ONNX file's bytes. With `threads: 2` every stage is shared
    /// with a second thread (a kiosk board's second core).
    public convenience init(onnx bytes: [UInt8], threads: Int = 1) throws(ModelError) {
        try self.init(weights: SmartTurnWeights(graph: ONNXModel(bytes: bytes).graph), threads: threads)
    }

    init(weights: SmartTurnWeights, threads: Int = 1) {
        self.weights = weights
        convolutionGELU = QuantizedGELU.table(weights.convolution1, bias: nil, then: weights.gelu1)
        let output = weights.convolution2.output
        convolution2GELU = (0..<256).map { FloatKernels.gelu(Float(Int32($0) - output.zeroPoint) * output.scale) }
        expandedGELU = weights.layers.map { QuantizedGELU.table($0.expand, bias: $0.expand.bias, then: $0.expandedGELU) }
        let area = Self.positions * Self.width
        residual = .allocate(capacity: area)
        activations = .allocate(capacity: area)
        columns = .allocate(capacity: max((Self.frames + 2) * Self.bins, Self.positions * Self.poolWidth, Self.feedForwardBlock * Self.expanded))
        precondition(3 * area >= Self.frames * Self.width, "the first convolution's output fits the heads' area")
        precondition(area >= Self.feedForwardBlock * Self.expanded, "an expansion block fits the queries' room")
        headsArea = .allocate(capacity: Self.width + 3 * area)
        headsArea.initialize(repeating: 0, count: Self.width)
        queries = headsArea + Self.width
        keys = queries + area
        values = keys + area
        timeWeights = .allocate(capacity: Self.positions)
        let two = threads > 1
        lanes = two ? [SmartTurnLane(expansion: columns), SmartTurnLane(expansion: queries)] : [SmartTurnLane(expansion: columns)]
        team = two ? LaneTeam() : nil
    }

    deinit {
        team?.stop()
        residual.deallocate(); activations.deallocate(); columns.deallocate()
        headsArea.deallocate(); timeWeights.deallocate()
        for lane in lanes { lane.deallocate() }
    }

    /// Query rows of attention done at a time in a lane: one head's scores and probabilities
    /// for them fit the lane's sums and probabilities ([100][400]).
    static let attentionBlock = 100
    /// Rows of the feed-forward block done at a time: their expansion ([100][1536]) fits a
    /// lane's expansion block, its product the lane's sums in thirds of columns (blocks of 52
    /// rows took 17 % longer: each block widens the weights again).
    static let feedForwardBlock = 100
    /// The attention pooling's hidden width.
    static let poolWidth = 256

    /// The row-wise stages of an inference, each run in lanes.
    enum Stage {
        case convolution1, convolution2
        /// A layer's first norm and its queries, keys and values.
        case projections(Int)
        case attention(Int)
        /// A layer's output projection, second norm and feed-forward block.
        case feedForward(Int)
        /// The final norm and the pooling's scores.
        case pooling
    }

    /// Lane `index`'s rows of `total`: halves on a multiple of four (attention's blocks).
    func rows(_ total: Int, lane index: Int) -> Range<Int> {
        guard lanes.count == 2 else { return 0..<total }
        let split = total / 2 / 4 * 4
        return index == 0 ? 0..<split : split..<total
    }

    /// Runs `stage` in every lane, returning when all are done.
    private func run(_ stage: Stage) {
        self.stage = stage
        if let team, inspect == nil {
            team.run(self)
        } else {
            for index in lanes.indices { performLane(index) }
        }
    }

    func performLane(_ index: Int) {
        let lane = lanes[index]
        switch stage {
        case .convolution1: convolution1(frames: rows(Self.frames, lane: index), lane)
        case .convolution2: convolution2(positions: rows(Self.positions, lane: index), lane)
        case .projections(let l): projections(weights.layers[l], rows: rows(Self.positions, lane: index), lane)
        case .attention(let l): attend(weights.layers[l], rows: rows(Self.positions, lane: index), lane)
        case .feedForward(let l):
            feedForward(weights.layers[l], index: l, last: l == weights.layers.count - 1, rows: rows(Self.positions, lane: index), lane)
        case .pooling: poolingScores(rows: rows(Self.positions, lane: index), lane)
        }
    }

    /// Room for the features [80][800] given to ``probability(features:until:)``: it reads them
    /// first, then uses the room as its residual stream (a caller's buffer less: 0.25 MB).
    public var featureScratch: UnsafeMutablePointer<Float> { residual }

    /// The probability that the turn is finished, from features [80][800] (``WhisperFeatures``).
    public func probability(features: UnsafePointer<Float>) -> Float {
        probability(features: features, until: { false })!
    }

    /// The same, given up (nil) when `stop` says so: it is asked after each convolution and each
    /// layer, about a sixth of the work apart. A question asked ahead of a pause that the learner
    /// then breaks is not worth finishing (``TurnCompletionWorker/withdraw(token:)``).
    public func probability(features: UnsafePointer<Float>, until stop: () -> Bool) -> Float? {
        let w = weights
        let frames = Self.frames, bins = Self.bins
        // The quantized features, [t][80] with a frame of zeros (the padding) at each end, for
        // the first convolution (``convolution1(frames:_:)``).
        let input = w.input
        let padded = columns
        padded.update(repeating: 0, count: bins)
        (padded + (frames + 1) * bins).update(repeating: 0, count: bins)
        for c in 0..<bins {
            for t in 0..<frames { padded[(t + 1) * bins + c] = input.centred(features[c * frames + t]) }
        }
        run(.convolution1)
        report("gelu_QuantizeLinear_Output", convolved, count: frames * Self.width, zeroPoint: w.gelu1.zeroPoint)
        if stop() { return nil }
        run(.convolution2)
        for index in w.layers.indices {
            if stop() { return nil }
            let layer = w.layers[index]
            run(.projections(index))
            report("attention_input", activations, count: Self.positions * Self.width, zeroPoint: layer.attentionInput.zeroPoint)
            run(.attention(index))
            report("context", activations, count: Self.positions * Self.width, zeroPoint: layer.context.zeroPoint)
            inspectedExpansion = []
            inspectedContraction = []
            run(.feedForward(index))
            report("feed_forward_input", activations, count: Self.positions * Self.width, zeroPoint: layer.feedForwardInput.zeroPoint)
            if inspect != nil {
                inspect?("expanded_gelu", inspectedExpansion)
                inspect?("contract", inspectedContraction)
            }
        }
        run(.pooling)
        return classify()
    }

    /// The attention pooling's softmax over time and the classifier, on lane 0 (small: a
    /// product of one row at a time).
    private func classify() -> Float {
        let w = weights, lane = lanes[0], positions = Self.positions, width = Self.width
        let pooled = residual, tanhScores = columns, row = lane.row
        product(tanhScores, rows: positions, w.poolScore, lane)
        let weightsOverTime = timeWeights
        for t in 0..<positions {
            result(t, of: w.poolScore, lane)
            weightsOverTime[t] = row[0] + w.poolScore.bias[0]
        }
        FloatKernels.softmax(weightsOverTime, count: positions)
        let pooledVector = activations
        for c in 0..<width {
            var sum: Float = 0
            for t in 0..<positions { sum += pooled[t * width + c] * weightsOverTime[t] }
            pooledVector[c] = w.pooled.centred(sum)
        }
        product(pooledVector, rows: 1, w.classifier1, lane)
        result(0, of: w.classifier1, lane)
        let normalized = residual  // free now: the pooling has read it
        w.classifierNorm.weight.withUnsafeBufferPointer { g in
            w.classifierNorm.bias.withUnsafeBufferPointer { b in
                FloatKernels.layerNorm(row, count: 256, weight: g.baseAddress!, bias: b.baseAddress!, into: normalized)
            }
        }
        for j in 0..<256 { activations[j] = w.classifierGELU1.centred(FloatKernels.gelu(normalized[j])) }
        product(activations, rows: 1, w.classifier2, lane)
        result(0, of: w.classifier2, lane)
        for j in 0..<64 { activations[j] = w.classifierGELU2.centred(FloatKernels.gelu(row[j])) }
        product(activations, rows: 1, w.classifier3, lane)
        result(0, of: w.classifier3, lane)
        return FloatKernels.sigmoid(row[0])
    }
}
