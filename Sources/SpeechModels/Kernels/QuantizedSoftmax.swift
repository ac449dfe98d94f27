#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// onnxruntime's QLinearSoftmax (uint8), which its optimizer puts in place of each
/// DequantizeLinear–Softmax–QuantizeLinear of the attention: exponentials from a table of the
/// 256 input steps (shifted so that the row's maximum sits at the top), summed in float, and
/// each output `round(e · ⌊1 / output scale⌋ / sum)`; the floor is the kernel's.
struct QuantizedSoftmax {
    let table: [Float]
    let outputSteps: Float
    let output: Quantization

    init(input: Quantization, output: Quantization, length: Int) {
        let shift = max(0, log(Double(Float.greatestFiniteMagnitude) / Double(length)) - 5) / Double(input.scale)
        table = (0..<256).map { Float(exp((Double($0) - 255 + shift) * Double(input.scale))) }
        outputSteps = (1 / output.scale).rounded(.down)
        self.output = output
    }
}
