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


if __name__ == "__main__":
    {"silero": silero, "features": features, "smart-turn": smart_turn, "speed": speed}[sys.argv[1]](*sys.argv[2:])
