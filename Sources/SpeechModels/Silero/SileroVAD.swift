#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Silero VAD v6 (MIT, snakers4/silero-vad) at 16 kHz, run in Swift on the weights of its ONNX
/// export `silero_vad_op18_ifless.onnx`: per 512-sample frame (32 ms), the probability that
/// the frame holds speech.
///
/// The network, as the export's 16 kHz branch computes it: the frame behind 64 samples of
/// the previous one, reflect-padded by 64 at the end (640 samples); a learned STFT (a
/// convolution of 258 filters of 256 taps, stride 128: four frames of 129 magnitudes); four
/// convolutions of width 3 with ReLU (strides 1, 2, 2, 1: 129→128→64→64→128 channels, four
/// frames to one); an LSTM cell of 128 whose state carries from frame to frame; ReLU, a
/// 1×1 convolution and a sigmoid. About 680,000 multiply-adds a frame, on buffers allocated
/// once: ``probability(of:)`` allocates nothing.
public final class SileroVAD {
    public static let sampleRate = 16_000
    public static let frameLength = 512
    static let contextLength = 64
    private static let windowLength = 256, hop = 128, bins = 129, stftFrames = 4
    private static let hidden = 128

    private struct Convolution {
        let weight: [Float]  // [out][in][3]
        let bias: [Float]
        let inputs: Int, outputs: Int, stride: Int
    }

    private let basis: [Float]  // [258][256]: 129 real then 129 imaginary filters
    private let convolutions: [Convolution]
    private let inputWeight: [Float], recurrentWeight: [Float], gateBias: [Float]  // [512][128], bias_ih + bias_hh
    private let decoderWeight: [Float]
    private let decoderBias: Float

    // State and scratch, allocated once.
    private let signal = UnsafeMutablePointer<Float>.allocate(capacity: 640)
    private let spectrum = UnsafeMutablePointer<Float>.allocate(capacity: 258)
    private let planes = UnsafeMutablePointer<Float>.allocate(capacity: 2 * 129 * 4)  // two [channels][4] planes
    private let window = UnsafeMutablePointer<Float>.allocate(capacity: 129 * 3)
    private let gates = UnsafeMutablePointer<Float>.allocate(capacity: 512)
    private let recurrent = UnsafeMutablePointer<Float>.allocate(capacity: 512)
    private let hiddenState = UnsafeMutablePointer<Float>.allocate(capacity: 128)
    private let cellState = UnsafeMutablePointer<Float>.allocate(capacity: 128)
    private let context = UnsafeMutablePointer<Float>.allocate(capacity: 64)

    /// Loads the weights from the ONNX file's bytes; throws when the file is not that export.
    public init(onnx bytes: [UInt8]) throws(ModelError) {
        let graph = try ONNXModel(bytes: bytes).graph
        guard let branch = graph.nodes.first(where: { $0.opType == "If" }),
              let sixteen = branch.attributes["then_branch"]?.graph,
              sixteen.nodes.contains(where: { $0.inputs.contains("model.stft.forward_basis_buffer") })
        else { throw .unexpectedGraph("no If whose then-branch is the 16 kHz model") }
        basis = try graph.initializer("model.stft.forward_basis_buffer", dims: [258, 1, 256]).floats()
        var convolutions: [Convolution] = []
        for (index, (inputs, outputs, stride)) in [(129, 128, 1), (128, 64, 2), (64, 64, 2), (64, 128, 1)].enumerated() {
            let prefix = "model.encoder.\(index).reparam_conv."
            convolutions.append(Convolution(
                weight: try graph.initializer(prefix + "weight", dims: [outputs, inputs, 3]).floats(),
                bias: try graph.initializer(prefix + "bias", dims: [outputs]).floats(),
                inputs: inputs, outputs: outputs, stride: stride))
        }
        self.convolutions = convolutions
        inputWeight = try graph.initializer("model.decoder.rnn.weight_ih", dims: [512, 128]).floats()
        recurrentWeight = try graph.initializer("model.decoder.rnn.weight_hh", dims: [512, 128]).floats()
        let ih = try graph.initializer("model.decoder.rnn.bias_ih", dims: [512]).floats()
        let hh = try graph.initializer("model.decoder.rnn.bias_hh", dims: [512]).floats()
        gateBias = zip(ih, hh).map { $0 + $1 }
        decoderWeight = try graph.initializer("model.decoder.decoder.2.weight", dims: [1, 128, 1]).floats()
        decoderBias = try graph.initializer("model.decoder.decoder.2.bias", dims: [1]).floats()[0]
        reset()
    }

    deinit {
        for p in [signal, spectrum, planes, window, gates, recurrent, hiddenState, cellState, context] { p.deallocate() }
    }

    /// Forgets the recurrent state and the previous frame's tail: the next frame starts a stream.
    public func reset() {
        hiddenState.initialize(repeating: 0, count: 128)
        cellState.initialize(repeating: 0, count: 128)
        context.initialize(repeating: 0, count: 64)
    }

    /// The probability that `frame` (512 samples at 16 kHz, float in [-1, 1]) holds speech,
    /// given the frames before it since the last ``reset()``.
    public func probability(of frame: UnsafeBufferPointer<Float>) -> Float {
        precondition(frame.count == Self.frameLength, "Silero VAD takes frames of 512 samples")
        // Context, frame, and a reflection of the frame's last 64 samples past its end.
        signal.update(from: context, count: 64)
        (signal + 64).update(from: frame.baseAddress!, count: 512)
        for i in 0..<64 { signal[576 + i] = signal[574 - i] }
        context.update(from: signal + 512, count: 64)

        // The learned STFT's magnitudes, stored [bin][frame].
        let magnitudes = planes
        basis.withUnsafeBufferPointer { basis in
            for t in 0..<Self.stftFrames {
                FloatKernels.multiply(basis.baseAddress!, rows: 258, columns: 256, signal + t * Self.hop, bias: nil, into: spectrum)
                for c in 0..<Self.bins {
                    let re = spectrum[c], im = spectrum[129 + c]
                    magnitudes[c * 4 + t] = (re * re + im * im).squareRoot()
                }
            }
        }

        // The encoder: each convolution reads one plane and writes the other.
        var input = planes, output = planes + 129 * 4
        var frames = Self.stftFrames
        for convolution in convolutions {
            let outFrames = (frames + 2 - 3) / convolution.stride + 1
            convolution.weight.withUnsafeBufferPointer { weight in
                convolution.bias.withUnsafeBufferPointer { bias in
                    for t in 0..<outFrames {
                        // The receptive field of output t, [channel][tap], zero past the edges.
                        let start = t * convolution.stride - 1
                        for c in 0..<convolution.inputs {
                            for k in 0..<3 {
                                let s = start + k
                                window[c * 3 + k] = s >= 0 && s < frames ? input[c * frames + s] : 0
                            }
                        }
                        FloatKernels.multiply(weight.baseAddress!, rows: convolution.outputs, columns: convolution.inputs * 3,
                                              window, bias: bias.baseAddress!, into: spectrum)
                        for o in 0..<convolution.outputs { output[o * outFrames + t] = max(spectrum[o], 0) }
                    }
                }
            }
            swap(&input, &output)
            frames = outFrames
        }

        // The LSTM cell on the encoder's single frame; gates in PyTorch's order i, f, g, o.
        inputWeight.withUnsafeBufferPointer { w in
            gateBias.withUnsafeBufferPointer { b in
                FloatKernels.multiply(w.baseAddress!, rows: 512, columns: 128, input, bias: b.baseAddress!, into: gates)
            }
        }
        recurrentWeight.withUnsafeBufferPointer { w in
            FloatKernels.multiply(w.baseAddress!, rows: 512, columns: 128, hiddenState, bias: nil, into: recurrent)
        }
        var logit = decoderBias
        for j in 0..<Self.hidden {
            let i = FloatKernels.sigmoid(gates[j] + recurrent[j])
            let f = FloatKernels.sigmoid(gates[128 + j] + recurrent[128 + j])
            let g = tanhf(gates[256 + j] + recurrent[256 + j])
            let o = FloatKernels.sigmoid(gates[384 + j] + recurrent[384 + j])
            let c = f * cellState[j] + i * g
            cellState[j] = c
            let h = o * tanhf(c)
            hiddenState[j] = h
            logit += decoderWeight[j] * max(h, 0)
        }
        return FloatKernels.sigmoid(logit)
    }
}
