@testable import SpeechModels
import XCTest

/// How smart-turn's weights are laid out once loaded: the kernels each product gets.
final class SmartTurnWeightsTests: XCTestCase {
    /// The feed-forward contraction after a GELU quantized with zero point 0 (layers 2 and 3 of
    /// v3.2: steps of 0.44 and 1.33, most hidden values 0) is laid out for the sparse kernel;
    /// the others (zero points 7 and 5: a third of the values 0) and every other product stay
    /// in rows for the dense one.
    func testOnlyTheRectifiedLayersContractSparsely() throws {
        let weights = try SmartTurnWeights(graph: ONNXModel(bytes: ONNXReference.bytes(ONNXReference.smartTurn)).graph)
        XCTAssertEqual(weights.layers.map(\.expandedGELU.zeroPoint), [7, 5, 0, 0])
        XCTAssertEqual(weights.layers.map { $0.contract.matrix.layout == .pairedInputs }, [false, false, true, true])
        for layer in weights.layers {
            for linear in [layer.query, layer.key, layer.value, layer.outputProjection, layer.expand] {
                XCTAssertEqual(linear.matrix.layout, .rows)
            }
            XCTAssertEqual(layer.contract.matrix.values.count, 384 * 1536, "re-laid in place, not copied")
        }
    }
}
