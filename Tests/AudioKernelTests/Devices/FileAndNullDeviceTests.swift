import AudioKernel
import TestSupport
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

    func testFileCaptureRejectsAnotherFormat() throws {
        let path = dir.appendingPathComponent("stereo.wav").path
        try Data(WAVEncoder.encode([1, 2, 3, 4], format: WAVFormat(sampleRate: 48_000, channels: 2))).write(to: URL(fileURLWithPath: path))
        let device = try CaptureDevice(name: .file(path: path, realTime: false))
        XCTAssertThrowsError(try device.start(onPeriod: { _ in })) { error in
            XCTAssertEqual((error as? AudioError)?.kind, .unsupportedFormat)
        }
        let missing = try CaptureDevice(name: .file(path: dir.appendingPathComponent("none.wav").path, realTime: false))
        XCTAssertThrowsError(try missing.start(onPeriod: { _ in })) { error in
            XCTAssertEqual((error as? AudioError)?.kind, .openFailed)
        }
    }

    func testRealTimeFilePlaybackIsPacedAndWritesAWAV() throws {
        let path = dir.appendingPathComponent("out.wav").path
        let signal = Loopback.signal(count: 12_000)  // 0.5 s
        let device = try PlaybackDevice(name: .file(path: path, realTime: true))
        let source = SignalSource(signal)
        let start = Date()
        try device.start(render: { source.render(into: $0) })
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
