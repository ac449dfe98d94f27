"""The reference the Swift models are checked against: onnxruntime (PyPI) running the same
ONNX files, fed as their upstream wrappers feed them.

  reference.py silero MODEL FRAMES.f32        one stream of 512-sample frames at 16 kHz, with
                                              silero-vad's OnnxWrapper's 64-sample context and
                                              state: one probability per line
  reference.py features FEATURES_PY AUDIO.f32 WINDOWS
                                              pipecat's Whisper log-mel features of each 8 s
                                              window (128000 samples): float32 80x800 to stdout
  reference.py smart-turn MODEL FEATURES.f32 [unoptimized]
                                              the model on each 80x800 window, as pipecat's
                                              LocalSmartTurnAnalyzerV3 runs it (or with
                                              onnxruntime's graph optimizations off): one
                                              probability per line

  reference.py speed SILERO SMART_TURN FEATURES_PY AUDIO.f32 [THREADS]
                                              onnxruntime's times on 8 s of 16 kHz audio: per
                                              Silero frame and per smart-turn window (median
                                              and p90 in microseconds), beside which
                                              SpeechModelBenchmarks runs the Swift models on the
                                              same recording
  reference.py layer-norm WIDTH ROWS.f32      onnxruntime's LayerNormalization (opset 18, ε 1e-5,
                                              the last axis) of float32 rows: the file holds
                                              the weight (WIDTH), the bias (WIDTH), then the
                                              rows; the outputs as float32 to stdout

All with one thread unless told, as the benchmark measures it.
"""
import sys
import numpy as np
import onnxruntime as ort


def session(path, optimized=True):
    options = ort.SessionOptions()
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
                                        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    # On x86-64 without VNNI (AVX2 alone, e.g. AMD Zen 3) MLAS multiplies u8 by s8 with
    # vpmaddubsw, whose pairs of products saturate at 16 bits: smart-turn's probabilities then
    # moved by up to 0.09 and 23 of 200 decisions at 0.5 changed. This option (onnxruntime PR
    # #12088) has it multiply u8 by u8 there instead, exactly, as VNNI and the Swift code do;
    # on a CPU with VNNI it changes nothing.
    options.add_session_config_entry("session.x64quantprecision", "1")
    return ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])


def silero(model, frames_path):
    frames = np.fromfile(frames_path, dtype=np.float32).reshape(-1, 512)
    s = session(model)
    state = np.zeros((2, 1, 128), dtype=np.float32)
    context = np.zeros((1, 64), dtype=np.float32)
    sr = np.array(16000, dtype=np.int64)
    for frame in frames:
        x = np.concatenate([context, frame[None, :]], axis=1)
        out, state = s.run(None, {"input": x, "state": state, "sr": sr})
        context = x[:, -64:]
        print("%.9f" % out[0, 0])


def features(features_py, audio_path, count):
    import importlib.util
    spec = importlib.util.spec_from_file_location("whisper_features", features_py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    audio = np.fromfile(audio_path, dtype=np.float32).reshape(int(count), 128000)
    out = sys.stdout.buffer
    for window in audio:
        out.write(module.compute_whisper_log_mel_features(window, do_normalize=True).astype(np.float32).tobytes())


def smart_turn(model, features_path, optimization="optimized"):
    windows = np.fromfile(features_path, dtype=np.float32).reshape(-1, 1, 80, 800)
    s = session(model, optimization == "optimized")
    for window in windows:
        print("%.9f" % s.run(None, {"input_features": window})[0][0].item())


def speed(silero_model, smart_turn_model, features_py, audio_path, threads="1"):
    import importlib.util, time
    spec = importlib.util.spec_from_file_location("whisper_features", features_py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    audio = np.fromfile(audio_path, dtype=np.float32)[:128000]

    def timed(run, count):
        times = []
        for _ in range(count):
            start = time.perf_counter()
            run()
            times.append((time.perf_counter() - start) * 1e6)
        times.sort()
        return times[len(times) // 2], times[int(len(times) * 0.9)]

    options = ort.SessionOptions()
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = int(threads)
    s = ort.InferenceSession(silero_model, sess_options=options, providers=["CPUExecutionProvider"])
    state = np.zeros((2, 1, 128), dtype=np.float32)
    sr = np.array(16000, dtype=np.int64)
    frames = [np.concatenate([audio[i - 64:i] if i else np.zeros(64, np.float32), audio[i:i + 512]])[None, :]
              for i in range(0, 128000 - 512, 512)]
    position = [0]

    def frame():
        nonlocal state
        out, state = s.run(None, {"input": frames[position[0] % len(frames)], "state": state, "sr": sr})
        position[0] += 1
    print("silero frame: median %.1f us, p90 %.1f us" % timed(frame, 2000))
    t = ort.InferenceSession(smart_turn_model, sess_options=options, providers=["CPUExecutionProvider"])
    window = module.compute_whisper_log_mel_features(audio, do_normalize=True)[None, :, :]
    print("smart-turn window (%s thread): median %.0f us, p90 %.0f us" % ((threads,) + timed(lambda: t.run(None, {"input_features": window}), 30)))
    print("pipecat features: median %.0f us, p90 %.0f us" % timed(lambda: module.compute_whisper_log_mel_features(audio, do_normalize=True), 20))


def layer_norm_model(width):
    """A one-node ONNX model, LayerNormalization over [N][width], written as protobuf bytes here:
    the onnx package is not in the environment, and onnxruntime loads a model from bytes."""
    def varint(n):
        out = bytearray()
        while True:
            byte, n = n & 0x7F, n >> 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    def field(number, value):  # bytes: length-delimited; int: varint
        if isinstance(value, int):
            return varint(number << 3) + varint(value)
        return varint(number << 3 | 2) + varint(len(value)) + value

    def text(number, value):
        return field(number, value.encode())

    def tensor(name, dims):  # ValueInfoProto of a float tensor; a str dim is symbolic
        shape = b"".join(field(1, text(2, d) if isinstance(d, str) else field(1, d)) for d in dims)
        return text(1, name) + field(2, field(1, field(1, 1) + field(2, shape)))

    epsilon = varint(2 << 3 | 5) + np.float32(1e-5).tobytes()  # AttributeProto.f, fixed32
    node = (text(1, "x") + text(1, "scale") + text(1, "bias") + text(2, "y") + text(4, "LayerNormalization")
            + field(5, text(1, "epsilon") + epsilon + field(20, 1)) + field(5, text(1, "axis") + field(3, 2**64 - 1) + field(20, 2)))
    graph = (field(1, node) + text(2, "layer_norm") + field(11, tensor("x", ["N", width])) + field(11, tensor("scale", [width]))
             + field(11, tensor("bias", [width])) + field(12, tensor("y", ["N", width])))
    return field(1, 9) + field(7, graph) + field(8, text(1, "") + field(2, 18))


def layer_norm(width, rows_path):
    width = int(width)
    data = np.fromfile(rows_path, dtype=np.float32)
    scale, bias, rows = data[:width], data[width:2 * width], data[2 * width:].reshape(-1, width)
    options = ort.SessionOptions()
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1
    s = ort.InferenceSession(layer_norm_model(width), sess_options=options, providers=["CPUExecutionProvider"])
    sys.stdout.buffer.write(s.run(None, {"x": rows, "scale": scale, "bias": bias})[0].astype(np.float32).tobytes())


if __name__ == "__main__":
    {"silero": silero, "features": features, "smart-turn": smart_turn, "speed": speed,
     "layer-norm": layer_norm}[sys.argv[1]](*sys.argv[2:])
