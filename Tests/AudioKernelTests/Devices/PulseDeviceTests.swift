import AudioKernel
import TestSupport
import XCTest

/// PulseAudio headless with a null sink: what is played into `kiosk` is recorded from
/// `kiosk.monitor`, a true loopback through the real server.
final class PulseDeviceTests: PulseAudioTestCase {
    /// Plays `signal` into the sink while recording its monitor; returns the recording, the
    /// time playback took, and the playback latency seen.
    private func loopback(_ signal: [Int16], sink: AudioDeviceName = .pulse(device: "kiosk"), monitor: AudioDeviceName = .pulse(device: "kiosk.monitor"),
                          stream: AudioStreamConfiguration? = nil) throws -> (recording: [Int16], seconds: Double, playback: AudioDeviceStatistics) {
        let stream = stream ?? self.stream
        let capture = try CaptureDevice(name: monitor, configuration: stream)
        let probe = DeviceProbe()
        try capture.start(onPeriod: { probe.append($0) })
        XCTAssertTrue(probe.wait(timeout: 5) { $0.periods >= 5 }, "monitor delivers nothing")
        let playback = try PlaybackDevice(name: sink, configuration: stream)
        let source = SignalSource(signal)
        let start = Date()
        try playback.start(renderPCM16: { source.render(into: $0) })
        // Once the period after the signal is asked for, the whole signal has been written.
        XCTAssertTrue(source.wait(timeout: Double(signal.count) / 24_000 + 5) { $0 > signal.count + stream.periodSamples })
        playback.stop(drain: true)
        let seconds = Date().timeIntervalSince(start)
        let stats = playback.statistics
        // Let the monitor catch the tail: wait for 200 ms more of recording.
        let have = probe.snapshot().samples.count
        XCTAssertTrue(probe.wait(timeout: 5) { $0.samples.count >= have + 4_800 })
        capture.stop()
        return (probe.snapshot().samples, seconds, stats)
    }

    func testLoopbackRecordsWhatWasPlayedInRealTime() throws {
        let signal = Loopback.signal(count: 48_000)  // 2 s
        // A take PipeWire's graph stalled in is played again (PulseAudioServer.retryingGraphXruns),
        // and so is one whose monitor lost part of the signal though the log showed no stall.
        let (recording, seconds, stats) = try server.retryingGraphXruns(spoiledOnPipeWire: { server.holeThroughTheMonitor(signal, in: $0.0) }) {
            try loopback(signal)
        }
        guard let lag = Loopback.align(signal, in: recording) else { return XCTFail("signal not found in the monitor recording") }
        XCTAssertLessThanOrEqual(lag + signal.count, recording.count, "the recording ends before the signal")
        server.assertCarried(signal, in: recording, at: lag, "the loopback")
        // Pacing: 2 s of audio takes about 2 s (prebuffer and drain included).
        XCTAssertGreaterThan(seconds, 1.9)
        XCTAssertLessThan(seconds, 2.6)
        // Latency within the configured budget: the buffer plus two periods.
        let latency = try XCTUnwrap(stats.latencyFrames, "no latency reported")
        XCTAssertLessThanOrEqual(latency, stream.bufferFrames + 2 * stream.periodFrames)
        XCTAssertEqual(stats.xruns, 0)
    }

    /// The same loopback through ALSA, as an ALSA program reaches the server: alsa-plugins'
    /// `pulse` PCM on PulseAudio, pipewire-alsa's `pipewire` PCM on PipeWire.
    func testALSALoopbackThroughTheServersPCMRecordsWhatWasPlayed() throws {
        var alsa = stream
        alsa.alsaConfiguration = try server.alsaPCM(named: "kioskout", sink: "kiosk") + "\n"
            + server.alsaPCM(named: "kioskin", sink: "kiosk", source: "kiosk.monitor")
        let signal = Loopback.signal(count: 48_000)
        // On PipeWire, an xrun pipewire-alsa reports in a take whose stall the server's log
        // missed spoils the take too (in 2 of 3 CI runs here, 1 or 2 xruns, none logged),
        // and so does a monitor that lost part of the signal with neither logged nor reported
        // (once in CI, a passband SNR of 3.5 dB), as in the PulseAudio API's loopback above;
        // the last of three takes must still have none.
        let (recording, seconds, stats) = try server.retryingGraphXruns(spoiledOnPipeWire: {
            $0.2.xruns > 0 ? "pipewire-alsa reported \($0.2.xruns) xruns" : server.holeThroughTheMonitor(signal, in: $0.0)
        }) {
            try loopback(signal, sink: .alsa(pcm: "kioskout"), monitor: .alsa(pcm: "kioskin"), stream: alsa)
        }
        let lag = try XCTUnwrap(Loopback.align(signal, in: recording), "signal not found in the monitor recording")
        server.assertCarried(signal, in: recording, at: lag, "the ALSA loopback")
        XCTAssertGreaterThan(seconds, 1.9)
        XCTAssertLessThan(seconds, 2.8)
        XCTAssertEqual(stats.xruns, 0)
    }

    /// The fixture written into a pipe source comes through the capture device. The pipe has
    /// no clock of its own on PulseAudio: whatever is written is captured. On PipeWire a take
    /// whose graph stalled is written again (``PulseAudioServer/retryingGraphXruns``): 1 run
    /// in 6 here logged "client too slow" on the pipe source in the graph's first cycles and
    /// read 0.1 dB (82.1 dB in the others).
    func testPipeSourceMicrophoneDeliversTheFixture() throws {
        let fixture = Loopback.signal(count: 24_000, seed: 11)
        var takes = 0
        let recording = try server.retryingGraphXruns(spoiledOnPipeWire: { server.holeThroughTheMonitor(fixture, in: $0) }) { () throws -> [Int16] in
            takes += 1
            let name = "mic\(takes)", fifo = server.directory.appendingPathComponent("\(name).fifo").path
            try server.pactl(["load-module", "module-pipe-source", "source_name=\(name)", "file=\(fifo)",
                              "format=s16le", "rate=24000", "channels=1"])
            let capture = try CaptureDevice(name: .pulse(device: name), configuration: stream)
            let probe = DeviceProbe()
            try capture.start(onPeriod: { probe.append($0) })
            let writer = Thread {
                guard let handle = FileHandle(forWritingAtPath: fifo) else { return }
                try? handle.write(contentsOf: Data(WAVBuilder.samples(fixture + [Int16](repeating: 0, count: 4_800))))
                try? handle.close()
            }
            writer.start()
            XCTAssertTrue(probe.wait(timeout: 10) { probe in
                guard let lag = Loopback.align(fixture, in: probe.samples) else { return false }
                return probe.samples.count >= lag + fixture.count
            }, "the fixture did not come through the pipe source")
            capture.stop()
            return probe.snapshot().samples
        }
        let lag = try XCTUnwrap(Loopback.align(fixture, in: recording))
        server.assertCarried(fixture, in: recording, at: lag, "the pipe source")
    }

    /// The rig's microphone feeder wakes late in the middle of the words, as on a loaded
    /// machine. PipeWire's pipe source reads its FIFO at the graph's clock and fills what is
    /// missing with zeros: without a lead the words after the hole come later, and one lag
    /// no longer finds them (CI: 18 dB). The rig's lead covers a wake-up 250 ms late: CI's
    /// PipeWire step, on a loaded machine, read 12 dB through the 100 ms lead it had before.
    /// PulseAudio's pipe source waits for the data either way.
    func testTheMicrophoneFeedersLeadCoversALateWakeUp() throws {
        let fixture = Loopback.signal(count: 24_000, seed: 13)
        var takes = 0
        func take(lead: Int, late: Int) throws -> (snr: Double, holes: Int) {
            takes += 1
            let name = "late\(takes)"
            let fifo = server.directory.appendingPathComponent("\(name).fifo").path
            try server.pactl(["load-module", "module-pipe-source", "source_name=\(name)", "file=\(fifo)",
                              "format=s16le", "rate=24000", "channels=1"])
            let capture = try CaptureDevice(name: .pulse(device: name), configuration: stream)
            let probe = DeviceProbe()
            try capture.start(onPeriod: { probe.append($0) })
            let feeder = try MicrophoneFeeder(fifo: fifo, lead: lead)
            defer { feeder.stop(); capture.stop() }
            // The source is running and the feeder steady before the words.
            XCTAssertTrue(feeder.written.wait(timeout: 10) { $0 >= 12_000 })
            feeder.say(fixture)
            XCTAssertTrue(feeder.spoken.wait(timeout: 10) { $0 >= 12_000 })
            feeder.wakeLate(milliseconds: late)
            XCTAssertTrue(feeder.spoken.wait(timeout: 10) { $0 >= fixture.count })
            let written = feeder.written.value
            XCTAssertTrue(feeder.written.wait(timeout: 10) { $0 >= written + 7_200 })
            XCTAssertTrue(probe.wait(timeout: 5) { probe in
                guard let lag = Loopback.align(Array(fixture[..<9_600]), in: probe.samples) else { return false }
                return probe.samples.count >= lag + fixture.count
            }, "the words did not come through the pipe source")
            let recording = probe.snapshot().samples
            let lag = try XCTUnwrap(Loopback.align(Array(fixture[..<9_600]), in: recording))
            let snr = server.passesPCM16Unchanged && Array(recording[lag..<(lag + fixture.count)]) == fixture ? .infinity
                : PCMFidelity.passbandSNR(reference: fixture, recording: recording, lag: lag)
            return (snr, feeder.holes.load(ordering: .relaxed))
        }
        let bare = try take(lead: 0, late: 60)
        // This take is to have no hole: one the graph stalled in is taken again, and so is one
        // that lost words on PipeWire though its log showed no stall (the feeder's own holes
        // are what the test asserts, so they never spoil a take).
        let led = try server.retryingGraphXruns(spoiledOnPipeWire: { (led: (snr: Double, holes: Int)) in
            led.snr < server.minimumSNR ? String(format: "the words at %.1f dB through the pipe source", led.snr) : nil
        }) { try take(lead: MicrophoneFeeder.defaultLead, late: 250) }
        print("a feeder late through \(server.kind): passband SNR \(String(format: "%.1f", bare.snr)) dB 60 ms late without a lead, \(String(format: "%.1f", led.snr)) dB 250 ms late with the rig's lead")
        if server.kind == .pipewire {
            XCTAssertLessThan(bare.snr, server.minimumSNR, "PipeWire's pipe source waited for a late feeder")
        } else {
            XCTAssertEqual(bare.snr, .infinity, "PulseAudio's pipe source waits for the data")
        }
        XCTAssertGreaterThan(bare.holes, 0, "the feeder did not tell the hole it made")
        XCTAssertEqual(led.holes, 0, "the feeder told a hole its lead covered")
        XCTAssertGreaterThanOrEqual(led.snr, server.minimumSNR, "the lead did not cover the late wake-up")
    }

    /// A source with no clock that delivers nothing must not hold `stop`: the read waits on
    /// the main loop, which stop signals.
    func testStopReturnsWhileASilentPipeSourceDeliversNothing() throws {
        let fifo = server.directory.appendingPathComponent("quiet.fifo").path
        try server.pactl(["load-module", "module-pipe-source", "source_name=quiet", "file=\(fifo)",
                          "format=s16le", "rate=24000", "channels=1"])
        let capture = try CaptureDevice(name: .pulse(device: "quiet"), configuration: stream)
        try capture.start(onPeriod: { _ in })
        let start = Date()
        capture.stop()
        XCTAssertLessThan(Date().timeIntervalSince(start), 0.1, "stop waited for data that never came")
        XCTAssertFalse(capture.isRunning)
    }

    func testKilledServerIsReportedAndTheDeviceComesBack() throws {
        let capture = try CaptureDevice(name: .pulse(device: "kiosk.monitor"), configuration: stream)
        let probe = DeviceProbe()
        try capture.start(onPeriod: { probe.append($0) }, onEvent: { event in
            switch event {
            case .deviceLost(let error): probe.record(.lost(error.kind.rawValue))
            case .deviceRestored(let attempts): probe.record(.restored(attempts))
            default: break
            }
        })
        XCTAssertTrue(probe.wait(timeout: 5) { $0.periods >= 10 })
        server.kill()
        XCTAssertTrue(probe.wait(timeout: 5) { $0.events.contains(.lost("device_lost")) }, "\(probe.snapshot().events)")
        try server.start()
        XCTAssertTrue(probe.wait(timeout: 10) { $0.events.contains { if case .restored = $0 { return true } else { return false } } },
                      "\(probe.snapshot().events)")
        let periodsAfter = probe.snapshot().periods
        XCTAssertTrue(probe.wait(timeout: 5) { $0.periods >= periodsAfter + 10 }, "no periods after the restart")
        capture.stop()
        XCTAssertEqual(capture.statistics.losses, 1)
        XCTAssertEqual(capture.statistics.reopens, 1)
    }

    func testMissingSinkFailsFast() throws {
        let start = Date()
        let device = try PlaybackDevice(name: .pulse(device: "no-such-sink"), configuration: stream)
        XCTAssertThrowsError(try device.start(render: { (buffer: UnsafeMutableBufferPointer<Float>) in buffer.update(repeating: 0) })) { error in
            guard let error = error as? AudioError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.kind, .openFailed)
            XCTAssertTrue(error.description.contains("no-such-sink"), error.description)
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
    }

    func testListsSinksAndSources() {
        let (devices, errors) = AudioDeviceList.all(pulseServer: server.address)
        XCTAssertEqual(errors, [])
        XCTAssertTrue(devices.contains(AudioDeviceInfo(name: .pulse(device: "kiosk"), description: devices.first { $0.name == .pulse(device: "kiosk") }?.description ?? "", direction: .playback)))
        XCTAssertTrue(devices.contains { $0.name == .pulse(device: "kiosk.monitor") && $0.direction == .capture })
        XCTAssertTrue(devices.contains { $0.name == .alsa(pcm: "null") })
    }

    func testAutoPicksPulseWhenAServerAnswers() throws {
        let device = try CaptureDevice(name: .automatic, configuration: stream)
        let probe = DeviceProbe()
        try device.start(onPeriod: { probe.append($0) })
        XCTAssertTrue(probe.wait(timeout: 5) { $0.periods >= 5 })
        device.stop()
        let clients = try server.pactl(["list", "short", "source-outputs"])
        XCTAssertEqual(clients.trimmingCharacters(in: .whitespacesAndNewlines), "", "the stream is closed after stop")
    }

    /// ALSA with a real clock: alsa-plugins' `pulse` PCM on the headless server. A stalled
    /// render makes a real underrun, which is recovered and counted; playback goes on.
    func testALSAUnderrunFromAStallIsRecoveredAndCounted() throws {
        var alsa = AudioStreamConfiguration()
        alsa.alsaConfiguration = try server.alsaPCM(named: "kioskpulse", sink: "kiosk", pulseOptions: "handle_underrun true")
        let device = try PlaybackDevice(name: .alsa(pcm: "kioskpulse"), configuration: alsa)
        let source = SignalSource(Loopback.signal(count: 24_000 * 3))
        source.stall = (period: 30, microseconds: 300_000)
        let probe = DeviceProbe()
        try device.start(renderPCM16: { source.render(into: $0) }, onEvent: { if case .xrun(let n) = $0 { probe.record(.xrun(n)) } })
        XCTAssertTrue(probe.wait(timeout: 5) { $0.events.contains(.xrun(1)) }, "no xrun reported")
        let after = source.position
        XCTAssertTrue(source.wait(timeout: 5) { $0 >= after + 24_000 / 2 }, "playback did not go on after the xrun")
        device.stop()
        XCTAssertGreaterThanOrEqual(device.statistics.xruns, 1)
    }

    /// The ALSA path of a vanished device: the pulse PCM's server is killed mid-stream; the
    /// ALSA error is reported as a loss and the PCM is reopened once the server is back.
    func testALSADeviceThatVanishesIsReopenedWithBackoff() throws {
        var alsa = AudioStreamConfiguration()
        alsa.alsaConfiguration = try server.alsaPCM(named: "kioskpulse", sink: "kiosk")
        let device = try PlaybackDevice(name: .alsa(pcm: "kioskpulse"), configuration: alsa)
        let source = SignalSource(Loopback.signal(count: 24_000 * 20))
        let probe = DeviceProbe()
        try device.start(renderPCM16: { source.render(into: $0) }, onEvent: { event in
            switch event {
            case .deviceLost(let error): probe.record(.lost(error.operation))
            case .deviceRestored(let attempts): probe.record(.restored(attempts))
            default: break
            }
        })
        XCTAssertTrue(source.wait(timeout: 5) { $0 >= 2_400 })
        server.kill()
        XCTAssertTrue(probe.wait(timeout: 5) { $0.events.contains { if case .lost(let op) = $0 { return op.contains("kioskpulse") } else { return false } } },
                      "\(probe.snapshot().events)")
        try server.start()
        XCTAssertTrue(probe.wait(timeout: 10) { $0.events.contains { if case .restored = $0 { return true } else { return false } } },
                      "\(probe.snapshot().events)")
        let after = source.position
        XCTAssertTrue(source.wait(timeout: 5) { $0 >= after + 4_800 }, "playback did not resume")
        device.stop()
        XCTAssertGreaterThanOrEqual(device.statistics.reopens, 1)
    }
}
