@preconcurrency import Benchmark
import BenchmarkGate
import Foundation
import SpeechModels

// The speech models the recorder runs, on recorded speech (asterisk's Allison reading
// "demo-congrats", decoded by ffmpeg from .ci/setup's package), with the model files .ci/setup
// takes out of their pinned PyPI wheels ($PRACTICED_MODELS_DIR, /opt/practiced-ci/models):
// - "Silero.frame": one 32 ms frame at 16 kHz through Silero VAD, the recurrent state carried.
// - "Silero.frame.afterSleep": the same, each frame after 32 ms asleep, as the daemon runs it.
// - "WhisperFeatures.8s": the log-mel features of an 8 s window.
// - "SmartTurn.8s.<n>-thread": the model on one window's features, on n threads.
// All allocate nothing once warm (CI gates their mallocs at 0). onnxruntime's times on the
// same inputs, one thread each, are in docs/performance.md (its Python harness in .ci/proof).

let models = ProcessInfo.processInfo.environment["PRACTICED_MODELS_DIR"] ?? "/opt/practiced-ci/models"

func modelBytes(_ name: String) -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: "\(models)/\(name)") else {
        fatalError("\(models)/\(name) is missing: run .ci/setup")
    }
    return [UInt8](data)
}

/// 8 s of recorded speech at 16 kHz, float (ffmpeg decodes the G.722 prompt).
func speech() -> [Float] {
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("speech-benchmark-\(getpid()).f32")
    // posix_spawn, not Foundation's Process: Process leaves a monitoring thread whose
    // allocations the malloc counter would see during the measurements.
    let arguments = ["ffmpeg", "-v", "error", "-y", "-f", "g722", "-i", "/usr/share/asterisk/sounds/en_US_f_Allison/demo-congrats.g722",
                     "-ac", "1", "-ar", "16000", "-f", "f32le", output.path]
    var argv = arguments.map { strdup($0) } + [nil]
    var pid: pid_t = 0
    guard posix_spawn(&pid, "/usr/bin/ffmpeg", nil, nil, &argv, environ) == 0 else { fatalError("ffmpeg did not start") }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    for p in argv { free(p) }
    let data = try! Data(contentsOf: output)
    try? FileManager.default.removeItem(at: output)
    let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    return Array(samples.prefix(WhisperFeatures.windowSamples)) + [Float](repeating: 0, count: max(0, WhisperFeatures.windowSamples - samples.count))
}

var config: Benchmark.Configuration {
    .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds, warmupIterations: 2,
          maxDuration: .seconds(3), maxIterations: 100_000,
          thresholds: [.mallocCountTotal: .init(absolute: [.p0: 0, .p25: 0, .p50: 0, .p75: 0, .p90: 0, .p99: 0, .p100: 0])])
}

let benchmarks: @Sendable () -> Void = {
    let audio = speech()
    // Loaded once: each sample is one frame of a stream, the state carried from the last
    // (loading per sample timed the first frame after a load, its weights not yet in cache).
    nonisolated(unsafe) let vad = try! SileroVAD(onnx: modelBytes("silero_vad_op18_ifless.onnx"))
    nonisolated(unsafe) var start = 0
    Benchmark("Silero.frame", configuration: config) { b in
        audio.withUnsafeBufferPointer { audio in
            b.startMeasurement()
            for _ in b.scaledIterations {
                blackHole(vad.probability(of: UnsafeBufferPointer(rebasing: audio[start..<start + 512])))
                start = (start + 512) % (audio.count - 512)
            }
        }
    }
    Benchmark("WhisperFeatures.8s", configuration: config) { b in
        let features = WhisperFeatures()
        var out = [Float](repeating: 0, count: WhisperFeatures.bins * WhisperFeatures.frames)
        audio.withUnsafeBufferPointer { audio in
            out.withUnsafeMutableBufferPointer { out in
                b.startMeasurement()
                for _ in b.scaledIterations {
                    features.compute(audio, into: out.baseAddress!)
                    blackHole(out[0])
                }
            }
        }
    }
    // As the capture thread runs it: one frame after 32 ms asleep. The sleep alone takes the
    // weights out of the caches and the TLB: about four times the frame back to back, as in
    // the daemon (docs/performance.md).
    nonisolated(unsafe) var pacedStart = 0
    Benchmark("Silero.frame.afterSleep", configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds,
                                                               warmupIterations: 2, maxDuration: .seconds(10), maxIterations: 250)) { b in
        usleep(32_000)
        audio.withUnsafeBufferPointer { audio in
            b.startMeasurement()
            blackHole(vad.probability(of: UnsafeBufferPointer(rebasing: audio[pacedStart..<pacedStart + 512])))
            b.stopMeasurement()
            pacedStart = (pacedStart + 512) % (audio.count - 512)
        }
    }
    for threads in [1, 2] {
        Benchmark("SmartTurn.8s.\(threads)-thread", configuration: config) { b in
            // As the daemon runs it, whichever ran before.
            smartTurnWindows(b, audio: audio, threads: threads, variant: KernelVariant.best)
        }
    }
    // Each build of the integer kernels this host runs (issue 70), one thread: the same
    // window as above, so that the variants' times sit beside each other and beside
    // onnxruntime's (`reference.py speed`) in one run.
    for variant in KernelVariant.supported {
        Benchmark("SmartTurn.8s.1-thread.\(variant.rawValue)", configuration: config) { b in
            smartTurnWindows(b, audio: audio, threads: 1, variant: variant)
        }
    }
    BenchmarkGate.capIfGating()
}

/// smart-turn on one window of `audio`, again and again, on `variant`'s kernels (chosen
/// before the measurement: choosing may allocate).
func smartTurnWindows(_ b: Benchmark, audio: [Float], threads: Int, variant: KernelVariant) {
    try! KernelVariant.use(variant)
    let model = try! SmartTurnModel(onnx: modelBytes("smart-turn-v3.2-cpu.onnx"), threads: threads)
    var features = [Float](repeating: 0, count: WhisperFeatures.bins * WhisperFeatures.frames)
    audio.withUnsafeBufferPointer { audio in
        features.withUnsafeMutableBufferPointer { WhisperFeatures().compute(audio, into: $0.baseAddress!) }
    }
    features.withUnsafeBufferPointer { features in
        blackHole(model.probability(features: features.baseAddress!))  // warm
        b.startMeasurement()
        for _ in b.scaledIterations {
            blackHole(model.probability(features: features.baseAddress!))
        }
    }
}
