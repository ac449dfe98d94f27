import AudioKernel
import Foundation
import TestSupport
import XCTest

/// Collects what a device reports on its I/O thread and lets a test wait for a condition
/// with a deadline.
final class DeviceProbe: @unchecked Sendable {
    struct State {
        var samples: [Int16] = []
        var events: [AudioKernelEventCopy] = []
        var periods = 0
        /// Frames (samples, for the engine's mono) of each period delivered.
        var periodSizes: [Int] = []
    }

    enum AudioKernelEventCopy: Equatable {
        case started, xrun(Int), lost(String), restored(Int), endOfInput
    }

    private let shared = Awaitable(State())

    func append(_ buffer: UnsafeBufferPointer<Int16>) {
        shared.update { state in
            state.samples.append(contentsOf: buffer)
            state.periods += 1
            state.periodSizes.append(buffer.count)
        }
    }

    func record(_ event: AudioKernelEventCopy) {
        shared.update { $0.events.append(event) }
    }

    /// Waits until `predicate` holds, at most `timeout` seconds.
    @discardableResult
    func wait(timeout: TimeInterval, _ predicate: (State) -> Bool) -> Bool {
        shared.wait(timeout: timeout, predicate)
    }

    func snapshot() -> State { shared.value }
}

/// Test signals and alignment for loopback checks.
enum Loopback {
    /// A deterministic noise-like signal: no two windows alike, so alignment is unambiguous.
    static func signal(count: Int, amplitude: Double = 8000, seed: UInt64 = 7) -> [Int16] {
        var g = SeededGenerator(seed: seed)
        var smooth = 0.0
        return (0..<count).map { i in
            smooth = 0.7 * smooth + 0.3 * Double.random(in: -1...1, using: &g)
            let tone = sin(Double(i) * 0.031) * 0.4
            return Int16(clamping: Int((smooth + tone) * amplitude))
        }
    }

    /// The lag at which `template` best matches `recording`: coarse onset, then the best of
    /// the cross-correlations around it.
    static func align(_ template: [Int16], in recording: [Int16], search: Int = 256) -> Int? {
        guard let onset = recording.firstIndex(where: { abs(Int($0)) > 200 }),
              let templateOnset = template.firstIndex(where: { abs(Int($0)) > 200 }) else { return nil }
        let guess = onset - templateOnset
        let window = min(2400, template.count)
        var best: (lag: Int, score: Double)?
        for lag in max(0, guess - search)...max(0, guess + search) where lag + window <= recording.count {
            var score = 0.0
            for i in 0..<window { score += Double(template[i]) * Double(recording[lag + i]) }
            if best == nil || score > best!.score { best = (lag, score) }
        }
        return best?.lag
    }
}

/// A test case with its own headless PulseAudio server, started before each test and
/// stopped after it; `stream` points devices at it.
class PulseAudioTestCase: XCTestCase {
    var server: PulseAudioServer!
    var stream = AudioStreamConfiguration()

    override func setUpWithError() throws {
        // A thread feeding a pipe source the server has closed must see its write fail, not
        // kill the test process (PipeWire's pipe source reads in real time, so a feeder can
        // outlive the test's server).
        signal(SIGPIPE, SIG_IGN)
        server = try PulseAudioServer()
        try server.start()
        stream.pulseServer = server.address
    }

    override func tearDown() {
        server?.stop()
        server = nil
    }
}

extension PulseAudioServer {
    /// What spoils, on PipeWire, a take that records `signal` through a sink's monitor
    /// besides a stall in the server's log (``PulseAudioServer/retryingGraphXruns``): the
    /// signal carried below ``minimumSNR``, a hole no client was told of. CI's PipeWire step
    /// read 21.0 dB for a parked player's reply in a take its log showed no stall in, with
    /// the player reporting no underrun. Nil on PulseAudio, whose takes are compared sample
    /// for sample and never taken again for this.
    func holeThroughTheMonitor(_ signal: [Int16], in recording: [Int16]) -> String? {
        guard kind == .pipewire else { return nil }
        guard let lag = Loopback.align(signal, in: recording), lag + signal.count <= recording.count else {
            return "the signal not found whole in the monitor's recording"
        }
        let snr = PCMFidelity.passbandSNR(reference: signal, recording: recording, lag: lag)
        return snr < minimumSNR ? String(format: "the signal at %.1f dB through the monitor", snr) : nil
    }
}
