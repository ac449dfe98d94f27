import AudioKernel
@preconcurrency import Benchmark
import BenchmarkGate
import CReference
import Foundation

// Each hot path of AudioKernel beside its references, measured in the same run:
// - "AudioKernel": the kernel as the engine calls it;
// - "iOS loop": the plain scalar loop of the iOS client this project grew from (over `Data`);
// - "C -O3": the same job in plain C, auto-vectorized by clang for the same baseline CPU;
// - "memcpy": copying the same bytes, the physical limit.
// Throughput is in operations per second; one operation processes one block of the named
// size, so ratios of throughputs are ratios of speed. Mallocs are counted per operation.

/// A 20 ms period at 24 kHz, and 1 MiB of PCM16.
let periodSamples = 480
let mebibyteSamples = 1 << 19

/// A 10 s turn at 24 kHz.
let turnSamples = 240_000

func speechLike(_ count: Int) -> [Int16] {
    var state: UInt32 = 12345
    return (0..<count).map { i in
        state = state &* 1_664_525 &+ 1_013_904_223
        let noise = Int32(truncatingIfNeeded: state >> 20) - 2048
        let tone = Int32(6000 * sin(Double(i) * 0.05))
        return Int16(clamping: tone + noise)
    }
}

/// Metrics for every benchmark here: speed and allocations side by side.
var metrics: [BenchmarkMetric] { [.wallClock, .throughput, .mallocCountTotal] }

/// Allocation counts are stable, so CI gates on them (absolute: no allocation may appear);
/// time is reported but not gated, because CI machines' timing is not stable.
var mallocGate: [BenchmarkMetric: BenchmarkThresholds] {
    [.mallocCountTotal: .init(absolute: [.p0: 0, .p25: 0, .p50: 0, .p75: 0, .p90: 0, .p99: 0, .p100: 0])]
}

func configuration(_ size: Int, gated: Bool) -> Benchmark.Configuration {
    .init(
        metrics: metrics,
        timeUnits: .nanoseconds,
        warmupIterations: 10,
        scalingFactor: size <= 4096 ? .kilo : .one,
        maxDuration: .seconds(2),
        maxIterations: 1_000_000,
        thresholds: gated ? mallocGate : nil
    )
}

/// Benchmark names hold no spaces or slashes: the tool writes threshold files under a
/// shell-safe spelling but reads them back under the name itself.
func label(_ size: Int) -> String { size == mebibyteSamples ? "1MiB" : "\(size)" }

/// The iOS client's conversion: `Float(sample) / 32768.0` per sample, over `Data`.
@inline(never)
func iOSInt16ToFloat(_ data: Data, into out: inout [Float]) {
    data.withUnsafeBytes { raw in
        let src = raw.bindMemory(to: Int16.self)
        for i in 0..<src.count { out[i] = Float(src[i]) / 32768.0 }
    }
}

/// The iOS client's `hasSpeech()` energy: samples copied out of `Data`, squared in Double.
@inline(never)
func iOSRMS(_ data: Data) -> Double {
    let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    let sum = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
    return (sum / Double(samples.count)).squareRoot()
}

let benchmarks: @Sendable () -> Void = {
    for size in [periodSamples, mebibyteSamples] {
        let samples = speechLike(size)
        let data = samples.withUnsafeBytes { Data($0) }
        let floats = UnsafeMutableBufferPointer<Float>.allocate(capacity: size)
        let copy = UnsafeMutableBufferPointer<Int16>.allocate(capacity: size)
        let source = UnsafeMutableBufferPointer<Int16>.allocate(capacity: size)
        _ = source.initialize(from: samples)
        let src = UnsafeBufferPointer(source)

        // Int16 → Float32
        Benchmark("Int16ToFloat32.\(label(size)).AudioKernel", configuration: configuration(size, gated: true)) { b in
            for _ in b.scaledIterations {
                SampleConverter.int16ToFloat32(src, into: floats)
                blackHole(floats[size - 1])
            }
        }
        Benchmark("Int16ToFloat32.\(label(size)).iOS-loop", configuration: configuration(size, gated: false)) { b in
            var out = [Float](repeating: 0, count: size)
            b.startMeasurement()
            for _ in b.scaledIterations {
                iOSInt16ToFloat(data, into: &out)
                blackHole(out[size - 1])
            }
        }
        Benchmark("Int16ToFloat32.\(label(size)).C-O3", configuration: configuration(size, gated: false)) { b in
            for _ in b.scaledIterations {
                cref_int16_to_float(src.baseAddress, floats.baseAddress, size)
                blackHole(floats[size - 1])
            }
        }
        Benchmark("Int16ToFloat32.\(label(size)).memcpy", configuration: configuration(size, gated: false)) { b in
            // The destination is twice the source; memcpy of the written bytes is the limit.
            for _ in b.scaledIterations {
                cref_memcpy(floats.baseAddress, src.baseAddress, size * 4)
                blackHole(floats[size - 1])
            }
        }

        // RMS (exact sum of squares)
        Benchmark("RMS.\(label(size)).AudioKernel", configuration: configuration(size, gated: true)) { b in
            for _ in b.scaledIterations { blackHole(SignalLevel.rms(src)) }
        }
        Benchmark("RMS.\(label(size)).iOS-loop", configuration: configuration(size, gated: false)) { b in
            for _ in b.scaledIterations { blackHole(iOSRMS(data)) }
        }
        Benchmark("RMS.\(label(size)).C-O3", configuration: configuration(size, gated: false)) { b in
            for _ in b.scaledIterations { blackHole(cref_rms(src.baseAddress, size)) }
        }
        Benchmark("RMS.\(label(size)).memcpy", configuration: configuration(size, gated: false)) { b in
            for _ in b.scaledIterations {
                cref_memcpy(copy.baseAddress, src.baseAddress, size * 2)
                blackHole(copy[size - 1])
            }
        }

        // Float32 → Int16 (clip, scale, round)
        Benchmark("Float32ToInt16.\(label(size)).AudioKernel", configuration: configuration(size, gated: true)) { b in
            SampleConverter.int16ToFloat32(src, into: floats)
            b.startMeasurement()
            for _ in b.scaledIterations {
                SampleConverter.float32ToInt16(UnsafeBufferPointer(floats), into: copy)
                blackHole(copy[size - 1])
            }
        }
        Benchmark("Float32ToInt16.\(label(size)).C-O3", configuration: configuration(size, gated: false)) { b in
            SampleConverter.int16ToFloat32(src, into: floats)
            b.startMeasurement()
            for _ in b.scaledIterations {
                cref_float_to_int16(floats.baseAddress, copy.baseAddress, size)
                blackHole(copy[size - 1])
            }
        }
    }

    // WAV encoding of a 10 s turn
    do {
        let samples = speechLike(turnSamples)
        let pcm = samples.withUnsafeBytes { Data($0) }
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: WAVEncoder.encodedSize(sampleCount: turnSamples), alignment: 16)
        Benchmark("WAVEncode.10s.AudioKernel-into-buffer", configuration: configuration(turnSamples, gated: true)) { b in
            samples.withUnsafeBufferPointer { s in
                for _ in b.scaledIterations { blackHole(try? WAVEncoder.encode(s, format: .speech, into: out)) }
            }
        }
        Benchmark("WAVEncode.10s.AudioKernel-new-array", configuration: configuration(turnSamples, gated: false)) { b in
            for _ in b.scaledIterations { blackHole(try? WAVEncoder.encode(samples)) }
        }
        Benchmark("WAVEncode.10s.iOS-Data-append", configuration: configuration(turnSamples, gated: false)) { b in
            let header = Data(WAVEncoder.header(format: .speech, dataByteCount: pcm.count))
            b.startMeasurement()
            for _ in b.scaledIterations {
                var wav = header
                wav.append(pcm)
                blackHole(wav)
            }
        }
        Benchmark("WAVEncode.10s.C-O3", configuration: configuration(turnSamples, gated: false)) { b in
            samples.withUnsafeBufferPointer { s in
                for _ in b.scaledIterations {
                    blackHole(cref_wav_encode(s.baseAddress, turnSamples, 24_000, 1, out.baseAddress!.assumingMemoryBound(to: UInt8.self)))
                }
            }
        }
        Benchmark("WAVEncode.10s.memcpy", configuration: configuration(turnSamples, gated: false)) { b in
            samples.withUnsafeBufferPointer { s in
                for _ in b.scaledIterations {
                    cref_memcpy(out.baseAddress! + 44, s.baseAddress, turnSamples * 2)
                    blackHole(out[44])
                }
            }
        }
    }

    // Ring buffer: one period in, one period out (single thread: the cost of the hand-off)
    do {
        let period = speechLike(periodSamples)
        let out = UnsafeMutableBufferPointer<Int16>.allocate(capacity: periodSamples)
        Benchmark("RingWriteRead.480.AudioKernel", configuration: configuration(periodSamples, gated: true)) { b in
            let ring = RingBuffer<Int16>(minimumCapacity: 4096)
            period.withUnsafeBufferPointer { p in
                b.startMeasurement()
                for _ in b.scaledIterations {
                    ring.write(p)
                    blackHole(ring.read(into: out))
                }
            }
        }
        Benchmark("RingWriteRead.480.C-O3", configuration: configuration(periodSamples, gated: false)) { b in
            let ring = cref_ring_create(4096)
            defer { cref_ring_destroy(ring) }
            period.withUnsafeBufferPointer { p in
                b.startMeasurement()
                for _ in b.scaledIterations {
                    _ = cref_ring_write(ring, p.baseAddress, periodSamples)
                    blackHole(cref_ring_read(ring, out.baseAddress, periodSamples))
                }
            }
        }
        Benchmark("RingWriteRead.480.memcpy", configuration: configuration(periodSamples, gated: false)) { b in
            let middle = UnsafeMutableBufferPointer<Int16>.allocate(capacity: periodSamples)
            period.withUnsafeBufferPointer { p in
                b.startMeasurement()
                for _ in b.scaledIterations {
                    cref_memcpy(middle.baseAddress, p.baseAddress, periodSamples * 2)
                    cref_memcpy(out.baseAddress, middle.baseAddress, periodSamples * 2)
                    blackHole(out[0])
                }
            }
        }
    }
    BenchmarkGate.capIfGating()
}
