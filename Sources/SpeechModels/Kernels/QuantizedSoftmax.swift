#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// onnxruntime's QLinearSoftmax (uint8), which its optimizer puts in place of each
/// DequantizeLinear–Softmax–QuantizeLinear of the attention: exponentials from a table of the
/// 256 input steps (shifted so that the row's maximum sits at the top), summed in float in the
/// row's order, and each output `round(e · ⌊1 / output scale⌋ / sum)` with that division in
/// double; the floor is the kernel's.
///
/// Two details are onnxruntime 1.32's as measured, not as its source reads (38.4 million
/// probabilities of ten windows' attention, taken from its graph, and a one-node model of it
/// fed each row in 30 orders): the table's shift keeps a row's sum finite with
/// ln(FLT_MAX / length) − 5 input steps where that logarithm is a float's (C++'s `log` of a
/// float argument is `logf`), and the division that rounds is done in double. With the
/// logarithm in double and the division in float, about one probability in a million sat on
/// the other side of a rounding boundary (194.49998 steps where onnxruntime read 194.50002),
/// and the next layers spread that step (docs/audio.md).
struct QuantizedSoftmax {
    let table: [Float]
    let outputSteps: Float
    let output: Quantization

    init(input: Quantization, output: Quantization, length: Int) {
        let shift = max(0, Double(logf(Float.greatestFiniteMagnitude / Float(length))) - 5) / Double(input.scale)
        table = (0..<256).map { Float(exp((Double($0) - 255 + shift) * Double(input.scale))) }
        outputSteps = (1 / output.scale).rounded(.down)
        self.output = output
    }
}
