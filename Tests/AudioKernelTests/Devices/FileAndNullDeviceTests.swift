import AudioKernel
import AudioMeasurement
import TestSupport
import Foundation
import XCTest

final class FileAndNullDeviceTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try makeTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func testFileCaptureDeliversTheFileThenSilenceAndReportsTheEnd() throws {
        let samples = Loopback.signal(count: 2_400)
        let path = dir.appendingPathComponent("in.wav").path
        try Data(WAVEncoder.encode(samples)).write(to: URL(fileURLWithPath: path))
        let device = try CaptureDevice(name: try AudioDeviceName(parsing: "file:\(path)"))
        let probe = DeviceProbe()
        try device.start(onPeriod: { probe.append($0) }, onEvent: { if $0 == .endOfInput { probe.record(.endOfInput) } })
        XCTAssertTrue(probe.wait(timeout: 5) { $0.events.contains(.endOfInput) && $0.samples.count >= 4_800 })
        device.stop()
        let captured = probe.snapshot().samples
        XCTAssertEqual(Array(captured[0..<2_400]), samples)
        XCTAssertTrue(captured[2_400...].allSatisfy { $0 == 0 })
    }

    func testA48kHzStereoFileMicrophoneIsDeliveredAs24kHzMono() throws {
        // A USB microphone's format: 48 kHz stereo. Left carries a 1 kHz tone at 0.5, right
        // the same tone at 0.3: the engine's mono is their average, a 0.4 tone at 24 kHz.
        let frames = 48_000
        var stereo = [Int16](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let x = sin(2 * Double.pi * 1_000 * Double(i) / 48_000)
            stereo[2 * i] = Int16((0.5 * 32_768 * x).rounded())
            stereo[2 * i + 1] = Int16((0.3 * 32_768 * x).rounded())
        }
        let path = dir.appendingPathComponent("usb-mic.wav").path
        try Data(WAVEncoder.encode(stereo, format: WAVFormat(sampleRate: 48_000, channels: 2))).write(to: URL(fileURLWithPath: path))
        let device = try CaptureDevice(name: .file(path: path, realTime: false))
        let probe = DeviceProbe()
        try device.start(onPeriod: { probe.append($0) })
        XCTAssertTrue(probe.wait(timeout: 5) { $0.samples.count >= 24_000 })
        device.stop()
        XCTAssertEqual(device.deviceFormat, StreamFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16))
        let captured = probe.snapshot().samples
        // One second in, 24,000 frames out (a period of 480 frames gives 240 each time).
        XCTAssertTrue(probe.snapshot().periodSizes.allSatisfy { $0 == 240 }, "\(Set(probe.snapshot().periodSizes))")
        let steady = captured[4_096..<20_480].map { Double($0) / 32_768 }
        let spectrum = Spectrum(steady, rate: 24_000)
        XCTAssertEqual(spectrum.amplitude(at: 1_000), 0.4, accuracy: 0.001)
        let thdN = spectrum.thdPlusNoise(fundamental: 1_000)
        XCTAssertLessThan(thdN, -85, "THD+N of the converted microphone \(thdN) dB (PCM16's own floor is about -98 dB)")
    }

    func testFileCaptureRefusesAForcedFormatItIsNotAndAMissingFile() throws {
        let path = dir.appendingPathComponent("stereo.wav").path
        try Data(WAVEncoder.encode([1, 2, 3, 4], format: WAVFormat(sampleRate: 48_000, channels: 2))).write(to: URL(fileURLWithPath: path))
        let forced = try AudioDeviceURI(parsing: "file:\(path)?rate=44100")
        var stream = AudioStreamConfiguration()
        stream.device = forced.format
        let device = try CaptureDevice(name: forced.name, configuration: stream)
        XCTAssertThrowsError(try device.start(onPeriod: { _ in })) { error in
            XCTAssertEqual((error as? AudioError)?.kind, .unsupportedFormat)
            XCTAssertTrue("\(error)".contains("44100"), "\(error)")
        }
        let missing = try CaptureDevice(name: .file(path: dir.appendingPathComponent("none.wav").path, realTime: false))
        XCTAssertThrowsError(try missing.start(onPeriod: { _ in })) { error in
            XCTAssertEqual((error as? AudioError)?.kind, .openFailed)
        }
    }

    /// A capture file that never ends (a device) is refused at its bound, not read until the
    /// process runs out of memory (it aborted allocating 35 GB).
    func testFileCaptureRefusesADeviceThatNeverEnds() throws {
        let endless = try CaptureDevice(name: .file(path: "/dev/zero", realTime: false))
        XCTAssertThrowsError(try endless.start(onPeriod: { _ in })) { error in
            XCTAssertEqual((error as? AudioError)?.kind, .openFailed)
            XCTAssertTrue("\(error)".contains("more than 512 MiB"), "\(error)")
        }
    }

    func testRealTimeFilePlaybackIsPacedAndWritesAWAV() throws {
        let path = dir.appendingPathComponent("out.wav").path
        let signal = Loopback.signal(count: 12_000)  // 0.5 s
        let device = try PlaybackDevice(name: .file(path: path, realTime: true))
        let source = SignalSource(signal)
        let start = Date()
        try device.start(renderPCM16: { source.render(into: $0) })
        XCTAssertTrue(source.wait(timeout: 5) { $0 >= 24_000 })  // 1 s of periods
        let elapsed = Date().timeIntervalSince(start)
        device.stop(drain: true)
        XCTAssertGreaterThan(elapsed, 0.85, "paced in real time")
        XCTAssertLessThan(elapsed, 1.5)
        let written = try WAVDecoder.decode(contentsOfFile: path)
        XCTAssertEqual(Array(written.samples[0..<signal.count]), signal)
    }

    func testNullDeviceIsPacedAndStopsWithinAPeriod() throws {
        let device = try CaptureDevice(name: .null)
        let probe = DeviceProbe()
        let start = Date()
        try device.start(onPeriod: { probe.append($0) })
        XCTAssertTrue(probe.wait(timeout: 3) { $0.periods >= 50 })  // 0.5 s at 10 ms
        XCTAssertGreaterThan(Date().timeIntervalSince(start), 0.4)
        let stopStart = Date()
        device.stop()
        XCTAssertLessThan(Date().timeIntervalSince(stopStart), 0.02, "stop wakes the thread at once")
        XCTAssertTrue(probe.snapshot().samples.allSatisfy { $0 == 0 })
    }
}
