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
/// convolution of 258 filters of 256 taps, stride 128: four frames of 129 magnitudes, run as
/// the windowed FFT those filters are, ``SileroSTFT``); four
/// convolutions of width 3 with ReLU (strides 1, 2, 2, 1: 129→128→64→64→128 channels, four
/// frames to one); an LSTM cell of 128 whose state carries from frame to frame; ReLU, a
/// 1×1 convolution and a sigmoid. About 420,000 multiply-adds a frame besides the FFT, on
/// buffers allocated once: ``probability(of:)`` allocates nothing. Each convolution computes
/// all its output frames in one pass over its weights.
public final class SileroVAD {
    public static let sampleRate = 16_000
    public static let frameLength = 512
    static let contextLength = 64
    private static let stftFrames = SileroSTFT.frames
    private static let hidden = 128

    private struct Convolution {
        let weight: [Float]  // [out][in][3]
        let bias: [Float]
        let inputs: Int, outputs: Int, stride: Int
    }

    private let stft: SileroSTFT
    private let convolutions: [Convolution]
    private let inputWeight: [Float], recurrentWeight: [Float], gateBias: [Float]  // [512][128], bias_ih + bias_hh
    private let decoderWeight: [Float]
    private let decoderBias: Float

    // State and scratch, allocated once.
    private let signal = UnsafeMutablePointer<Float>.allocate(capacity: 640)
    private let planes = UnsafeMutablePointer<Float>.allocate(capacity: 2 * 129 * 4)  // two [channels][4] planes
    private let windows = UnsafeMutablePointer<Float>.allocate(capacity: 4 * 129 * 3)  // [output frame][channel][tap]
    private let products = UnsafeMutablePointer<Float>.allocate(capacity: 4 * 128)  // [output frame][channel]
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
        stft = try SileroSTFT(basis: graph.initializer("model.stft.forward_basis_buffer", dims: [258, 1, 256]).floats())
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
        for p in [signal, planes, windows, products, gates, recurrent, hiddenState, cellState, context] { p.deallocate() }
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
        stft.magnitudes(signal, into: planes)

        // The encoder: each convolution reads one plane and writes the other.
        var input = planes, output = planes + 129 * 4
        var frames = Self.stftFrames
        for convolution in convolutions {
            let outFrames = (frames + 2 - 3) / convolution.stride + 1
            convolution.weight.withUnsafeBufferPointer { weight in
                convolution.bias.withUnsafeBufferPointer { bias in
                    let columns = convolution.inputs * 3
                    for t in 0..<outFrames {
                        // The receptive field of output t, [channel][tap], zero past the edges.
                        let start = t * convolution.stride - 1
                        let window = windows + t * columns
                        for c in 0..<convolution.inputs {
                            for k in 0..<3 {
                                let s = start + k
                                window[c * 3 + k] = s >= 0 && s < frames ? input[c * frames + s] : 0
                            }
                        }
                    }
                    FloatKernels.multiply(weight.baseAddress!, rows: convolution.outputs, columns: columns,
                                          vectors: windows, count: outFrames, bias: bias.baseAddress!, into: products)
                    for t in 0..<outFrames {
                        for o in 0..<convolution.outputs { output[o * outFrames + t] = max(products[t * convolution.outputs + o], 0) }
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
        // Four units at a time.
        var logits = SIMD4<Float>()
        decoderWeight.withUnsafeBufferPointer { decoder in
            for j in stride(from: 0, to: Self.hidden, by: 4) {
                func gate(_ offset: Int) -> SIMD4<Float> { FloatKernels.load4(gates + offset + j) + FloatKernels.load4(recurrent + offset + j) }
                let i = FloatKernels.sigmoid(gate(0))
                let f = FloatKernels.sigmoid(gate(128))
                let g = FloatKernels.tanh(gate(256))
                let o = FloatKernels.sigmoid(gate(384))
                let c = f * FloatKernels.load4(cellState + j) + i * g
                FloatKernels.store4(c, cellState + j)
                let h = o * FloatKernels.tanh(c)
                FloatKernels.store4(h, hiddenState + j)
                logits += FloatKernels.load4(decoder.baseAddress! + j) * h.replacing(with: 0, where: h .< 0)
            }
        }
        return FloatKernels.sigmoid(decoderBias + logits.sum())
    }
}
