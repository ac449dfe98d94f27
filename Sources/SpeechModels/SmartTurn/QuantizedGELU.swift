/// A GELU between two quantizations as a table: its input is a product's requantized result
/// (256 steps) plus, for a MatMul, a bias per column, so for each column the quantized output
/// of every input step can be computed once, when the model loads (`[column][step]`, 256
/// entries a column, each the output's uint8 step: half the memory of centred Int16, 1.6 MB
/// for the four feed-forward tables). The same arithmetic as computing it each time, so the
/// same results.
enum QuantizedGELU {
    static func table(_ product: SmartTurnWeights.Linear, bias: [Float]?, then output: Quantization) -> [UInt8] {
        let columns = bias?.count ?? 1
        var table = [UInt8](repeating: 0, count: columns * 256)
        let zero = product.output.zeroPoint
        for column in 0..<columns {
            for step in 0..<256 {
                let value = Float(Int32(step) - zero) * product.output.scale + (bias?[column] ?? 0)
                table[column * 256 + step] = UInt8(Int32(output.centred(FloatKernels.gelu(value))) + output.zeroPoint)
            }
        }
        return table
    }
}
