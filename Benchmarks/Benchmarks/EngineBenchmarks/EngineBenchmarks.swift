import AudioKernel
@preconcurrency import Benchmark
import BenchmarkGate
import Dispatch
import Foundation

// The recorder and the streaming player.
//
// Offline (no device; CI gates their allocations at 0):
// - "Recorder.listening": 100 periods (1 s) of a noisy room through `Recorder.process`
//   while listening: wall time per second of audio, mallocs.
// - "Recorder.overTheKiosk": the same second while the kiosk speaks over an echo-cancelled
//   input (voice barge-in), the followed player rendering a reply period by period: the
//   barge-in level and the residual-echo estimate against what the player handed its device
//   (50 delays searched a block); beside "Recorder.listening" plus "Player.enqueueRender".
// - "Player.enqueueRender": 100 chunks of 10 ms enqueued and rendered (Int16 to Float32,
//   the ring, the volume): wall time, mallocs.
// - "Reply.feedToPlayer": the same 100 chunks as the daemon hands them over, from the
//   backend's queue through the reply's feed (``ReplyFeed``: one atomic state word, the
//   chunk straight to the player that began the reply), beside "Reply.threeLocks", the
//   path it replaced (the feed's lock, the device holder's lock, the player's), and
//   "Player.enqueueRender" above as the limit.
// - "Player.toDevice.<format>": the same, each period then through the device's converter
//   (resampling, channel mapping, the device's sample format, dither): the whole render
//   path as a USB speaker (48 kHz stereo float) or a CD-rate sink (44.1 kHz stereo s16)
//   gets it, 1 s of audio per iteration.
// - "Capture.fromDevice.48k-stereo-s16": 1 s of a USB microphone's periods converted to the
//   recorder's PCM16 24 kHz mono.
//
// On PulseAudio (needs PULSE_SERVER, e.g. `bash .ci/with-pulse swift package benchmark
// --target EngineBenchmarks`):
// - "Player.chunkToDevice.pulse": an idle player gets a chunk; time until its first sample is
//   handed to the device (the `started` event), 50 trials at random moments of the period;
//   this includes waiting for room in the full device buffer (at most one period); the
//   minimum shows the software path alone.
// End of speech to turn ready is measured over PulseAudio by EnginePulseTests
// (testEndOfSpeechToTurnReadyLatency), which prints its figures.

func noisyRoom(_ count: Int) -> [Int16] {
    var state: UInt32 = 1
    return (0..<count).map { _ in
        state = state &* 1_664_525 &+ 1_013_904_223
        return Int16(truncatingIfNeeded: Int32(state >> 16) % 120)
    }
}

func speechBurst(milliseconds: Int, amplitude: Double = 6000) -> [Int16] {
    (0..<(milliseconds * 24)).map { i in
        let t = Double(i) / 24_000
        return Int16((sin(2 * .pi * 140 * t) + 0.5 * sin(2 * .pi * 420 * t)) * amplitude * min(1, t * 40))
    }
}

var zeroMallocs: [BenchmarkMetric: BenchmarkThresholds] {
    [.mallocCountTotal: .init(absolute: [.p0: 0, .p25: 0, .p50: 0, .p75: 0, .p90: 0, .p99: 0, .p100: 0])]
}

/// Waits for events with a deadline.
final class Waiter: @unchecked Sendable {
    private let condition = NSCondition()
    private var times: [String: [UInt64]] = [:]

    func note(_ key: String) {
        condition.lock()
        times[key, default: []].append(DispatchTime.now().uptimeNanoseconds)
        condition.broadcast()
        condition.unlock()
    }

    func wait(_ key: String, count: Int, timeout: TimeInterval) -> UInt64? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while (times[key]?.count ?? 0) < count {
            if !condition.wait(until: deadline) { return nil }
        }
        return times[key]![count - 1]
    }
}

/// The speaker of the moment, as the daemon's `KioskAudio` holds it (its lock is taken once a
/// reply, at `beginReply`, not per chunk, so it is left out).
final class Speaker: ReplySpeakerProvider {
    let player: StreamingPlayer
    init(_ player: StreamingPlayer) { self.player = player }
    func beginReply() -> SpeakerReply? { SpeakerReply(speaker: player, number: player.beginReply()) }
}

let benchmarks: @Sendable () -> Void = {
    let room = noisyRoom(24_000)
    Benchmark("Recorder.listening", configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds,
                                                        warmupIterations: 3, maxDuration: .seconds(3), thresholds: zeroMallocs)) { b in
        let recorder = Recorder { event in blackHole(event) }
        recorder.listen()
        room.withUnsafeBufferPointer { all in
            // Warm the pre-roll ring and the noise floor outside the measured region.
            recorder.process(UnsafeBufferPointer(rebasing: all[0..<240]))
            b.startMeasurement()
            var i = 0
            while i < all.count {
                recorder.process(UnsafeBufferPointer(rebasing: all[i..<(i + 240)]))
                i += 240
            }
            b.stopMeasurement()
        }
    }

    let chunk = noisyRoom(240).withUnsafeBytes { [UInt8]($0) }
    Benchmark("Recorder.overTheKiosk", configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds,
                                                           warmupIterations: 3, maxDuration: .seconds(3), thresholds: zeroMallocs)) { b in
        var configuration = RecorderConfiguration()
        configuration.echoCancelledInput = true
        let recorder = Recorder(configuration: configuration) { event in blackHole(event) }
        let player = StreamingPlayer { event in blackHole(event) }
        recorder.follow(player)
        recorder.listen()
        let out = UnsafeMutableBufferPointer<Float>.allocate(capacity: 240)
        defer { out.deallocate() }
        player.beginReply()
        room.withUnsafeBufferPointer { all in
            chunk.withUnsafeBytes { bytes in
                player.enqueue(bytes)
                player.enqueue(bytes)
                player.render(into: out)
                recorder.process(UnsafeBufferPointer(rebasing: all[0..<240]))
                b.startMeasurement()
                var i = 0
                while i < all.count {
                    player.enqueue(bytes)
                    player.render(into: out)
                    recorder.process(UnsafeBufferPointer(rebasing: all[i..<(i + 240)]))
                    i += 240
                }
                b.stopMeasurement()
            }
        }
    }

    Benchmark("Player.enqueueRender", configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds,
                                                          warmupIterations: 3, maxDuration: .seconds(3), thresholds: zeroMallocs)) { b in
        let player = StreamingPlayer { event in blackHole(event) }
        let out = UnsafeMutableBufferPointer<Float>.allocate(capacity: 240)
        defer { out.deallocate() }
        player.beginReply()
        chunk.withUnsafeBytes { bytes in
            player.enqueue(bytes)
            player.enqueue(bytes)
            player.render(into: out)
            b.startMeasurement()
            for _ in 0..<100 {
                player.enqueue(bytes)
                player.render(into: out)
            }
            b.stopMeasurement()
        }
    }

    Benchmark("Reply.feedToPlayer", configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds,
                                                        warmupIterations: 3, maxDuration: .seconds(3), thresholds: zeroMallocs)) { b in
        let player = StreamingPlayer { event in blackHole(event) }
        let feed = ReplyFeed(audio: Speaker(player))
        let out = UnsafeMutableBufferPointer<Float>.allocate(capacity: 240)
        defer { out.deallocate() }
        chunk.withUnsafeBytes { bytes in
            blackHole(feed.enqueue(bytes))  // begins the reply
            blackHole(feed.enqueue(bytes))
            player.render(into: out)
            b.startMeasurement()
            for _ in 0..<100 {
                blackHole(feed.enqueue(bytes))
                player.render(into: out)
            }
            b.stopMeasurement()
        }
    }

    // The reference: the hand-off before, its three nested locks rebuilt here (the feed's
    // state, the device holder's `attachedPlayer`, the player's producer lock).
    Benchmark("Reply.threeLocks", configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds,
                                                      warmupIterations: 3, maxDuration: .seconds(3))) { b in
        let player = StreamingPlayer { event in blackHole(event) }
        let feedState = Locked<(number: Int?, stopped: Bool)>((nil, false))
        let attached = Locked<StreamingPlayer?>(player)
        let out = UnsafeMutableBufferPointer<Float>.allocate(capacity: 240)
        defer { out.deallocate() }
        func enqueue(_ bytes: UnsafeRawBufferPointer) {
            feedState.withLock { state in
                guard !state.stopped else { return }
                if state.number == nil { state.number = attached.withLock { $0 }?.beginReply() }
                if let number = state.number { attached.withLock { $0 }?.enqueue(bytes, reply: number) }
            }
        }
        chunk.withUnsafeBytes { bytes in
            enqueue(bytes)
            enqueue(bytes)
            player.render(into: out)
            b.startMeasurement()
            for _ in 0..<100 {
                enqueue(bytes)
                player.render(into: out)
            }
            b.stopMeasurement()
        }
    }

    for device in [StreamFormat(sampleRate: 48_000, channels: 2, sampleFormat: .float),
                   StreamFormat(sampleRate: 44_100, channels: 2, sampleFormat: .s16)] {
        let name = "Player.toDevice.\(device.sampleRate / 1000)k-stereo-\(device.sampleFormat)"
        Benchmark(name, configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds,
                                             warmupIterations: 3, maxDuration: .seconds(3), thresholds: zeroMallocs)) { b in
            let player = StreamingPlayer { event in blackHole(event) }
            player.volume = 0.8
            let periodFrames = device.sampleRate / 100
            let converter = try OutputConverter(sourceRate: 24_000, sourceChannels: 1, device: device, periodFrames: periodFrames)
            let out = UnsafeMutableRawPointer.allocate(byteCount: converter.periodBytes, alignment: 16)
            defer { out.deallocate() }
            player.beginReply()
            chunk.withUnsafeBytes { bytes in
                for _ in 0..<8 { player.enqueue(bytes) }
                converter.render(into: out) { player.render(into: $0) }
                b.startMeasurement()
                for _ in 0..<100 {
                    player.enqueue(bytes)
                    converter.render(into: out) { player.render(into: $0) }
                }
                b.stopMeasurement()
                blackHole(out.load(as: UInt8.self))
            }
        }
    }

    Benchmark("Capture.fromDevice.48k-stereo-s16", configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds,
                                                                       warmupIterations: 3, maxDuration: .seconds(3), thresholds: zeroMallocs)) { b in
        let device = StreamFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16)
        let converter = try InputConverter(source: device, maximumFrames: 480, targetRate: 24_000, targetChannels: 1)
        let period = (0..<960).map { Int16(truncatingIfNeeded: $0 &* 37) }
        period.withUnsafeBytes { bytes in
            blackHole(converter.convertToPCM16(bytes.baseAddress!, frames: 480).count)
            b.startMeasurement()
            for _ in 0..<100 { blackHole(converter.convertToPCM16(bytes.baseAddress!, frames: 480).count) }
            b.stopMeasurement()
        }
    }

    guard let server = ProcessInfo.processInfo.environment["PULSE_SERVER"] else { return }
    var stream = AudioStreamConfiguration()
    stream.pulseServer = server

    Benchmark("Player.chunkToDevice.pulse", configuration: .init(metrics: [.custom("chunk_to_device_us")], warmupIterations: 0,
                                                               maxDuration: .seconds(60), maxIterations: 1)) { b in
        let waiter = Waiter()
        let player = try StreamingPlayer(device: .pulse(device: "kiosk"), stream: stream) { event in
            if case .started = event { waiter.note("started") }
            if case .finished = event { waiter.note("finished") }
        }
        try player.start()
        defer { player.shutdown() }
        let audio = speechBurst(milliseconds: 30).withUnsafeBytes { [UInt8]($0) }
        var phase = SystemRandomNumberGenerator()
        for trial in 1...50 {
            // Chunks arrive at any moment of a device period, not just after one began.
            usleep(UInt32.random(in: 0..<10_000, using: &phase))
            let start = DispatchTime.now().uptimeNanoseconds
            player.beginReply()
            player.enqueue(audio)
            player.endReply()
            guard let started = waiter.wait("started", count: trial, timeout: 5),
                  waiter.wait("finished", count: trial, timeout: 5) != nil else { return }
            b.measurement(.custom("chunk_to_device_us"), Int((started - start) / 1_000))
        }
    }

    BenchmarkGate.capIfGating()
}

