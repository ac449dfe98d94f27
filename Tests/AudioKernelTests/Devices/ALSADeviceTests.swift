import AudioKernel
import TestSupport
import XCTest

/// ALSA through its `file` plugin: the real alsa-lib code path, with capture samples read
/// from a raw file and playback written to one.
final class ALSADeviceTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = try makeTemporaryDirectory()
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: dir)
    }

    func testCaptureReturnsTheFixtureSamplesExactly() throws {
        let fixture = Loopback.signal(count: 12_000)
        // The plugin has no clock and repeats stale data past the end of the file: pad with
        // more silence than the test reads.
        let raw = dir.appendingPathComponent("in.raw")
        try Data(WAVBuilder.samples(fixture + [Int16](repeating: 0, count: 48_000))).write(to: raw)
        var config = AudioStreamConfiguration()
        config.alsaConfiguration = """
            pcm.fixture { type file slave.pcm null file "/dev/null" infile "\(raw.path)" format raw }
            """
        let device = try CaptureDevice(name: .alsa(pcm: "fixture"), configuration: config)
        let probe = DeviceProbe()
        try device.start(onPeriod: { probe.append($0) }, onEvent: { if $0 == .started { probe.record(.started) } })
        XCTAssertTrue(probe.wait(timeout: 10) { $0.samples.count >= 24_000 }, "no samples captured")
        device.stop()
        let captured = probe.snapshot().samples
        XCTAssertEqual(Array(captured[0..<fixture.count]), fixture)
        XCTAssertEqual(Array(captured[fixture.count..<24_000]), [Int16](repeating: 0, count: 24_000 - fixture.count))
        XCTAssertEqual(probe.snapshot().events.first, .started)
        XCTAssertEqual(device.statistics.xruns, 0)
        XCTAssertGreaterThanOrEqual(device.statistics.periods, 100)
    }

    func testPlaybackWritesExactlyWhatWasPlayed() throws {
        let signal = Loopback.signal(count: 240 * 50)
        let raw = dir.appendingPathComponent("out.raw")
        var config = AudioStreamConfiguration()
        config.alsaConfiguration = """
            pcm.recorder { type file slave.pcm null file "\(raw.path)" format raw }
            """
        let device = try PlaybackDevice(name: .alsa(pcm: "recorder"), configuration: config)
        let source = SignalSource(signal)
        try device.start(renderPCM16: { source.render(into: $0) })
        XCTAssertTrue(source.wait(timeout: 10) { $0 >= signal.count + 240 * 4 }, "playback did not consume the signal")
        device.stop(drain: true)
        XCTAssertEqual(device.statistics.xruns, 0)
        let written = [UInt8](try Data(contentsOf: raw))
        XCTAssertGreaterThanOrEqual(written.count, signal.count * 2)
        XCTAssertEqual(Array(written[0..<(signal.count * 2)]), WAVBuilder.samples(signal))
        // After the signal the source renders silence: nothing else was written.
        XCTAssertTrue(written[(signal.count * 2)...].allSatisfy { $0 == 0 })
    }

    func testMissingDeviceFailsFastWithAClearError() throws {
        let start = Date()
        let device = try CaptureDevice(name: .alsa(pcm: "hw:97,0"))
        XCTAssertThrowsError(try device.start(onPeriod: { _ in })) { error in
            guard let error = error as? AudioError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.kind, .openFailed)
            XCTAssertTrue(error.operation.contains("hw:97,0"), error.description)
            XCTAssertLessThan(error.code, 0, "keeps the ALSA error code")
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.0)
        XCTAssertFalse(device.isRunning)
    }

    func testListsALSAPCMs() {
        let (devices, _) = AudioDeviceList.all(pulseServer: "unix:/nonexistent/socket")
        XCTAssertTrue(devices.contains { $0.name == .alsa(pcm: "null") }, "\(devices.map(\.name))")
    }
}

/// Renders a fixed signal, then silence, and counts the samples handed out.
final class SignalSource: @unchecked Sendable {
    private let signal: [Int16]
    private let progress = Awaitable((position: 0, periods: 0))
    /// When set, the render call for that period index sleeps this long (an injected stall).
    var stall: (period: Int, microseconds: UInt32)?

    init(_ signal: [Int16]) { self.signal = signal }

    var position: Int { progress.value.position }

    func render(into buffer: UnsafeMutableBufferPointer<Int16>) {
        let (start, period) = progress.update { p -> (Int, Int) in
            defer {
                p.position += buffer.count
                p.periods += 1
            }
            return (p.position, p.periods + 1)
        }
        for i in 0..<buffer.count {
            let index = start + i
            buffer[i] = index < signal.count ? signal[index] : 0
        }
        if let stall, stall.period == period { usleep(stall.microseconds) }
    }

    /// Waits until `predicate(position)` holds, at most `timeout` seconds.
    func wait(timeout: TimeInterval, _ predicate: (Int) -> Bool) -> Bool {
        progress.wait(timeout: timeout) { predicate($0.position) }
    }
}
