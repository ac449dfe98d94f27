import AudioKernel
import AudioMeasurement
import Foundation
import TestSupport
import XCTest

/// The engine at a device's native format over real stacks: ALSA devices with fixed hardware
/// constraints (an ioplug PCM) and PulseAudio sinks at 48 kHz float32 and 44.1 kHz s16. What
/// reaches the device must be, byte for byte, the engine's own conversion of the reply.
final class NativeFormatALSATests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try makeTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Plays one second of a reply on a fixed-format ALSA device opened natively, then
    /// compares the bytes the device received with the engine's conversion.
    private func playReply(format alsaFormat: String, rate: Int, expected: StreamFormat) throws {
        let played = dir.appendingPathComponent("played.raw").path
        var stream = AudioStreamConfiguration()
        stream.alsaConfiguration = try FixedALSADevice.configuration(name: "usbspeaker", format: alsaFormat, rate: rate, channels: 2, file: played)
        let signal = try PlayerEventLog.playReply(on: .alsa(pcm: "usbspeaker"), stream: stream, expecting: expected)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: played)))
        let periodFrames = stream.periodFrames(atRate: rate)
        try ConvertedReference.assertEqual(recorded: bytes, signal: signal, device: expected, periodFrames: periodFrames,
                                           minimumFrames: rate * 99 / 100)
    }

    func testAReplyOnAnS32StereoDeviceAt48kHzIsTheEnginesConversion() throws {
        try playReply(format: "S32_LE", rate: 48_000, expected: StreamFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s32))
    }

    func testAReplyOnAnS24In3BytesStereoDeviceAt44kHzIsTheEnginesConversion() throws {
        try playReply(format: "S24_3LE", rate: 44_100, expected: StreamFormat(sampleRate: 44_100, channels: 2, sampleFormat: .s24_3))
    }

    func testAForcedFormatTheDeviceCannotRunIsAClearError() throws {
        var stream = AudioStreamConfiguration()
        stream.alsaConfiguration = try FixedALSADevice.configuration(name: "usbspeaker", format: "S32_LE", rate: 48_000, channels: 2,
                                                                    file: dir.appendingPathComponent("x.raw").path)
        let uri = try AudioDeviceURI(parsing: "alsa:usbspeaker?rate=24000")
        stream.device = uri.format
        let device = try PlaybackDevice(name: uri.name, configuration: stream)
        XCTAssertThrowsError(try device.start(render: { (buffer: UnsafeMutableBufferPointer<Float>) in buffer.update(repeating: 0) })) { error in
            XCTAssertEqual((error as? AudioError)?.kind, .unsupportedFormat)
            XCTAssertTrue("\(error)".contains("24000 Hz"), "\(error)")
        }
    }

    func testA44kHzStereoS24MicrophoneIsDeliveredAs24kHzMono() throws {
        // A USB microphone that runs only S24_3LE at 44.1 kHz stereo; left 0.5, right 0.3 of
        // a 1 kHz tone: the engine's turn is their average at 24 kHz.
        let frames = 44_100 * 2
        var raw = [UInt8]()
        raw.reserveCapacity(frames * 6)
        for i in 0..<frames {
            let x = sin(2 * Double.pi * 1_000 * Double(i) / 44_100)
            for amplitude in [0.5, 0.3] {
                let n = Int32((amplitude * 8_388_608 * x).rounded())
                raw += [UInt8(truncatingIfNeeded: n), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n >> 16)]
            }
        }
        let micFile = dir.appendingPathComponent("mic.raw")
        try Data(raw).write(to: micFile)
        var stream = AudioStreamConfiguration()
        stream.alsaConfiguration = try FixedALSADevice.configuration(name: "usbmic", format: "S24_3LE", rate: 44_100, channels: 2, file: micFile.path)
        let device = try CaptureDevice(name: .alsa(pcm: "usbmic"), configuration: stream)
        let probe = DeviceProbe()
        try device.start(onPeriod: { probe.append($0) })
        XCTAssertEqual(device.deviceFormat, StreamFormat(sampleRate: 44_100, channels: 2, sampleFormat: .s24_3))
        XCTAssertTrue(probe.wait(timeout: 10) { $0.samples.count >= 36_000 })
        device.stop()
        let state = probe.snapshot()
        // 441 frames per period give 240 at 24 kHz, give or take the filter's fractional phase.
        XCTAssertTrue(state.periodSizes.allSatisfy { (239...241).contains($0) }, "\(Set(state.periodSizes))")
        let spectrum = Spectrum(state.samples[4_096..<(4_096 + 16_384)].map { Double($0) / 32_768 }, rate: 24_000)
        XCTAssertEqual(spectrum.amplitude(at: 1_000), 0.4, accuracy: 0.001)
        XCTAssertLessThan(spectrum.thdPlusNoise(fundamental: 1_000), -85)
    }
}

final class NativeFormatPulseTests: PulseAudioTestCase {
    /// Plays one second of a reply on a null sink created at `sinkFormat`, recording the
    /// sink's monitor with Debian's `parec` at the same format; the recording must equal the
    /// engine's conversion. A take during which PipeWire's graph stalled (a hole no client
    /// is told of: CI read 43,807 of 47,520 frames equal in a stall storm) is played again
    /// (``PulseAudioServer/retryingGraphXruns``), and so is one whose bytes fall short though
    /// the log showed no stall (CI's PipeWire step on fcd5e34: 27,167 frames equal, nothing
    /// logged); the last take is asserted. PulseAudio never retakes.
    private func playReply(sink: String, pulseFormat: String, rate: Int, expected: StreamFormat) throws {
        _ = try server.pactl(["load-module", "module-null-sink", "sink_name=\(sink)", "format=\(pulseFormat)", "rate=\(rate)",
                              "channels=2", "norewinds=1"])
        let periodFrames = stream.periodFrames(atRate: rate), minimumFrames = rate * 99 / 100
        var take = 0
        let (bytes, signal) = try server.retryingGraphXruns(spoiledOnPipeWire: { (take: ([UInt8], [Int16])) in
            guard let match = try? ConvertedReference.closestMatch(recorded: take.0, signal: take.1, device: expected,
                                                                   periodFrames: periodFrames),
                  match.equalFrames < minimumFrames else { return nil }
            return "the monitor's bytes equal the engine's conversion for only \(match.equalFrames) frames"
        }) { () throws -> ([UInt8], [Int16]) in
            take += 1
            return try recordReply(sink: sink, pulseFormat: pulseFormat, rate: rate, expected: expected, take: take)
        }
        try ConvertedReference.assertEqual(recorded: bytes, signal: signal, device: expected,
                                           periodFrames: periodFrames, minimumFrames: minimumFrames)
    }

    /// One take: the reply played on `sink` and what `parec` recorded of its monitor.
    private func recordReply(sink: String, pulseFormat: String, rate: Int, expected: StreamFormat, take: Int) throws -> ([UInt8], [Int16]) {
        let recording = server.directory.appendingPathComponent("\(sink)-\(take).raw").path
        var environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = server.address
        let parec = try ChildProcess(executable: "/usr/bin/parec", arguments: [
            "-d", "\(sink).monitor", "--raw", "--format=\(pulseFormat)", "--rate=\(rate)", "--channels=2", "--latency-msec=20",
        ], environment: environment, stdoutPath: recording)
        defer { _ = parec.terminate() }
        func recordedBytes() -> Int { (try? FileManager.default.attributesOfItem(atPath: recording)[.size] as? Int) ?? 0 }
        XCTAssertTrue(Poll.until(timeout: 10) { recordedBytes() > 0 }, "parec records nothing")

        let signal = try PlayerEventLog.playReply(on: .pulse(device: sink), stream: stream, expecting: expected) {
            // The monitor runs behind the sink: wait for 300 ms more of recording.
            let have = recordedBytes()
            XCTAssertTrue(Poll.until(timeout: 10) { recordedBytes() >= have + rate * 3 / 10 * expected.bytesPerFrame })
        }
        _ = parec.terminate()
        return ([UInt8](try Data(contentsOf: URL(fileURLWithPath: recording))), signal)
    }

    func testAFloat32StereoSinkAt48kHzRecordsTheEnginesConversion() throws {
        try playReply(sink: "hifi", pulseFormat: "float32le", rate: 48_000, expected: StreamFormat(sampleRate: 48_000, channels: 2, sampleFormat: .float))
    }

    func testAnS16StereoSinkAt44kHzRecordsTheEnginesDitheredConversion() throws {
        if server.kind == .pipewire {
            // pipewire-pulse presents every sink as float32 (PipeWire's own sample format) and
            // resamples a 44.1 kHz sink through its 48 kHz graph: no s16 sink exists whose
            // bytes could equal the engine's. What holds is that the sink says float32, so the
            // engine opens it as float; PipeWire's native path is the float32 48 kHz test.
            _ = try server.pactl(["load-module", "module-null-sink", "sink_name=cd", "format=s16le", "rate=44100", "channels=2"])
            let sinks = try server.pactl(["list", "short", "sinks"])
            XCTAssertTrue(sinks.split(separator: "\n").contains { $0.contains("\tcd\t") && $0.contains("float32le 2ch 44100Hz") }, sinks)
            return
        }
        try playReply(sink: "cd", pulseFormat: "s16le", rate: 44_100, expected: StreamFormat(sampleRate: 44_100, channels: 2, sampleFormat: .s16))
    }
}
