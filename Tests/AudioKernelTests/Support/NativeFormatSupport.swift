import AudioKernel
import Foundation
import TestSupport
import XCTest

/// An ALSA device with fixed hardware constraints, as a USB speaker or HDMI output presents:
/// the external ioplug PCM in `Tests/Fixtures/alsa-fixed-pcm`, compiled with the system's C
/// compiler against Debian's alsa-lib once per test run, then defined by the stream's own
/// ALSA configuration (`snd_pcm_open_lconf`), so nothing outside the test changes.
enum FixedALSADevice {
    private static let built = Locked<Result<String, Error>?>(nil)

    /// The plugin's shared object, built on first use.
    static func plugin() throws -> String {
        try built.withLock { cached in
            if let cached { return try cached.get() }
            let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Fixtures/alsa-fixed-pcm/pcm_fixed.c").path
            let result = Result<String, Error> {
                let directory = try makeTemporaryDirectory()
                let library = directory.appendingPathComponent("libasound_module_pcm_fixed.so").path
                // -DPIC makes SND_PCM_PLUGIN_SYMBOL export the versioned symbol alsa-lib looks for.
                _ = try runTool("cc", ["-O2", "-Wall", "-Werror", "-DPIC", "-shared", "-fPIC", "-o", library, source, "-lasound"])
                return library
            }
            cached = result
            return try result.get()
        }
    }

    /// ALSA configuration text defining `name` as a device that runs only `format`
    /// (`S32_LE`, `S24_3LE`…), `rate` and `channels`, playing into or capturing from `file`.
    /// With `gone`, the device's server is gone while a file exists at that path (see the
    /// plugin's notes).
    static func configuration(name: String, format: String, rate: Int, channels: Int, file: String, gone: String? = nil) throws -> String {
        """
        pcm_type.fixed { lib "\(try plugin())" }
        pcm.\(name) { type fixed format \(format) rate \(rate) channels \(channels) file "\(file)"\(gone.map { " gone \"\($0)\"" } ?? "") }
        """
    }
}

/// What the engine's own converter makes of a PCM16 24 kHz mono signal for a device: the
/// reference a device's recorded bytes are compared with.
enum ConvertedReference {
    /// The converter's output bytes for `signal` preceded by `lead` frames of silence and
    /// followed by `tail` frames of silence, leading silent frames removed.
    static func bytes(of signal: [Int16], lead: Int, tail: Int, device: StreamFormat, periodFrames: Int) throws -> [UInt8] {
        let converter = try OutputConverter(sourceRate: 24_000, sourceChannels: 1, device: device, periodFrames: periodFrames)
        var input = [Float](repeating: 0, count: lead + signal.count + tail)
        for (i, s) in signal.enumerated() { input[lead + i] = Float(s) / 32_768 }
        var position = 0
        var out = [UInt8](repeating: 0, count: converter.periodBytes)
        var all: [UInt8] = []
        while position < input.count {
            out.withUnsafeMutableBytes { raw in
                converter.render(into: raw.baseAddress!) { chunk in
                    for i in 0..<chunk.count {
                        chunk[i] = position < input.count ? input[position] : 0
                        position += 1
                    }
                }
            }
            all += out
        }
        return stripLeadingSilence(all, frameBytes: device.bytesPerFrame)
    }

    /// `bytes` from its first frame that is not all zero bytes.
    static func stripLeadingSilence(_ bytes: [UInt8], frameBytes: Int) -> [UInt8] {
        guard let first = bytes.firstIndex(where: { $0 != 0 }) else { return [] }
        return Array(bytes[(first / frameBytes * frameBytes)...])
    }

    /// How far `recorded` (leading silence removed) equals the reference, at the lead that
    /// matches longest (the resampler's phase at the reply's first sample depends on the lead
    /// modulo the reduced input rate): that lead and the number of equal frames.
    static func closestMatch(recorded raw: [UInt8], signal: [Int16], device: StreamFormat,
                             periodFrames: Int) throws -> (lead: Int, equalFrames: Int) {
        let recorded = stripLeadingSilence(raw, frameBytes: device.bytesPerFrame)
        var divisor = 24_000, other = device.sampleRate
        while other != 0 { (divisor, other) = (other, divisor % other) }
        let phases = 24_000 / divisor
        var closest = (lead: -1, equalFrames: -1)
        for lead in 0..<phases {
            let reference = try bytes(of: signal, lead: lead, tail: 4_800, device: device, periodFrames: periodFrames)
            let n = min(reference.count, recorded.count)
            var equal = 0
            while equal < n, reference[equal] == recorded[equal] { equal += 1 }
            let frames = equal / device.bytesPerFrame
            if frames > closest.equalFrames { closest = (lead, frames) }
            if equal == n { break }
        }
        return closest
    }

    /// Checks that `recorded` (leading silence removed) begins with the reference for some
    /// lead: the bytes must be equal, over at least `minimumFrames` frames.
    static func assertEqual(recorded raw: [UInt8], signal: [Int16], device: StreamFormat, periodFrames: Int,
                            minimumFrames: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        let recorded = stripLeadingSilence(raw, frameBytes: device.bytesPerFrame)
        XCTAssertGreaterThanOrEqual(recorded.count, minimumFrames * device.bytesPerFrame, "the device got too little", file: file, line: line)
        let closest = try closestMatch(recorded: raw, signal: signal, device: device, periodFrames: periodFrames)
        XCTAssertGreaterThanOrEqual(closest.equalFrames, minimumFrames,
                                    "the device's bytes equal the engine's conversion for only \(closest.equalFrames) frames (best lead \(closest.lead))",
                                    file: file, line: line)
    }
}

/// Collects a player's events for a test to wait on.
final class PlayerEventLog: @unchecked Sendable {
    private let events = Awaitable([PlayerEvent]())
    func append(_ event: PlayerEvent) { events.update { $0.append(event) } }
    func waitForFinished(timeout: Double) -> PlaybackReport? {
        var report: PlaybackReport?
        _ = events.wait(timeout: timeout) { all in
            for case .finished(let r) in all { report = r; return true }
            return false
        }
        return report
    }

    /// Plays one second of a reply (``Loopback/signal(count:amplitude:seed:)``) on a device
    /// opened natively, checks the format it opened at and that the reply finished whole,
    /// runs `afterwards` while the device is still open, and returns the reply's samples.
    static func playReply(on device: AudioDeviceName, stream: AudioStreamConfiguration, expecting expected: StreamFormat,
                          file: StaticString = #filePath, line: UInt = #line, afterwards: () -> Void = {}) throws -> [Int16] {
        let log = PlayerEventLog()
        let player = try StreamingPlayer(device: device, stream: stream) { log.append($0) }
        try player.start()
        defer { player.shutdown() }
        XCTAssertEqual(player.deviceFormat, expected, file: file, line: line)
        let signal = Loopback.signal(count: 24_000)
        player.beginReply()
        player.enqueue(WAVBuilder.samples(signal))
        player.endReply()
        let report = try XCTUnwrap(log.waitForFinished(timeout: 10), file: file, line: line)
        XCTAssertEqual(report.underruns, 0, file: file, line: line)
        XCTAssertEqual(report.playedSeconds, 1, accuracy: 0.001, file: file, line: line)
        afterwards()
        return signal
    }
}
