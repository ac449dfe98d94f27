import AudioKernel
@preconcurrency import Benchmark
import BenchmarkGate
import CAVCodec
import Foundation

// AudioKernel's AAC-LC encoder and decoder beside libavcodec's (Debian's libavcodec 5.1, its
// native "aac" encoder with default options, and its float decoder), on the same 10 s of
// 24 kHz mono speech at 48 kbit/s (the repository's sample, looped). One operation codes or
// decodes the 10 s; mallocs are counted per operation after warm-up, and CI gates
// AudioKernel's at 0 (every buffer is made when the coder is).

let seconds = 10
let rate = 24_000
let bitRate = 48_000

/// 10 s of the sample speech, PCM16 and Float32.
let speech: [Int16] = {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../samples/hello.wav").standardized.path
    let samples = try! WAVDecoder.decode(contentsOfFile: path).samples
    return (0..<(seconds * rate)).map { samples[$0 % samples.count] }
}()
let speechFloat: [Float] = speech.map { Float($0) / 32_768 }

/// The 10 s coded by our encoder: the frames the decoders read.
let codedFrames: [[UInt8]] = {
    let encoder = try! AACEncoder(sampleRate: rate, channels: 1, bitRate: bitRate)
    var frames: [[UInt8]] = []
    speech.withUnsafeBufferPointer { encoder.encode($0.baseAddress!, frames: $0.count) { frames.append(Array($0)) } }
    encoder.finish { frames.append(Array($0)) }
    return frames
}()

/// Frees what each libavcodec coder holds.
func freeCodec(_ context: UnsafeMutablePointer<AVCodecContext>, _ frame: UnsafeMutablePointer<AVFrame>, _ packet: UnsafeMutablePointer<AVPacket>) {
    var c: UnsafeMutablePointer<AVCodecContext>? = context
    avcodec_free_context(&c)
    var f: UnsafeMutablePointer<AVFrame>? = frame
    av_frame_free(&f)
    var p: UnsafeMutablePointer<AVPacket>? = packet
    av_packet_free(&p)
}

/// libavcodec's native AAC encoder: float planar input, 1024-sample frames.
final class LibavcodecEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let frame: UnsafeMutablePointer<AVFrame>
    let packet: UnsafeMutablePointer<AVPacket>

    init() {
        let codec = avcodec_find_encoder(AV_CODEC_ID_AAC)!
        let c = avcodec_alloc_context3(codec)!
        c.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        c.pointee.sample_rate = Int32(rate)
        c.pointee.bit_rate = Int64(bitRate)
        av_channel_layout_default(&c.pointee.ch_layout, 1)
        precondition(avcodec_open2(c, codec, nil) == 0, "avcodec_open2")
        context = c
        frame = av_frame_alloc()!
        frame.pointee.nb_samples = c.pointee.frame_size
        frame.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        av_channel_layout_copy(&frame.pointee.ch_layout, &c.pointee.ch_layout)
        precondition(av_frame_get_buffer(frame, 0) == 0)
        packet = av_packet_alloc()!
    }

    deinit { freeCodec(context, frame, packet) }

    /// Codes `samples` (one channel); returns the bytes coded. The encoder keeps its state
    /// between calls, as one long stream.
    func encode(_ samples: UnsafeBufferPointer<Float>) -> Int {
        var bytes = 0
        let size = Int(context.pointee.frame_size)
        var at = 0
        while at + size <= samples.count {
            _ = av_frame_make_writable(frame)
            frame.pointee.data.0!.withMemoryRebound(to: Float.self, capacity: size) { $0.update(from: samples.baseAddress! + at, count: size) }
            frame.pointee.pts = Int64(at)
            precondition(avcodec_send_frame(context, frame) == 0)
            while avcodec_receive_packet(context, packet) == 0 {
                bytes += Int(packet.pointee.size)
                av_packet_unref(packet)
            }
            at += size
        }
        return bytes
    }
}

/// libavcodec's AAC decoder, given our AudioSpecificConfig.
final class LibavcodecDecoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let frame: UnsafeMutablePointer<AVFrame>
    let packet: UnsafeMutablePointer<AVPacket>

    init(config: [UInt8]) {
        let codec = avcodec_find_decoder(AV_CODEC_ID_AAC)!
        let c = avcodec_alloc_context3(codec)!
        let extradata = av_mallocz(config.count + Int(AV_INPUT_BUFFER_PADDING_SIZE))!.assumingMemoryBound(to: UInt8.self)
        extradata.update(from: config, count: config.count)
        c.pointee.extradata = extradata
        c.pointee.extradata_size = Int32(config.count)
        precondition(avcodec_open2(c, codec, nil) == 0, "avcodec_open2")
        context = c
        frame = av_frame_alloc()!
        packet = av_packet_alloc()!
    }

    deinit { freeCodec(context, frame, packet) }

    /// Decodes every frame; returns the samples decoded.
    func decode(_ frames: [[UInt8]]) -> Int {
        var samples = 0
        for bytes in frames {
            bytes.withUnsafeBufferPointer { b in
                packet.pointee.data = UnsafeMutablePointer(mutating: b.baseAddress!)
                packet.pointee.size = Int32(b.count)
                precondition(avcodec_send_packet(context, packet) == 0)
            }
            while avcodec_receive_frame(context, frame) == 0 {
                samples += Int(frame.pointee.nb_samples)
                av_frame_unref(frame)
            }
        }
        return samples
    }
}

let benchmarks: @Sendable () -> Void = {
    let gate: [BenchmarkMetric: BenchmarkThresholds] = [.mallocCountTotal: .init(absolute: [.p0: 0, .p25: 0, .p50: 0, .p75: 0, .p90: 0, .p99: 0, .p100: 0])]
    func configuration(gated: Bool) -> Benchmark.Configuration {
        Benchmark.Configuration(metrics: [.wallClock, .throughput, .mallocCountTotal], timeUnits: .microseconds,
                                warmupIterations: 2, maxDuration: .seconds(2), maxIterations: 200, thresholds: gated ? gate : nil)
    }

    Benchmark("AACEncode.10s-24k-mono-48k.AudioKernel", configuration: configuration(gated: true)) { benchmark in
        let encoder = try! AACEncoder(sampleRate: rate, channels: 1, bitRate: bitRate)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var bytes = 0
            speech.withUnsafeBufferPointer { encoder.encode($0.baseAddress!, frames: $0.count) { bytes += $0.count } }
            blackHole(bytes)
        }
        benchmark.stopMeasurement()
    }

    Benchmark("AACEncode.10s-24k-mono-48k.libavcodec", configuration: configuration(gated: false)) { benchmark in
        let encoder = LibavcodecEncoder()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(speechFloat.withUnsafeBufferPointer { encoder.encode($0) })
        }
        benchmark.stopMeasurement()
    }

    Benchmark("AACDecode.10s-24k-mono-48k.AudioKernel", configuration: configuration(gated: true)) { benchmark in
        let decoder = try! AACDecoder(config: AudioSpecificConfig(sampleRate: rate, channelConfiguration: 1))
        let pcm = UnsafeMutablePointer<Float>.allocate(capacity: 1_024)
        defer { pcm.deallocate() }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            for frame in codedFrames {
                frame.withUnsafeBytes { try! decoder.decode($0, into: pcm) }
            }
            blackHole(pcm[0])
        }
        benchmark.stopMeasurement()
    }

    Benchmark("AACDecode.10s-24k-mono-48k.libavcodec", configuration: configuration(gated: false)) { benchmark in
        let decoder = LibavcodecDecoder(config: AudioSpecificConfig(sampleRate: rate, channelConfiguration: 1).bytes)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(decoder.decode(codedFrames))
        }
        benchmark.stopMeasurement()
    }
    BenchmarkGate.capIfGating()
}
