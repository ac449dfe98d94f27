@preconcurrency import Benchmark
import BenchmarkGate
import Foundation
import PracticeNet

// SSE bytes in -> PCM bytes out for one `audio` event of 24,000 PCM bytes (0.5 s, 32,000
// base64 characters, the middle of the 2,400-24,000 range the server sends), beside
// Foundation's `Data(base64Encoded:)` decoding the same base64 alone (no SSE, no JSON), and
// memcpy of the PCM bytes. The parser and the decoder are reused across events, as on a
// stream: in steady state they allocate nothing (gated in CI).

let pcm: [UInt8] = (0..<24_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
let base64 = Data(pcm).base64EncodedString()
let event = Array("event: audio\ndata: {\"audio\": \"\(base64)\"}\n\n".utf8)

var config: Benchmark.Configuration {
    .init(metrics: [.wallClock, .throughput, .mallocCountTotal], timeUnits: .microseconds, warmupIterations: 10,
          maxDuration: .seconds(2), maxIterations: 100_000)
}

var gated: Benchmark.Configuration {
    var c = config
    c.thresholds = [.mallocCountTotal: .init(absolute: [.p0: 0, .p25: 0, .p50: 0, .p75: 0, .p90: 0, .p99: 0, .p100: 0])]
    return c
}

let benchmarks: @Sendable () -> Void = {
    Benchmark("SSEAudioEvent.24000B.PracticeNet-whole", configuration: gated) { b in
        var parser = SSEParser()
        var decoder = AudioPayloadDecoder()
        event.withUnsafeBytes { bytes in
            parser.feed(bytes) { e in _ = try? decoder.decode(e.data) }  // grow the buffers once
            b.startMeasurement()
            for _ in b.scaledIterations {
                parser.feed(bytes) { e in
                    if e.isType("audio") { _ = try? decoder.decode(e.data) }
                }
                blackHole(decoder.decodedCount)
            }
        }
    }
    Benchmark("SSEAudioEvent.24000B.PracticeNet-4KiB-chunks", configuration: gated) { b in
        var parser = SSEParser()
        var decoder = AudioPayloadDecoder()
        event.withUnsafeBytes { bytes in
            func feedInChunks() {
                var offset = 0
                while offset < bytes.count {
                    let n = min(4_096, bytes.count - offset)
                    parser.feed(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)])) { e in
                        if e.isType("audio") { _ = try? decoder.decode(e.data) }
                    }
                    offset += n
                }
            }
            feedInChunks()  // the first event grows the buffers; a stream's later ones reuse them
            b.startMeasurement()
            for _ in b.scaledIterations {
                feedInChunks()
                blackHole(decoder.decodedCount)
            }
        }
    }
    Benchmark("SSEAudioEvent.24000B.Foundation-base64-only", configuration: config) { b in
        for _ in b.scaledIterations { blackHole(Data(base64Encoded: base64)) }
    }
    Benchmark("SSEAudioEvent.24000B.memcpy", configuration: config) { b in
        var out = [UInt8](repeating: 0, count: pcm.count)
        b.startMeasurement()
        for _ in b.scaledIterations {
            out.withUnsafeMutableBytes { o in pcm.withUnsafeBytes { o.copyMemory(from: $0) } }
            blackHole(out[0])
        }
    }
    BenchmarkGate.capIfGating()
}
