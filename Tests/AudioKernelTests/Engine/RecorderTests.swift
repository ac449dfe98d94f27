@testable import AudioKernel
import TestSupport
import XCTest

final class RecorderTests: XCTestCase {
    func turns(_ log: EventLog<RecorderEvent>) -> [RecordedTurn] {
        log.snapshot().compactMap { if case .turn(let t) = $0.event { return t } else { return nil } }
    }

    /// The turns a default recorder, listening hands-free, makes of `samples`.
    func handsFreeTurns(_ samples: [Int16]) -> [RecordedTurn] {
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder { log.append($0) }
        recorder.listen()
        recorder.feed(samples)
        return turns(log)
    }

    /// Feeds `samples` to `recorder`, doing `act` once the first `at` have been fed.
    func feed(_ recorder: Recorder, _ samples: [Int16], at: Int, then act: () -> Void) {
        recorder.feed(Array(samples[..<at]))
        act()
        recorder.feed(Array(samples[at...]))
    }

    func speechStarts(_ log: EventLog<RecorderEvent>) -> Int {
        log.snapshot().filter { if case .speechStarted = $0.event { return true } else { return false } }.count
    }

    func testHandsFreeTurnsEndAfterTheHangoverAndKeepThePreRoll() throws {
        var mic = MicrophoneScript()
        mic.silence(ms: 1000)
        mic.speech(ms: 900)
        mic.silence(ms: 1500)
        mic.speech(ms: 1200)
        mic.silence(ms: 1500)
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder { log.append($0) }
        var turnEndPositions: [Int] = []
        // Feed period by period, re-arming after each turn, and note where each turn ended.
        var fed = 0
        recorder.listen()
        mic.samples.withUnsafeBufferPointer { all in
            while fed < all.count {
                let before = turns(log).count
                recorder.process(UnsafeBufferPointer(rebasing: all[fed..<min(all.count, fed + 240)]))
                fed += 240
                if turns(log).count > before {
                    turnEndPositions.append(fed)
                    recorder.listen()
                }
            }
        }
        let result = turns(log)
        XCTAssertEqual(result.count, 2)
        let hangover = 700 * 24
        for (i, turn) in result.enumerated() {
            let speech = mic.utterances[i]
            // The end is decided within hangover + one period (10 ms) + 30 ms of the speech's end.
            XCTAssertLessThanOrEqual(turnEndPositions[i] - speech.end, hangover + 30 * 24, "turn \(i)")
            XCTAssertGreaterThanOrEqual(turnEndPositions[i] - speech.end, hangover - 240, "turn \(i) ended early")
            // The first 50 ms of the utterance are in the turn (pre-roll).
            let head = Array(mic.samples[speech.start..<(speech.start + 1200)])
            let samples = turn.samples
            let found = samples.indices.dropLast(1200).contains { Array(samples[$0..<($0 + 1200)]) == head }
            XCTAssertTrue(found, "turn \(i) lost the first 50 ms")
            XCTAssertEqual(turn.endReason, .endOfSpeech)
            // What the learner waited after the last word: the hangover.
            XCTAssertEqual(try XCTUnwrap(turn.endWait, "turn \(i)'s wait"), 0.7, accuracy: 0.04)
            XCTAssertTrue(turn.holdsSpeech)
            XCTAssertEqual(turn.speechDuration, Double(speech.end - speech.start) / 24_000, accuracy: 0.1)
            XCTAssertEqual(try WAVDecoder.decode(turn.wav).samples, samples, "the WAV is valid")
            // Its own bytes, not a share of the recorder's buffer reserved for the longest turn.
            XCTAssertLessThan(turn.wav.capacity, turn.wav.count + 64, "turn \(i) keeps the recorder's whole buffer alive")
        }
    }

    func testSilenceAndNoiseYieldNoTurn() {
        var mic = MicrophoneScript(noiseAmplitude: 150)
        mic.silence(ms: 5000)
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder { log.append($0) }
        recorder.listen()
        recorder.feed(mic.samples)
        XCTAssertTrue(turns(log).isEmpty)
        XCTAssertFalse(log.snapshot().contains { if case .speechStarted = $0.event { return true } else { return false } })
        // Levels are metered about 15 times a second: every 66 ms rounded up to whole 10 ms
        // periods, so every 70 ms: 5 s gives 71 events.
        let levels = log.snapshot().filter { if case .level = $0.event { return true } else { return false } }.count
        XCTAssertEqual(levels, 5000 / 70)
    }

    func testAClickShorterThanTheMinimumIsNotSpeech() {
        var mic = MicrophoneScript()
        mic.silence(ms: 800)
        mic.speech(ms: 120)
        mic.silence(ms: 1500)
        XCTAssertTrue(handsFreeTurns(mic.samples).isEmpty)
    }

    /// Words dip between syllables far below the gate: speech that starts "I would…" is
    /// loud for 60–100 ms at a time. The turn must begin before its first syllable, not at
    /// the first stretch loud for the whole minimum (which cut "I would" off the turn).
    func testAHandsFreeTurnBeginsBeforeTheFirstSyllable() {
        var mic = MicrophoneScript()
        mic.silence(ms: 1000)
        for _ in 0..<3 {
            mic.speech(ms: 90)
            mic.silence(ms: 70)
        }
        mic.speech(ms: 700)
        mic.silence(ms: 1500)
        let made = handsFreeTurns(mic.samples)
        guard let turn = made.first else { return XCTFail("no turn") }
        let first = mic.utterances[0]
        let start = Self.position(of: turn, in: mic.samples)
        XCTAssertNotNil(start, "the turn's audio is not the microphone's")
        // The whole pre-roll before the first syllable, give or take a period.
        XCTAssertLessThanOrEqual(start ?? .max, first.start - 300 * 24 + 240, "the turn began \(((start ?? 0) - first.start) / 24) ms after the first syllable")
        XCTAssertEqual(made.count, 1)
    }

    /// The same with real speech: espeak-ng's "Excuse me, where is the station?" in a room
    /// with some noise ("Ex-" is loud for a moment, then "-cuse" comes after the "k"'s
    /// silence; the turn began 210 ms after the first loud block). The turn holds the whole
    /// pre-roll before the phrase's first block above the gate.
    func testAHandsFreeTurnHoldsTheFirstWordOfRealSpeech() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let raw = directory.appendingPathComponent("phrase.wav").path
        try runTool("espeak-ng", ["-w", raw, "Excuse me, where is the station?"])
        try runTool("sox", [raw, "-r", "24000", "-c", "1", "-b", "16", "-e", "signed-integer", raw + ".24k.wav"])
        let phrase = try WAVDecoder.decode(contentsOfFile: raw + ".24k.wav").samples
        // A room's steady noise under it all (RMS about 115: the detector's thresholds rise
        // with the noise floor).
        var mic = MicrophoneScript(noiseAmplitude: 200)
        mic.silence(ms: 1000)
        var generator = SeededGenerator(seed: 7)
        mic.append(phrase.map { Int16(clamping: Int($0) + Int(Double.random(in: -1...1, using: &generator) * 200)) }, isSpeech: true)
        mic.silence(ms: 1500)
        guard let turn = handsFreeTurns(mic.samples).first else { return XCTFail("no turn") }
        // The phrase's first 10 ms block above the gate: its first syllable.
        let phraseStart = mic.utterances[0].start
        let firstLoud = stride(from: 0, to: phrase.count - 240, by: 240).first { offset in
            SignalLevel(measuring: Array(phrase[offset..<(offset + 240)])).rms > SpeechGate.defaultThreshold
        } ?? 0
        let start = Self.position(of: turn, in: mic.samples)
        XCTAssertNotNil(start, "the turn's audio is not the microphone's")
        print("figures: first loud block \(firstLoud / 24) ms into the phrase; the turn began \(((start ?? 0) - phraseStart - firstLoud) / 24) ms from it")
        XCTAssertLessThanOrEqual(start ?? .max, phraseStart + firstLoud - 300 * 24 + 240,
                                 "the turn began \(((start ?? 0) - phraseStart - firstLoud) / 24) ms after the phrase's first loud block")
        XCTAssertGreaterThanOrEqual(turn.duration, Double(phrase.count - firstLoud) / 24_000, "the turn is shorter than the phrase")
    }

    /// A recorded turn saved either way, as the caller chooses: the WAV byte for byte, or
    /// AAC-LC in MPEG-4 that ffprobe reads as the turn's exact length, ffmpeg decodes without a
    /// warning and our decoder gives back close to the turn. A path that cannot be written is
    /// a clear error and leaves nothing behind.
    func testATurnIsSavedAsWAVOrAsAACInMPEG4() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let raw = directory.appendingPathComponent("phrase.wav").path
        try runTool("espeak-ng", ["-w", raw, "Yesterday I went to the park with my friend."])
        try runTool("sox", [raw, "-r", "24000", "-c", "1", "-b", "16", "-e", "signed-integer", raw + ".24k.wav"])
        var mic = MicrophoneScript(noiseAmplitude: 100)
        mic.silence(ms: 800)
        mic.append(try WAVDecoder.decode(contentsOfFile: raw + ".24k.wav").samples, isSpeech: true)
        mic.silence(ms: 1500)
        let turn = try XCTUnwrap(handsFreeTurns(mic.samples).first)

        let wav = directory.appendingPathComponent("turn.wav").path
        try turn.save(to: wav, as: .wav)
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: wav))), turn.wav)

        let m4a = directory.appendingPathComponent("turn.\(RecordingFileFormat.defaultAAC.fileExtension)").path
        try turn.save(to: m4a, as: .defaultAAC)
        XCTAssertEqual(RecordingFileFormat.defaultAAC.contentType, "audio/mp4")
        let probe = try runTool("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,profile,duration_ts", "-of", "default=noprint_wrappers=1", m4a])
        XCTAssertTrue(probe.contains("codec_name=aac") && probe.contains("profile=LC"), probe)
        XCTAssertTrue(probe.contains("duration_ts=\(turn.samples.count)"), "\(probe) for \(turn.samples.count) samples")
        let log = try runTool("ffmpeg", ["-v", "warning", "-i", m4a, "-f", "null", "-"])
        XCTAssertEqual(log.trimmingCharacters(in: .whitespacesAndNewlines), "")
        let decoded = try MPEG4AudioDecoder(path: m4a).readAll()
        XCTAssertEqual(decoded.count, turn.samples.count)
        var signal = 0.0, noise = 0.0
        for (x, y) in zip(turn.samples, decoded) {
            signal += Double(x) * Double(x)
            noise += (Double(y) - Double(x)) * (Double(y) - Double(x))
        }
        XCTAssertGreaterThan(10 * log10(signal / noise), 12, "the AAC turn is the turn")

        let nowhere = directory.appendingPathComponent("missing/turn.m4a").path
        XCTAssertThrowsError(try turn.save(to: nowhere, as: .defaultAAC)) { error in
            XCTAssertTrue("\(error)".contains("missing/turn.m4a"), "\(error)")
        }
        XCTAssertThrowsError(try turn.save(to: directory.appendingPathComponent("missing/turn.wav").path, as: .wav))
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        XCTAssertEqual(left, ["phrase.wav", "phrase.wav.24k.wav", "turn.m4a", "turn.wav"], "no scratch file left")
    }

    /// Where a turn's first samples are in the microphone's stream (the noise makes them unique).
    static func position(of turn: RecordedTurn, in stream: [Int16]) -> Int? {
        let head = Array(turn.samples.prefix(480))
        guard head.count == 480 else { return nil }
        return stream.indices.dropLast(480).first { stream[$0] == head[0] && Array(stream[$0..<($0 + 480)]) == head }
    }

    func testATurnLongerThanTheMaximumIsCut() {
        var config = RecorderConfiguration()
        config.detector.maximumTurnMilliseconds = 2000
        var mic = MicrophoneScript()
        mic.silence(ms: 500)
        mic.speech(ms: 4000)
        mic.silence(ms: 1000)
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder(configuration: config) { log.append($0) }
        recorder.listen()
        recorder.feed(mic.samples)
        let result = turns(log)
        XCTAssertEqual(result.first?.endReason, .maximumLength)
        // The recording, pre-roll included, is cut at the maximum.
        XCTAssertEqual(result.first?.duration ?? 0, 2.0, accuracy: 0.011)
    }

    func testPushToTalkRecordsBetweenBeginAndEndWithPreRoll() {
        var mic = MicrophoneScript()
        mic.silence(ms: 1000)
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder { log.append($0) }
        recorder.feed(mic.samples)
        recorder.beginTurn()
        var speech = MicrophoneScript()
        speech.speech(ms: 800)
        recorder.feed(speech.samples)
        recorder.endTurn()
        recorder.feed([Int16](repeating: 0, count: 240))  // the command is applied on the next period
        let result = turns(log)
        XCTAssertEqual(result.count, 1)
        XCTAssertEqual(result.first?.endReason, .released)
        XCTAssertNil(result.first?.endWait, "released: the learner waited for nothing")
        // 300 ms of pre-roll, 800 ms of speech, and the period that applied `end`.
        XCTAssertEqual(result.first?.duration ?? 0, 0.3 + 0.8 + 0.01, accuracy: 0.011)
    }

    func testHalfDuplexIgnoresSpeechWhilePlayingUnlessEchoCancelled() {
        var mic = MicrophoneScript()
        mic.silence(ms: 500)
        mic.speech(ms: 1000)
        mic.silence(ms: 1000)
        for echoCancelled in [false, true] {
            var config = RecorderConfiguration()
            config.echoCancelledInput = echoCancelled
            let log = EventLog<RecorderEvent>()
            let recorder = Recorder(configuration: config) { log.append($0) }
            recorder.setPlaybackActive(true)
            recorder.listen()
            recorder.feed(mic.samples)
            XCTAssertEqual(turns(log).count, echoCancelled ? 1 : 0, "echo cancelled: \(echoCancelled)")
        }
    }

    /// Over an echo-cancelled input the canceller's residue of the kiosk's voice (here 700
    /// RMS, well above the gate) is not speech; the learner speaking up is, at once.
    func testOverAnEchoCancelledInputOnlySpeechAboveTheBargeInThresholdInterrupts() {
        var config = RecorderConfiguration()
        config.echoCancelledInput = true
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder(configuration: config) { log.append($0) }
        recorder.setPlaybackActive(true)
        recorder.listen()
        var residue = MicrophoneScript()
        residue.speech(ms: 3000, amplitude: 880)  // RMS 0.79 × amplitude: 700
        recorder.feed(residue.samples)
        XCTAssertEqual(speechStarts(log), 0, "the residue of the kiosk's own voice interrupted it")
        var learner = MicrophoneScript()
        learner.speech(ms: 1000, amplitude: 3000)
        learner.silence(ms: 1000)
        recorder.feed(learner.samples)
        XCTAssertEqual(speechStarts(log), 1)
        XCTAssertEqual(turns(log).count, 1)
        // The same residue once the kiosk is silent: the gate's threshold applies again.
        recorder.setPlaybackActive(false)
        recorder.listen()
        recorder.feed(residue.samples)
        XCTAssertEqual(speechStarts(log), 2)
    }

    func testFollowingAPlayerIsHalfDuplexWhileItPlays() {
        var mic = MicrophoneScript()
        mic.silence(ms: 500)
        mic.speech(ms: 1000)
        mic.silence(ms: 1000)
        let player = StreamingPlayer { _ in }
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder { log.append($0) }
        recorder.follow(player)
        // The player is playing a reply (its first period was rendered).
        player.beginReply()
        player.enqueue([UInt8](repeating: 1, count: 48_000))
        var period = [Float](repeating: 0, count: 240)
        period.withUnsafeMutableBufferPointer { player.render(into: $0) }
        XCTAssertTrue(player.isActive)
        recorder.listen()
        recorder.feed(mic.samples)
        XCTAssertEqual(turns(log).count, 0, "the kiosk's own voice is not a turn")
        // After the reply, the same speech is a turn.
        player.stop()
        for _ in 0..<20 { period.withUnsafeMutableBufferPointer { player.render(into: $0) } }
        XCTAssertFalse(player.isActive)
        recorder.feed(mic.samples)
        XCTAssertEqual(turns(log).count, 1)
    }

    /// After the input rested (the device delivered nothing while a half-duplex kiosk
    /// spoke), a turn's pre-roll starts where the input resumed: what came before the rest
    /// is another moment, and must not be stitched to the learner's words.
    func testThePreRollNeverReachesBackAcrossARest() {
        let marker = [Int16](repeating: 77, count: 7_200)  // 300 ms before the rest
        let quiet = [Int16](repeating: 0, count: 2_400)
        func turn(resting: Bool) -> RecordedTurn? {
            let log = EventLog<RecorderEvent>()
            let recorder = Recorder { log.append($0) }
            recorder.feed(marker)
            if resting { recorder.resumedAfterRest() }
            recorder.feed(quiet)
            recorder.beginTurn()
            recorder.feed(quiet)
            recorder.endTurn()
            recorder.feed([Int16](repeating: 0, count: 240))
            return turns(log).first
        }
        let rested = turn(resting: true)
        XCTAssertNotNil(rested)
        XCTAssertFalse(rested?.samples.contains(77) ?? true, "the pre-roll reached back across the rest")
        XCTAssertEqual(rested?.samples.count ?? 0, 2 * quiet.count, accuracy: 240, "the turn starts where the input resumed")
        // Without a rest the same pre-roll holds the marker: the case the rest must prevent.
        XCTAssertTrue(turn(resting: false)?.samples.contains(77) ?? false)
    }

    /// A player tells its observer when it falls silent (the recorder's cue to listen again),
    /// and not before.
    func testAPlayerTellsWhenItFallsSilent() {
        let player = StreamingPlayer { _ in }
        let told = Locked(0)
        player.whenInactive { told.withLock { $0 += 1 } }
        player.beginReply()
        player.enqueue([UInt8](repeating: 1, count: 4_800))
        player.endReply()
        var period = [Float](repeating: 0, count: 240)
        var rendered = 0
        while !player.isActive, rendered < 100 {
            period.withUnsafeMutableBufferPointer { player.render(into: $0) }
            rendered += 1
        }
        XCTAssertTrue(player.isActive)
        XCTAssertEqual(told.withLock { $0 }, 0, "told while it still plays")
        while player.isActive, rendered < 1_000 {
            period.withUnsafeMutableBufferPointer { player.render(into: $0) }
            rendered += 1
        }
        XCTAssertFalse(player.isActive)
        XCTAssertEqual(told.withLock { $0 }, 1)
    }

    func testNoiseFloorAdaptsSoThatAHummingRoomIsNotSpeech() {
        // A steady hum at RMS 500 (above the fixed gate) is the room, not a learner.
        var detector = SpeechDetector()
        let hum = TestSignals.sine(amplitude: 707, frequency: 100, count: 240)
        var decisions: [SpeechDetector.Decision] = []
        for _ in 0..<500 { decisions.append(detector.process(SignalLevel(measuring: hum))) }
        XCTAssertGreaterThan(detector.noiseFloor, 400)
        // It may be taken for speech at first, but after it has set the floor, a further
        // stretch of hum starts nothing.
        let late = decisions.suffix(300)
        XCTAssertFalse(late.contains { if case .speechStarted = $0 { return true } else { return false } })
    }

    /// Each turn carries the number of the recording it answers (``Recorder/listen()`` and
    /// ``Recorder/beginTurn()`` return it), so that a session can tell a turn that finished
    /// just as its recording was cancelled from the one it now waits for.
    func testTurnsCarryTheNumberOfTheirRecording() {
        var mic = MicrophoneScript()
        mic.speech(ms: 900)
        mic.silence(ms: 1500)
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder { log.append($0) }
        func feed(_ samples: [Int16]) {
            samples.withUnsafeBufferPointer { all in
                for start in stride(from: 0, to: all.count, by: 240) {
                    recorder.process(UnsafeBufferPointer(rebasing: all[start..<min(all.count, start + 240)]))
                }
            }
        }
        let first = recorder.listen()
        feed(mic.samples)
        // The turn is out; the session has not seen it yet and cancels, then listens again.
        recorder.cancelTurn()
        let second = recorder.listen()
        feed(mic.samples)
        let third = recorder.beginTurn()
        feed(Array(mic.samples.prefix(24_000)))
        recorder.endTurn()
        feed([Int16](repeating: 0, count: 240))
        XCTAssertEqual(turns(log).map(\.recording), [first, second, third])
        XCTAssertTrue(first < second && second < third)
    }

    /// Whether the turn holds `utterance`, the script's samples, from its first sample on.
    func turn(_ turn: RecordedTurn, holdsFromItsStart range: Range<Int>, of script: [Int16]) -> Int? {
        let head = Array(script[range.lowerBound..<(range.lowerBound + 1_200)])
        let samples = turn.samples
        return samples.indices.dropLast(1_200).first { Array(samples[$0..<($0 + 1_200)]) == head }
    }

    /// The kiosk re-arms hands-free listening after its reply, through the UI; a learner who
    /// answered a moment sooner lost the whole answer (the speech in progress was let go,
    /// the next one awaited). CI's real-PulseAudio test missed a phrase so once.
    func testListeningAskedForJustAfterSpeechBeganRecordsTheWholeUtterance() {
        var mic = MicrophoneScript()
        mic.silence(ms: 1_000)
        mic.speech(ms: 1_500)
        mic.silence(ms: 1_000)
        let utterance = mic.utterances[0]
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder { log.append($0) }
        // Speech is confirmed 250 ms after its onset; listening comes 600 ms after it.
        var number: UInt64 = 0
        feed(recorder, mic.samples, at: utterance.start + 600 * 24) {
            XCTAssertEqual(speechStarts(log), 1, "the speech was heard while idle")
            number = recorder.listen()
        }
        let result = turns(log)
        XCTAssertEqual(result.count, 1, "the utterance in progress became the turn")
        guard let turn = result.first else { return }
        XCTAssertEqual(turn.recording, number)
        XCTAssertEqual(turn.endReason, .endOfSpeech)
        // The whole pre-roll before the first syllable, as when listening came first.
        XCTAssertEqual(self.turn(turn, holdsFromItsStart: utterance.start..<utterance.end, of: mic.samples), 300 * 24)
        XCTAssertEqual(turn.speechDuration, 1.5, accuracy: 0.1)
        // The session moves from listening to recording on this event.
        XCTAssertTrue(log.snapshot().contains { if case .speechStarted(recording: number, again: true) = $0.event { return true } else { return false } })
    }

    /// Speech heard while the kiosk was quiet does not become a turn when listening is
    /// asked for under a reply: over an echo-cancelled input that listen is for a barge-in,
    /// and speech must start under the barge-in's stricter rule (a murmur at RMS 700 while
    /// the reply was awaited would otherwise stop the reply as it starts).
    func testListeningAskedForUnderAReplyDoesNotTakeTheSpeechInProgress() {
        var config = RecorderConfiguration()
        config.echoCancelledInput = true
        var mic = MicrophoneScript()
        mic.silence(ms: 1_000)
        mic.speech(ms: 1_500, amplitude: 700)
        mic.silence(ms: 1_000)
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder(configuration: config) { log.append($0) }
        feed(recorder, mic.samples, at: mic.utterances[0].start + 600 * 24) {
            XCTAssertEqual(speechStarts(log), 1, "the murmur was heard while the kiosk was quiet")
            recorder.setPlaybackActive(true)
            recorder.listen()
        }
        XCTAssertEqual(turns(log).count, 0)
        XCTAssertEqual(speechStarts(log), 1)
    }

    /// Speech whose first syllable the ring no longer holds is let go: a turn cut at its
    /// start would be sent as if whole. The next utterance is the turn.
    func testListeningAskedForLongAfterSpeechBeganWaitsForTheNextUtterance() {
        var mic = MicrophoneScript()
        mic.silence(ms: 500)
        mic.speech(ms: 4_000)
        mic.silence(ms: 1_000)
        mic.speech(ms: 900)
        mic.silence(ms: 1_000)
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder { log.append($0) }
        feed(recorder, mic.samples, at: mic.utterances[0].start + 3_500 * 24) { recorder.listen() }
        let result = turns(log)
        XCTAssertEqual(result.count, 1)
        guard let turn = result.first else { return }
        XCTAssertEqual(turn.duration, 0.3 + 0.9 + 0.7, accuracy: 0.05, "the second utterance, pre-roll and hangover")
        XCTAssertNotNil(self.turn(turn, holdsFromItsStart: mic.utterances[1].start..<mic.utterances[1].end, of: mic.samples))
    }

    /// The same audio is never in two turns: a push-to-talk turn released mid-word, then
    /// listening, does not record that word again, and a turn's pre-roll stops where the
    /// last turn ended.
    func testNoAudioIsInTwoTurns() {
        // Released mid-word: the rest of the word is let go, the next utterance is the turn.
        var mic = MicrophoneScript()
        mic.silence(ms: 500)
        mic.speech(ms: 1_200)
        mic.silence(ms: 1_000)
        mic.speech(ms: 800)
        mic.silence(ms: 1_000)
        let log = EventLog<RecorderEvent>()
        let recorder = Recorder { log.append($0) }
        recorder.feed(Array(mic.samples[..<(24 * 500)]))
        recorder.beginTurn()
        let releaseAt = 24 * 1_200
        recorder.feed(Array(mic.samples[(24 * 500)..<releaseAt]))
        recorder.endTurn()
        recorder.listen()
        recorder.feed(Array(mic.samples[releaseAt...]))
        let result = turns(log)
        XCTAssertEqual(result.map(\.endReason), [.released, .endOfSpeech])
        if result.count == 2 {
            XCTAssertEqual(turn(result[1], holdsFromItsStart: mic.utterances[1].start..<mic.utterances[1].end, of: mic.samples), 300 * 24)
        }

        // Speech 100 ms after a release: its turn's pre-roll is those 100 ms (and not the
        // 200 ms before them, which are the last turn's).
        var close = MicrophoneScript()
        close.silence(ms: 1_100)
        close.speech(ms: 800)
        close.silence(ms: 1_000)
        let closeLog = EventLog<RecorderEvent>()
        let second = Recorder { closeLog.append($0) }
        second.feed(Array(close.samples[..<(24 * 200)]))
        second.beginTurn()
        second.feed(Array(close.samples[(24 * 200)..<(24 * 1_000)]))
        second.endTurn()
        second.listen()
        second.feed(Array(close.samples[(24 * 1_000)...]))
        let closeTurns = turns(closeLog)
        XCTAssertEqual(closeTurns.map(\.endReason), [.released, .endOfSpeech])
        guard closeTurns.count == 2 else { return }
        // The first turn ends where the release was applied, at the start of the next period.
        let firstEnd = 24 * 1_000
        XCTAssertTrue(closeTurns[0].samples == Array(close.samples[0..<firstEnd]), "pre-roll from 0 ms, to the release")
        XCTAssertTrue(Array(closeTurns[1].samples.prefix(480)) == Array(close.samples[firstEnd..<(firstEnd + 480)]),
                      "the second turn starts where the first ended, not 300 ms before its utterance")
    }
}
