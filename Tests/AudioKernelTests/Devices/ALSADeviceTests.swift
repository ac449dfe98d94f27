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

    /// A sound server's ALSA PCM whose server is gone may report it as an xrun, for ever:
    /// pipewire-alsa's pointer says -EPIPE, and its prepare (which `snd_pcm_recover` calls)
    /// succeeds with a new stream on the dead connection. Recovering again and again, the
    /// I/O thread never saw a loss (1 run in 20 when PipeWire was killed under load). Xruns
    /// sooner after each recovery than a device can run are a lost device: reported at
    /// once (well within the 2 s a stalled PCM is given), reopened when the server is back.
    func testXrunsForEverFromAGoneServerAreALostDeviceThatComesBack() throws {
        let played = dir.appendingPathComponent("played.raw").path
        let gone = dir.appendingPathComponent("server-gone").path
        var stream = AudioStreamConfiguration()
        stream.alsaConfiguration = try FixedALSADevice.configuration(name: "serverpcm", format: "S16_LE", rate: 24_000, channels: 1,
                                                                     file: played, gone: gone)
        let device = try PlaybackDevice(name: .alsa(pcm: "serverpcm"), configuration: stream)
        let source = SignalSource(Loopback.signal(count: 24_000 * 20))
        let probe = DeviceProbe()
        try device.start(renderPCM16: { source.render(into: $0) }, onEvent: { event in
            switch event {
            case .deviceLost(let error): probe.record(.lost("\(error)"))
            case .deviceRestored(let attempts): probe.record(.restored(attempts))
            default: break
            }
        })
        defer { device.stop() }
        XCTAssertTrue(source.wait(timeout: 5) { $0 >= 4_800 }, "the device plays")

        XCTAssertTrue(FileManager.default.createFile(atPath: gone, contents: nil))
        let goneAt = Date()
        XCTAssertTrue(probe.wait(timeout: 1.5) { $0.events.contains { if case .lost = $0 { return true } else { return false } } },
                      "no loss reported; xruns counted: \(device.statistics.xruns)")
        XCTAssertLessThan(Date().timeIntervalSince(goneAt), 1.5)
        let lost = probe.snapshot().events.compactMap { if case .lost(let text) = $0 { return text } else { return nil } }.first ?? ""
        XCTAssertTrue(lost.contains("xruns in a row"), lost)
        XCTAssertLessThanOrEqual(device.statistics.xruns, 10, "the loop went on recovering")

        try FileManager.default.removeItem(atPath: gone)
        XCTAssertTrue(probe.wait(timeout: 10) { $0.events.contains { if case .restored = $0 { return true } else { return false } } },
                      "\(probe.snapshot().events)")
        let after = source.position
        XCTAssertTrue(source.wait(timeout: 5) { $0 >= after + 4_800 }, "playback did not resume")
        XCTAssertGreaterThanOrEqual(device.statistics.reopens, 1)
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
