@testable import AudioKernel
import Foundation
import SpeechModels
import TestSupport

/// Builds a microphone signal: noise, with "utterances" (voiced bursts) at given times.
struct MicrophoneScript {
    var samples: [Int16] = []
    /// (start, end) sample positions of each utterance.
    var utterances: [(start: Int, end: Int)] = []
    private var generator = SeededGenerator(seed: 3)
    let noiseAmplitude: Double

    init(noiseAmplitude: Double = 60) { self.noiseAmplitude = noiseAmplitude }

    mutating func silence(ms: Int) {
        for _ in 0..<(ms * 24) { samples.append(Int16(Double.random(in: -1...1, using: &generator) * noiseAmplitude)) }
    }

    mutating func speech(ms: Int, amplitude: Double = 4000) {
        let start = samples.count
        for i in 0..<(ms * 24) {
            let t = Double(i) / 24_000
            let envelope = min(1, t * 40, Double(ms * 24 - i) / 240)  // 25 ms attack, 10 ms release
            let voice = sin(2 * .pi * 140 * t) + 0.5 * sin(2 * .pi * 420 * t + 0.3)
            samples.append(Int16(clamping: Int(voice * amplitude * envelope + Double.random(in: -1...1, using: &generator) * noiseAmplitude)))
        }
        utterances.append((start, samples.count))
    }

    mutating func append(_ other: [Int16], isSpeech: Bool) {
        let start = samples.count
        samples += other
        if isSpeech { utterances.append((start, samples.count)) }
    }
}

/// Collects recorder and player events on any thread; waits with deadlines.
final class EventLog<Event: Sendable>: @unchecked Sendable {
    private let shared = Awaitable<[(event: Event, time: Date)]>([])

    func append(_ event: Event) {
        let now = Date()
        shared.update { $0.append((event, now)) }
    }

    func snapshot() -> [(event: Event, time: Date)] { shared.value }

    @discardableResult
    func wait(timeout: TimeInterval, _ predicate: ([(event: Event, time: Date)]) -> Bool) -> Bool {
        shared.wait(timeout: timeout, predicate)
    }
}

extension Recorder {
    /// Feeds `samples` in periods of `period` samples.
    func feed(_ samples: [Int16], period: Int = 240) {
        samples.withUnsafeBufferPointer { all in
            var i = 0
            while i < all.count {
                process(UnsafeBufferPointer(rebasing: all[i..<min(all.count, i + period)]))
                i += period
            }
        }
    }
}

/// A recorder on the learned rule over an echo-cancelled input, following a player, and
/// listening. smart-turn is not asked before a barge-in: a stand-in answers 0 (more to come;
/// the debug build's model would take most of a minute to load). The caller stops the worker.
enum EchoCancelledRoom {
    static func learned(models: String) throws -> (Recorder, StreamingPlayer, EventLog<RecorderEvent>, LearnedEndpointing) {
        let vad = try SileroVAD(onnx: [UInt8](Data(contentsOf: URL(fileURLWithPath: models + "/silero_vad_op18_ifless.onnx"))))
        let endpointing = LearnedEndpointing(vad: vad, worker: try TurnCompletionWorker { _, _ in 0 })
        var configuration = RecorderConfiguration()
        configuration.echoCancelledInput = true
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder(configuration: configuration, endpointing: endpointing) { log.append($0) }
        let player = StreamingPlayer { _ in }
        recorder.follow(player)
        recorder.listen()
        return (recorder, player, log, endpointing)
    }
}
