@testable import AudioKernel
import TestSupport
import XCTest

/// The recorder and the player on real PulseAudio: a pipe-source microphone fed with
/// espeak-ng speech over background noise, and the null sink recorded through its monitor.
final class EnginePulseTests: PulseAudioTestCase {
    /// A phrase spoken by espeak-ng, as PCM16 24 kHz mono.
    func speak(_ text: String) throws -> [Int16] {
        let dir = server.directory
        let raw = dir.appendingPathComponent("espeak-\(UUID().uuidString).wav").path
        let converted = raw + ".24k.wav"
        try runTool("espeak-ng", ["-w", raw, text])
        try runTool("sox", [raw, "-r", "24000", "-c", "1", "-b", "16", "-e", "signed-integer", converted])
        return try WAVDecoder.decode(contentsOfFile: converted).samples
    }

    /// Adds deterministic background noise to a whole script.
    func addNoise(_ samples: inout [Int16], amplitude: Double) {
        var g = SeededGenerator(seed: 99)
        for i in samples.indices {
            samples[i] = Int16(clamping: Int(samples[i]) + Int(Double.random(in: -1...1, using: &g) * amplitude))
        }
    }

    /// Feeds `samples` into a new pipe-source microphone named `name` from a thread.
    func microphone(_ name: String, playing samples: [Int16]) throws {
        let fifo = server.directory.appendingPathComponent("\(name).fifo").path
        try server.pactl(["load-module", "module-pipe-source", "source_name=\(name)", "file=\(fifo)",
                          "format=s16le", "rate=24000", "channels=1"])
        let bytes = Data(WAVBuilder.samples(samples))
        Thread {
            guard let handle = FileHandle(forWritingAtPath: fifo) else { return }
            // A write the server's end of the pipe refuses (it stopped first) is not an error
            // of the test: the throwing write, not the one that traps.
            try? handle.write(contentsOf: bytes)
            try? handle.close()
        }.start()
    }

    func index(of needle: ArraySlice<Int16>, in haystack: [Int16]) -> Int? {
        guard let first = needle.first else { return nil }
        var i = 0
        while i + needle.count <= haystack.count {
            if haystack[i] == first, haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    func testHandsFreeTurnsOnRealSpeechEndAfterTheHangoverWithPreRoll() throws {
        let phrases = ["I would like a coffee, please.", "Yesterday I went to the park with my sister.", "Thank you very much."]
        var script: [Int16] = [Int16](repeating: 0, count: 24_000)
        var utterances: [(start: Int, end: Int)] = []
        for phrase in phrases {
            let speech = try speak(phrase)
            let first = speech.firstIndex { abs(Int($0)) > 300 } ?? 0
            let last = speech.lastIndex { abs(Int($0)) > 300 } ?? speech.count
            utterances.append((script.count + first, script.count + last))
            script += speech + [Int16](repeating: 0, count: 36_000)
        }
        script += [Int16](repeating: 0, count: 48_000)
        addNoise(&script, amplitude: 80)  // a quiet room

        let hangover = 700 * 24
        // A take PipeWire's graph spoiled is recorded again (its microphone resamples in the
        // graph: a stall there is a hole in the words the recorder never saw, 28.9 dB in a
        // turn on a two-core VM, 2026-11-29, or a quantum's shift in where a turn ends).
        // Judged by what the test measures (the words, where each turn starts and ends, the
        // microphone's overruns), not by the log: under CI's four PipeWire servers a take of
        // 14 s nearly always logs a stall somewhere, and this test took 233 s of retakes
        // (2026-11-30) while most of them were whole.
        var takes = 0
        let (turns, xruns) = try server.retryingGraphXruns(loggedStallsSpoil: false, spoiledOnPipeWire: { (take: ([RecordedTurn], Int?)) in
            (take.1 ?? 0) > 0 ? "the microphone reported \(take.1 ?? 0) overruns"
                : holeInTheWords(take.0, of: script, utterances: utterances) ?? misplacedTurn(take.0, of: script, utterances: utterances, hangover: hangover)
        }) { () throws -> ([RecordedTurn], Int?) in
            takes += 1
            let log = EventLog<RecorderEvent>()
            // Each turn re-arms listening from its own event, so the command is applied on the
            // very next period. The pipe source reads its FIFO as fast as it is written (about
            // 16 times real time here), so the 0.8 s between a turn's end and the next phrase
            // pass in some 50 ms: a re-arm from this thread, woken late on a loaded machine,
            // came after the next phrase had begun (CI once got 2 turns of 3).
            let rearm = Locked<Recorder?>(nil)
            let recorder = try Recorder(device: .pulse(device: "mic\(takes)"), stream: stream, configuration: RecorderConfiguration()) { event in
                log.append(event)
                if case .turn = event { rearm.withLock { $0 }?.listen() }
            }
            rearm.withLock { $0 = recorder }
            defer { rearm.withLock { $0 = nil } }
            try microphone("mic\(takes)", playing: script)
            recorder.listen()
            try recorder.start()
            _ = log.wait(timeout: 20) { events in
                events.filter { if case .turn = $0.event { return true } else { return false } }.count >= phrases.count
            }
            recorder.stop()
            return (log.snapshot().compactMap { entry -> RecordedTurn? in if case .turn(let t) = entry.event { return t } else { return nil } },
                    recorder.deviceStatistics?.xruns)
        }
        XCTAssertEqual(turns.count, phrases.count, "one turn per phrase")
        for (i, turn) in turns.prefix(utterances.count).enumerated() {
            let samples = turn.samples
            // Where the turn sits in the script (the noise makes every window unique).
            // PipeWire resamples the microphone, so there the best match near the phrase.
            let found = server.passesPCM16Unchanged ? index(of: samples[0..<480], in: script)
                : PCMFidelity.bestMatch(of: samples[0..<4_800], in: script, near: utterances[i].start, window: 12_000)?.offset
            guard let start = found else { XCTFail("turn \(i) not found in the script"); continue }
            let end = start + samples.count
            server.assertCarried(samples, in: script, at: start, "turn \(i), the microphone's audio")
            XCTAssertLessThanOrEqual(start, utterances[i].start, "turn \(i) misses its first syllable")
            XCTAssertGreaterThanOrEqual(end, utterances[i].start + 1_200)
            print("turn \(i): ends \(Double(end - utterances[i].end - hangover) / 24) ms after speech end + hangover, starts \(Double(utterances[i].start - start) / 24) ms before the first syllable")
            XCTAssertLessThanOrEqual(end - utterances[i].end, hangover + 720, "turn \(i) ended later than hangover + 30 ms")
            XCTAssertGreaterThanOrEqual(end - utterances[i].end, hangover - 240, "turn \(i) ended early")
            XCTAssertEqual(turn.endReason, .endOfSpeech)
            XCTAssertTrue(turn.holdsSpeech)
        }
        XCTAssertEqual(xruns, 0)
    }

    /// Why a take of `turns` through PipeWire's resampling microphone is spoiled in time: a
    /// turn that starts after its first syllable or ends outside the hangover's bounds the
    /// test asserts (a dropped quantum moves the script under the recorder).
    private func misplacedTurn(_ turns: [RecordedTurn], of script: [Int16], utterances: [(start: Int, end: Int)], hangover: Int) -> String? {
        for (i, turn) in turns.prefix(utterances.count).enumerated() where turn.samples.count >= 4_800 {
            guard let start = PCMFidelity.bestMatch(of: turn.samples[0..<4_800], in: script, near: utterances[i].start, window: 12_000)?.offset
            else { return "turn \(i) not found in the script" }
            let overrun = start + turn.samples.count - utterances[i].end - hangover
            if start > utterances[i].start || overrun > 720 || overrun < -240 {
                return "turn \(i) starts \(utterances[i].start - start) samples before its first syllable and ends \(overrun) after the hangover"
            }
        }
        return nil
    }

    /// Why a take of `turns` through PipeWire's resampling microphone is spoiled: a turn
    /// missing, or one whose words came through below ``PulseAudioServer/minimumSNR``.
    private func holeInTheWords(_ turns: [RecordedTurn], of script: [Int16], utterances: [(start: Int, end: Int)]) -> String? {
        guard turns.count == utterances.count else { return "\(turns.count) turns of \(utterances.count)" }
        for (i, turn) in turns.enumerated() where turn.samples.count >= 4_800 {
            guard let start = PCMFidelity.bestMatch(of: turn.samples[0..<4_800], in: script, near: utterances[i].start, window: 12_000)?.offset,
                  start >= 0, start + turn.samples.count <= script.count else { return "turn \(i) not found in the script" }
            let snr = PCMFidelity.passbandSNR(reference: turn.samples, recording: script, lag: start)
            if snr < server.minimumSNR { return String(format: "turn %d's words at %.1f dB", i, snr) }
        }
        return nil
    }

    func testSilentMicrophoneYieldsNoTurnAndALongTurnIsCut() throws {
        var quiet = [Int16](repeating: 0, count: 24_000 * 3)
        addNoise(&quiet, amplitude: 100)
        let speech = try speak("This is a long sentence that keeps going and going for more than two seconds without a pause.")
        var config = RecorderConfiguration()
        config.detector.maximumTurnMilliseconds = 1_500
        let log = EventLog<RecorderEvent>()
        let recorder = try Recorder(device: .pulse(device: "mic2"), stream: stream, configuration: config) { log.append($0) }
        var script = quiet + speech + [Int16](repeating: 0, count: 24_000)
        addNoise(&script, amplitude: 30)
        try microphone("mic2", playing: script)
        recorder.listen()
        try recorder.start()
        XCTAssertTrue(log.wait(timeout: 20) { $0.contains { if case .turn = $0.event { return true } else { return false } } })
        recorder.stop()
        let turns = log.snapshot().compactMap { entry -> RecordedTurn? in if case .turn(let t) = entry.event { return t } else { return nil } }
        XCTAssertEqual(turns.count, 1, "the quiet part made no turn")
        XCTAssertEqual(turns.first?.endReason, .maximumLength)
        XCTAssertEqual(turns.first?.duration ?? 0, 1.5, accuracy: 0.011)
        guard let first = turns.first, let start = server.passesPCM16Unchanged ? index(of: first.samples[0..<480], in: script)
                : PCMFidelity.bestMatch(of: first.samples[0..<4_800], in: script, near: quiet.count, window: 24_000)?.offset
        else { return XCTFail("turn not found") }
        XCTAssertGreaterThanOrEqual(start, quiet.count - 24_000, "the turn began in the quiet part")
    }

    /// End of speech to turn ready, in wall time: bursts of speech are played into the null
    /// sink, the recorder listens on its monitor, and a second capture stream on the same
    /// monitor (the test's ear) notes when the period holding the burst's last loud sample
    /// arrives. Both streams hear the sink at once, so this is the moment the recorder could
    /// first know the speech ended. (The playback side's latency is no measure of that: it
    /// counts the sink's own latency, which the monitor does not wait for; on PipeWire that is
    /// a graph quantum, and the estimate drifted by 20 ms under load.)
    func testEndOfSpeechToTurnReadyLatency() throws {
        let turns = EventLog<Int>()
        let recorder = try Recorder(device: .pulse(device: "kiosk.monitor"), stream: stream) { event in
            if case .turn = event { turns.append(0) }
        }
        try recorder.start()
        let ear = LastLoudPeriod(level: 1_500)
        let capture = try CaptureDevice(name: .pulse(device: "kiosk.monitor"), configuration: stream)
        try capture.start(onPeriod: { ear.hear($0) })
        var burst = MicrophoneScript(noiseAmplitude: 0)
        burst.speech(ms: 500, amplitude: 6000)
        let script = BurstScript()
        let playback = try PlaybackDevice(name: .pulse(device: "kiosk"), configuration: stream)
        try playback.start(renderPCM16: { script.render(into: $0) })
        var results: [Double] = []
        for trial in 1...8 {
            recorder.listen()
            ear.reset()
            script.load(burst.samples)
            XCTAssertTrue(turns.wait(timeout: 10) { $0.count >= trial }, "no turn in trial \(trial)")
            guard let turnTime = turns.snapshot().last?.time, let heard = ear.lastLoud else { continue }
            results.append(turnTime.timeIntervalSince(heard) - 0.7)
        }
        playback.stop()
        capture.stop()
        recorder.stop()
        let sorted = results.sorted()
        guard sorted.count == 8 else { return XCTFail("\(sorted.count) of 8 trials measured") }
        print("end of speech to turn ready, beyond the 700 ms hangover: p50 \(String(format: "%.1f", sorted[sorted.count / 2] * 1000)) ms, max \(String(format: "%.1f", (sorted.last ?? 0) * 1000)) ms over \(sorted.count) turns; every trial: \(results.map { String(format: "%.1f", $0 * 1000) }.joined(separator: " ")) ms")
        // The typical turn is ready within hangover + one period of the recorder's blocks plus
        // scheduling. One trial may lose a few periods to a loaded machine (CI's PipeWire step
        // saw 55 ms once); what no trial may do is wait on anything beyond the audio, such as
        // a timer or a second hangover, which costs 100 ms or more. Early is bounded by the two
        // streams' periods falling differently: one 10 ms period each way, and the burst's
        // 10 ms release, whose quieter end the ear may still count as loud.
        XCTAssertLessThan(sorted[sorted.count / 2], 0.010 + 0.010 + 0.015, "the median turn")
        for extra in results {
            XCTAssertLessThan(extra, 0.100)
            XCTAssertGreaterThan(extra, -0.020, "a turn ready before 700 ms of quiet had been heard")
        }
    }

    /// Plays `signal` in chunks of random sizes (odd ones included) with network-like delays,
    /// recording the monitor; returns the recording with each period's arrival time.
    func playChunked(_ signal: [Int16], player: StreamingPlayer, monitor: DeviceProbe, stopAfter: Double? = nil) throws -> [Date] {
        let arrival: [Date] = []
        let bytes = WAVBuilder.samples(signal)
        player.beginReply()
        var g = SeededGenerator(seed: 17)
        var offset = 0
        let start = Date()
        while offset < bytes.count {
            let n = min(bytes.count - offset, Int.random(in: 1...9_601, using: &g))
            player.enqueue(Array(bytes[offset..<(offset + n)]))
            offset += n
            // The network: bursts a little faster than real time, with jitter.
            usleep(UInt32(Double(n) / 48_000 * 0.7 * 1_000_000 * Double.random(in: 0.5...1.5, using: &g)))
            if let stopAfter, Date().timeIntervalSince(start) >= stopAfter {
                player.stop()
                return arrival
            }
        }
        player.endReply()
        return arrival
    }

    /// One chunked reply played on the kiosk sink and recorded through its monitor.
    struct ChunkedPlayback {
        var recording: [Int16]
        var events: [(event: PlayerEvent, time: Date)]
        var finishedAt: Date?
        var times: ArrivalTimes
    }

    func playChunkedReplyOnce(_ signal: [Int16]) throws -> ChunkedPlayback {
        let monitor = DeviceProbe()
        let times = ArrivalTimes()
        let capture = try CaptureDevice(name: .pulse(device: "kiosk.monitor"), configuration: stream)
        try capture.start(onPeriod: { period in
            monitor.append(period)
            times.add(period.count)
        })
        let log = EventLog<PlayerEvent>()
        let player = try StreamingPlayer(device: .pulse(device: "kiosk"), stream: stream) { log.append($0) }
        try player.start()
        _ = try playChunked(signal, player: player, monitor: monitor)
        let finished = log.wait(timeout: 10) { $0.contains { if case .finished = $0.event { return true } else { return false } } }
        let finishedAt = finished ? log.snapshot().first { if case .finished = $0.event { return true } else { return false } }?.time : nil
        let have = monitor.snapshot().samples.count
        _ = monitor.wait(timeout: 5) { $0.samples.count >= have + 4_800 }
        player.shutdown()
        capture.stop()
        return ChunkedPlayback(recording: monitor.snapshot().samples, events: log.snapshot(), finishedAt: finishedAt, times: times)
    }

    func testChunkedReplyIsPlayedGapFreeAndFinishedComesAfterTheLastSampleIsHeard() throws {
        let signal = Loopback.signal(count: 24_000 * 2)
        // PipeWire's graph, stalled by the machine, puts holes in what the monitor records
        // that no client is told of; such a take is played again (PulseAudioServer), whether
        // its log says so or the reply reads below the server's minimum SNR.
        let take = try server.retryingGraphXruns(spoiledOnPipeWire: { server.holeThroughTheMonitor(signal, in: $0.recording) }) {
            try playChunkedReplyOnce(signal)
        }
        let finishedAt = try XCTUnwrap(take.finishedAt, "the reply never finished")
        let recording = take.recording
        let lag = try XCTUnwrap(Loopback.align(signal, in: recording))
        XCTAssertLessThanOrEqual(lag + signal.count, recording.count)
        let underruns = take.events.filter { if case .underrun = $0.event { return true } else { return false } }.count
        XCTAssertEqual(underruns, 0, "the network kept ahead")
        server.assertCarried(signal, in: recording, at: lag, "the reply, played in order with no gap")
        // The last sample reached the monitor in the period that brought the count past it;
        // `finished` must not come before that.
        let lastHeard = take.times.time(whenCountReached: lag + signal.count)
        let heard = try XCTUnwrap(lastHeard)
        XCTAssertGreaterThanOrEqual(finishedAt.timeIntervalSince(heard), -server.monitorSlack, "finished was reported before the last sample was heard")
        if case .finished(let report) = take.events.last(where: { if case .finished = $0.event { return true } else { return false } })!.event {
            XCTAssertFalse(report.interrupted)
            XCTAssertEqual(report.playedSeconds, 2.0, accuracy: 0.001)
        }
    }

    /// What `retryingGraphXruns` goes by is real: pipewire-pulse stopped for 80 ms while a
    /// reply plays is a stall PipeWire logs as its graph's xrun (no client is told: the
    /// player reports no underrun), and the take is played again, whole.
    func testAStalledPipeWireGraphIsLoggedAndItsTakeIsPlayedAgain() throws {
        try XCTSkipUnless(server.kind == .pipewire, "PulseAudio's null sink has no graph to stall")
        let signal = Loopback.signal(count: 24_000)
        // A stall logged just before: PipeWire logs one in 2 s, so the first attempt's would
        // go unlogged if it began inside that window (``retryingGraphXruns`` waits it out).
        let server = self.server!
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.4) { server.stallPulseLayer(milliseconds: 80) }
        _ = try playChunkedReplyOnce(signal)
        XCTAssertFalse(server.graphXruns.isEmpty, "a stall was logged before the attempts")
        var takes: [ChunkedPlayback] = []
        // A later take a stall reached is played again too, logged or not (the log's limiter
        // let one through unlogged on a loaded host: 21.8 dB, 2026-11-30).
        let take = try server.retryingGraphXruns(spoiledOnPipeWire: { server.holeThroughTheMonitor(signal, in: $0.recording) }) {
            if takes.isEmpty {
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.4) { server.stallPulseLayer(milliseconds: 80) }
            }
            let take = try playChunkedReplyOnce(signal)
            takes.append(take)
            return take
        }
        // The first take, the one stalled, was discarded. A loaded machine may stall a later
        // take by itself (CI's did, twice in a run), and that one is played again too.
        XCTAssertGreaterThanOrEqual(takes.count, 2, "the stalled take was not seen in PipeWire's log: \(server.graphXruns)")
        XCTAssertFalse(server.graphXruns.isEmpty)
        XCTAssertEqual(takes.first?.events.filter { if case .underrun = $0.event { return true } else { return false } }.count, 0,
                       "the player itself never ran dry")
        let lag = try XCTUnwrap(Loopback.align(signal, in: take.recording))
        server.assertCarried(signal, in: take.recording, at: lag, "the take after the stalled one")
    }

    /// A player on the null sink "kiosk", started, and a capture of the sink's monitor.
    func startPlayerOnTheKioskSink() throws -> (DeviceProbe, CaptureDevice, EventLog<PlayerEvent>, StreamingPlayer) {
        let monitor = DeviceProbe()
        let capture = try CaptureDevice(name: .pulse(device: "kiosk.monitor"), configuration: stream)
        try capture.start(onPeriod: { monitor.append($0) })
        let log = EventLog<PlayerEvent>()
        let player = try StreamingPlayer(device: .pulse(device: "kiosk"), stream: stream) { log.append($0) }
        try player.start()
        return (monitor, capture, log, player)
    }

    /// One take of the park test: what the device counted, the player's events, what the
    /// monitor recorded.
    private struct ParkTake {
        var corked: Bool
        var parkedAtStart: Bool
        var parkedAgain: Bool
        var periodsParked: Int
        var statistics: AudioDeviceStatistics
        var events: [(event: PlayerEvent, time: Date)]
        var recording: [Int16]
    }

    private func parkAndWakeOnce(_ signal: [Int16]) throws -> ParkTake {
        let (monitor, capture, log, player) = try startPlayerOnTheKioskSink()
        let parkedAtStart = Poll.until(timeout: 5) { player.deviceStatistics?.parks == 1 }
        let corked = try server.pactl(["list", "sink-inputs"]).contains("Corked: yes")
        let periodsParked = try XCTUnwrap(player.deviceStatistics).periods
        player.beginReply()
        player.enqueue(WAVBuilder.samples(signal))
        player.endReply()
        XCTAssertTrue(log.wait(timeout: 10) { $0.contains { if case .finished = $0.event { return true } else { return false } } })
        let have = monitor.snapshot().samples.count
        XCTAssertTrue(monitor.wait(timeout: 5) { $0.samples.count >= have + 4_800 })
        let parkedAgain = Poll.until(timeout: 5) { player.deviceStatistics?.parks == 2 }
        let statistics = try XCTUnwrap(player.deviceStatistics)
        player.shutdown()
        capture.stop()
        return ParkTake(corked: corked, parkedAtStart: parkedAtStart, parkedAgain: parkedAgain, periodsParked: periodsParked,
                        statistics: statistics, events: log.snapshot(), recording: monitor.snapshot().samples)
    }

    /// Between sounds the player parks its stream (corked), so that neither the server nor
    /// the I/O thread wakes every period while the kiosk waits for the learner; a reply
    /// wakes it and is heard whole, and the stream parks again after it.
    func testAnIdlePlayerParksItsStreamAndAReplyWakesIt() throws {
        let signal = Loopback.signal(count: 24_000)
        // Measured through the monitor, like the chunked reply: a take during which PipeWire's
        // graph stalled (told to no client) is played again, whether its log says so or the
        // reply reads below the server's minimum SNR (CI read 22.7 and 21.0 dB on PipeWire
        // with the player reporting no underrun). The last take is asserted.
        let take = try server.retryingGraphXruns(spoiledOnPipeWire: { server.holeThroughTheMonitor(signal, in: $0.recording) }) {
            try parkAndWakeOnce(signal)
        }
        XCTAssertTrue(take.parkedAtStart, "an idle player parks its device")
        XCTAssertTrue(take.corked, "the server sees the stream corked")
        XCTAssertTrue(take.parkedAgain, "the stream parks again after the reply")
        XCTAssertGreaterThanOrEqual(take.statistics.periods - take.periodsParked, 100, "the reply's second was played through the device")
        XCTAssertEqual(take.statistics.xruns, 0, "a cork is not an underrun")
        guard case .finished(let report) = take.events.last(where: { if case .finished = $0.event { return true } else { return false } })?.event else {
            return XCTFail("no finished event")
        }
        XCTAssertFalse(report.interrupted)
        XCTAssertEqual(report.underruns, 0)
        XCTAssertEqual(report.playedSeconds, 1.0, accuracy: 0.001)
        let lag = try XCTUnwrap(Loopback.align(signal, in: take.recording))
        server.assertCarried(signal, in: take.recording, at: lag, "the reply after the park, whole and in order")
    }

    /// Whether `turn` holds 200 ms from the middle of `speech`, sample for sample where the
    /// server passes PCM16 unchanged.
    func holds(_ turn: RecordedTurn, _ speech: [Int16]) -> Bool {
        let needle = speech[(speech.count / 2)..<(speech.count / 2 + 4_800)]
        if server.passesPCM16Unchanged { return index(of: needle, in: turn.samples) != nil }
        return (PCMFidelity.bestMatch(of: needle, in: turn.samples)?.snr ?? 0) > 20
    }

    /// Half-duplex, the microphone rests while the kiosk speaks: its stream is corked as
    /// soon as a reply plays, no period is captured until the reply has finished, and then
    /// it listens at once: the learner's answer becomes a hands-free turn. Push-to-talk
    /// during a reply wakes it, and the turn holds the learner's words.
    func testAHalfDuplexMicrophoneRestsWhileTheKioskSpeaks() throws {
        let fifo = server.directory.appendingPathComponent("resting.fifo").path
        unlink(fifo)
        try server.pactl(["load-module", "module-pipe-source", "source_name=resting", "file=\(fifo)", "format=s16le", "rate=24000", "channels=1"])
        // Capturing while the daemon's stream rests, as a real microphone does.
        let feeder = try MicrophoneFeeder(fifo: fifo, keepCapturing: (server.address, "resting"))
        defer { feeder.stop() }
        let (_, monitor, log, player) = try startPlayerOnTheKioskSink()
        defer { player.shutdown(); monitor.stop() }
        let turns = EventLog<RecorderEvent>()
        let recorder = try Recorder(device: .pulse(device: "resting"), stream: stream) { turns.append($0) }
        recorder.follow(player)
        try recorder.start()
        defer { recorder.stop() }
        func capturePeriods() -> Int { recorder.deviceStatistics?.periods ?? 0 }
        func finishedReplies() -> Int { log.snapshot().filter { if case .finished = $0.event { return true } else { return false } }.count }
        XCTAssertTrue(Poll.until(timeout: 5) { capturePeriods() >= 20 }, "the microphone runs")
        XCTAssertEqual(recorder.deviceStatistics?.parks, 0, "nothing plays: the microphone does not rest")

        // A reply of 1.5 s: the microphone rests through it.
        let reply = Loopback.signal(count: 36_000)
        player.beginReply()
        player.enqueue(WAVBuilder.samples(reply))
        player.endReply()
        XCTAssertTrue(Poll.until(timeout: 5) { recorder.deviceStatistics?.parks == 1 }, "the reply rests the microphone")
        let periodsAtRest = capturePeriods()
        XCTAssertTrue(try server.pactl(["list", "source-outputs"]).contains("Corked: yes"), "the server sees the microphone's stream corked")
        XCTAssertTrue(Poll.until(timeout: 10) { finishedReplies() == 1 }, "the reply finished")
        XCTAssertLessThanOrEqual(capturePeriods() - periodsAtRest, 2,
                                 "periods captured while the kiosk spoke (1.5 s is 150)")
        XCTAssertTrue(Poll.until(timeout: 2) { capturePeriods() >= periodsAtRest + 20 }, "the microphone listens again after the reply")
        XCTAssertFalse(try server.pactl(["list", "source-outputs"]).contains("Corked: yes"))

        // The learner answers at once: a hands-free turn.
        let answer = try speak("I would like a coffee, please.")
        recorder.listen()
        feeder.say(answer)
        XCTAssertTrue(turns.wait(timeout: 15) { $0.contains { if case .turn = $0.event { return true } else { return false } } }, "the answer became a turn")
        let first = try XCTUnwrap(turns.snapshot().compactMap { entry -> RecordedTurn? in if case .turn(let t) = entry.event { return t } else { return nil } }.first)
        XCTAssertTrue(first.holdsSpeech)
        XCTAssertTrue(holds(first, answer), "the turn is the learner's answer")

        // Push-to-talk while the tutor speaks: the microphone wakes and records. On PipeWire a
        // take whose words the graph damaged is played again (CI's PipeWire step on cc7b763
        // failed here once, its suites run four at a time on two cores); the last is asserted.
        var take = 0
        let second = try server.retryingGraphXruns(loggedStallsSpoil: false, spoiledOnPipeWire: { (turn: RecordedTurn?) in
            turn.map { self.holds($0, answer) ? nil : "the push-to-talk turn does not hold the learner's words" } ?? nil
        }) { () throws -> RecordedTurn? in
            take += 1
            let parks = recorder.deviceStatistics?.parks ?? 0
            let turnsBefore = turns.snapshot().filter { if case .turn = $0.event { return true } else { return false } }.count
            let repliesBefore = finishedReplies()
            player.beginReply()
            player.enqueue(WAVBuilder.samples(Loopback.signal(count: 72_000)))
            player.endReply()
            XCTAssertTrue(Poll.until(timeout: 5) { recorder.deviceStatistics?.parks == parks + 1 }, "the reply rests the microphone")
            let periodsBeforeTalk = capturePeriods()
            let spokenBefore = feeder.spoken.value
            recorder.beginTurn()
            feeder.say(answer)
            XCTAssertTrue(Poll.until(timeout: 2) { capturePeriods() >= periodsBeforeTalk + 50 }, "push-to-talk wakes the microphone")
            XCTAssertTrue(player.isActive, "the reply still plays")
            XCTAssertTrue(feeder.spoken.wait(timeout: 10) { $0 >= spokenBefore + answer.count })
            recorder.endTurn()
            XCTAssertTrue(turns.wait(timeout: 5) { $0.filter { if case .turn = $0.event { return true } else { return false } }.count == turnsBefore + 1 })
            XCTAssertTrue(Poll.until(timeout: 10) { finishedReplies() == repliesBefore + 1 })
            return turns.snapshot().compactMap { entry -> RecordedTurn? in if case .turn(let t) = entry.event { return t } else { return nil } }.last
        }
        let pushed = try XCTUnwrap(second, "take \(take): no push-to-talk turn")
        XCTAssertTrue(pushed.holdsSpeech)
        XCTAssertTrue(holds(pushed, answer), "the push-to-talk turn holds the learner's words")
        XCTAssertEqual(recorder.deviceStatistics?.xruns, 0, "a rest is not an overrun")
    }

    func testStopMidReplyFadesOutWithinAPeriodAndDoesNotClick() throws {
        let tone = TestSignals.sine(amplitude: 16_000, frequency: 200, count: 24_000 * 3)
        // A take PipeWire's graph stalled in is played again: the monitor's hole is a step of
        // the server's making (7,939 against 920 on a two-core VM, 2026-11-29); on PipeWire so
        // is a take with such a step though the log showed no stall. The last take is asserted.
        let steepest = zip(tone, tone.dropFirst()).map { abs(Int($1) - Int($0)) }.max()!
        let (events, handedAtStop, heard) = try server.retryingGraphXruns(spoiledOnPipeWire: { (take: ([(event: PlayerEvent, time: Date)], Double, [Int16])) in
            let step = zip(take.2, take.2.dropFirst()).map { abs(Int($1) - Int($0)) }.max() ?? 0
            return step > steepest * 11 / 10 ? "a step of \(step) through the monitor" : nil
        }) { () throws -> ([(event: PlayerEvent, time: Date)], Double, [Int16]) in
            let (monitor, capture, log, player) = try startPlayerOnTheKioskSink()
            player.beginReply()
            player.enqueue(WAVBuilder.samples(tone))
            player.endReply()
            XCTAssertTrue(log.wait(timeout: 5) { $0.contains { if case .started = $0.event { return true } else { return false } } })
            XCTAssertTrue(monitor.wait(timeout: 5) { $0.samples.filter { $0 != 0 }.count > 24_000 })  // 1 s heard
            let handedAtStop = player.position
            player.stop()
            XCTAssertTrue(log.wait(timeout: 5) { $0.contains { if case .finished = $0.event { return true } else { return false } } })
            let have = monitor.snapshot().samples.count
            XCTAssertTrue(monitor.wait(timeout: 5) { $0.samples.count >= have + 4_800 })
            player.shutdown()
            capture.stop()
            return (log.snapshot(), handedAtStop, monitor.snapshot().samples)
        }
        guard case .finished(let report) = events.last?.event else { return XCTFail("no finished event") }
        XCTAssertTrue(report.interrupted)
        // At most one period plus the fade was handed to the device after stop.
        XCTAssertLessThanOrEqual(report.playedSeconds - handedAtStop, 0.010 + 0.020 + 0.0005)
        // No click: no step in what was heard larger than the tone's own steepest step.
        let jumps = zip(heard, heard.dropFirst()).map { abs(Int($1) - Int($0)) }
        // PipeWire's resampler rings by a few per cent where the fade bends the tone; a click
        // is a step many times the tone's.
        XCTAssertLessThanOrEqual(jumps.max() ?? 0, server.passesPCM16Unchanged ? steepest + 2 : steepest * 11 / 10)
        // And the tone did stop: the end of the recording is silent.
        XCTAssertTrue(heard.suffix(2_400).allSatisfy { $0 == 0 })
    }
}

/// When each captured period arrived, by the running sample count.
final class ArrivalTimes: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(count: Int, time: Date)] = []
    private var count = 0

    func add(_ samples: Int) {
        lock.lock()
        count += samples
        entries.append((count, Date()))
        lock.unlock()
    }

    func time(whenCountReached target: Int) -> Date? {
        lock.lock()
        defer { lock.unlock() }
        return entries.first { $0.count >= target }?.time
    }
}

/// A burst played once per `load`; reports the render call that hands its last sample over.
/// When the last period holding a sample above `level` arrived.
final class LastLoudPeriod: @unchecked Sendable {
    private let level: Int16
    private let lock = NSLock()
    private var arrival: Date?

    init(level: Int16) { self.level = level }

    func reset() {
        lock.lock()
        arrival = nil
        lock.unlock()
    }

    var lastLoud: Date? {
        lock.lock()
        defer { lock.unlock() }
        return arrival
    }

    func hear(_ period: UnsafeBufferPointer<Int16>) {
        guard period.contains(where: { $0 > level || $0 < -level }) else { return }
        let now = Date()
        lock.lock()
        arrival = now
        lock.unlock()
    }
}

final class BurstScript: @unchecked Sendable {
    private let lock = NSLock()
    private var samples: [Int16] = []
    private var position = 0

    func load(_ burst: [Int16]) {
        lock.lock()
        samples = burst
        position = 0
        lock.unlock()
    }

    /// Renders the next period: the burst once, then silence.
    func render(into buffer: UnsafeMutableBufferPointer<Int16>) {
        lock.lock()
        defer { lock.unlock() }
        for i in 0..<buffer.count { buffer[i] = position + i < samples.count ? samples[position + i] : 0 }
        position += buffer.count
    }
}
