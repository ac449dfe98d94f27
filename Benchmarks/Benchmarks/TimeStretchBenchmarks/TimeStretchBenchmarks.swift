import AudioKernel
@preconcurrency import Benchmark
import BenchmarkGate
import CRubberBand
import Foundation

// The slower replay's stretcher beside the established ones, in one run, each on one thread
// streaming 24 kHz mono Float32 in 10 ms blocks, as the player feeds it:
// - "AudioKernel": AudioKernel's TimeStretcher (WSOLA);
// - "rubberband-R2" / "rubberband-R3": Rubber Band's real-time mode, its default engine and
//   its finer one (`--fine` on the command line);
// - "memcpy": the limit, a copy of the same input bytes.
// One operation stretches one second of speech-like sound (a voice's harmonics gliding from
// 100 to 220 Hz, syllables of 200 ms, with noise bursts for the consonants), so the
// throughput is how many times faster than real time it runs. Mallocs are counted per
// operation; CI gates AudioKernel's at 0.

/// One second of the test sound.
let speechLike: [Float] = {
    var generator = SystemRandomNumberGenerator()
    var phase = 0.0
    return (0..<24_000).map { n in
        let t = Double(n) / 24_000
        let f0 = 100 + 120 * t
        phase += 2 * Double.pi * f0 / 24_000
        let syllable = (n / 4_800) % 2 == 0
        let voiced = (1...12).reduce(0.0) { $0 + sin(Double($1) * phase) / Double($1) } * 0.15
        let consonant = Double.random(in: -0.05...0.05, using: &generator)
        return Float(syllable && n % 4_800 > 600 ? voiced : consonant)
    }
}()

protocol Stretcher: AnyObject {
    /// Stretches `frames` of `input` into `output` (room for `capacity`); returns the frames written.
    func stretch(_ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>, capacity: Int) -> Int
}

final class AudioKernelStretcher: Stretcher {
    let stretcher: TimeStretcher
    init(rate: Double) { stretcher = try! TimeStretcher(sampleRate: 24_000, rate: rate, maximumInputFrames: 240) }
    func stretch(_ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>, capacity: Int) -> Int {
        stretcher.process(UnsafeBufferPointer(start: input, count: frames), into: UnsafeMutableBufferPointer(start: output, count: capacity))
    }
}

final class RubberBandStretcher: Stretcher {
    let state: RubberBandState
    init(rate: Double, finer: Bool) {
        let options = Int32(RubberBandOptionProcessRealTime.rawValue) | (finer ? Int32(bitPattern: RubberBandOptionEngineFiner.rawValue) : 0)
        state = rubberband_new(24_000, 1, options, 1 / rate, 1.0)
        rubberband_set_max_process_size(state, 240)
    }
    deinit { rubberband_delete(state) }
    func stretch(_ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>, capacity: Int) -> Int {
        var i: UnsafePointer<Float>? = input
        withUnsafePointer(to: &i) { rubberband_process(state, UnsafeRawPointer($0).assumingMemoryBound(to: UnsafePointer<Float>?.self), UInt32(frames), 0) }
        let n = min(Int(max(0, rubberband_available(state))), capacity)
        var o: UnsafeMutablePointer<Float>? = output
        return withUnsafePointer(to: &o) { Int(rubberband_retrieve(state, UnsafeRawPointer($0).assumingMemoryBound(to: UnsafeMutablePointer<Float>?.self), UInt32(n))) }
    }
}

final class CopyStretcher: Stretcher {
    func stretch(_ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>, capacity: Int) -> Int {
        output.update(from: input, count: min(frames, capacity))
        return frames
    }
}

let benchmarks: @Sendable () -> Void = {
    let makers: [(name: String, make: (Double) -> any Stretcher)] = [
        ("AudioKernel", { AudioKernelStretcher(rate: $0) }),
        ("rubberband-R2", { RubberBandStretcher(rate: $0, finer: false) }),
        ("rubberband-R3", { RubberBandStretcher(rate: $0, finer: true) }),
        ("memcpy", { _ in CopyStretcher() }),
    ]
    for rate in [0.5, 0.75] {
        for maker in makers {
            let gate: [BenchmarkMetric: BenchmarkThresholds]? = maker.name == "AudioKernel"
                ? [.mallocCountTotal: .init(absolute: [.p0: 0, .p25: 0, .p50: 0, .p75: 0, .p90: 0, .p99: 0, .p100: 0])] : nil
            let configuration = Benchmark.Configuration(metrics: [.wallClock, .throughput, .mallocCountTotal], timeUnits: .microseconds,
                                                        warmupIterations: 3, maxDuration: .seconds(1), maxIterations: 1_000, thresholds: gate)
            Benchmark("Stretch.rate-\(rate).\(maker.name)", configuration: configuration) { benchmark in
                let stretcher = maker.make(rate)
                let capacity = 8_192
                let out = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
                defer { out.deallocate() }
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    speechLike.withUnsafeBufferPointer { all in
                        var offset = 0
                        while offset < all.count {
                            blackHole(stretcher.stretch(all.baseAddress! + offset, frames: 240, into: out, capacity: capacity))
                            offset += 240
                        }
                    }
                }
                benchmark.stopMeasurement()
            }
        }
    }
    BenchmarkGate.capIfGating()
}
