import AudioKernel
import XCTest

final class StreamingPlayerTests: XCTestCase {
    func render(_ player: StreamingPlayer, periods: Int) -> [Int16] {
        // The player renders Float32; one scale each way makes PCM16 → Float32 → PCM16 exact.
        var out: [Int16] = []
        var buffer = [Float](repeating: 0, count: 240)
        var samples = [Int16](repeating: 0, count: 240)
        for _ in 0..<periods {
            buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
            SampleConverter.float32ToInt16(buffer, into: &samples)
            out += samples
        }
        return out
    }

    func testChunksOfAnySizeIncludingOddArePlayedInOrder() {
        let log = EventLog<PlayerEvent>()
        let player = StreamingPlayer { log.append($0) }
        let signal = Loopback.signal(count: 24_000)
        let bytes = WAVBuilder.samples(signal)
        player.beginReply()
        var g = SeededGenerator(seed: 5)
        var offset = 0
        while offset < bytes.count {
            let n = min(bytes.count - offset, Int.random(in: 1...5_001, using: &g))
            XCTAssertTrue(player.enqueue(Array(bytes[offset..<(offset + n)])))
            offset += n
        }
        player.endReply()
        let out = render(player, periods: 110)
        XCTAssertEqual(Array(out[0..<signal.count]), signal)
        let events = log.snapshot().map(\.event)
        XCTAssertEqual(events.first, .started(latencyFrames: 0, reply: 1))
        XCTAssertEqual(events.last, .finished(PlaybackReport(playedSeconds: 1.0, interrupted: false, underruns: 0, reply: 1, leadMilliseconds: 50, nextLeadMilliseconds: 50)))
    }

    func testPrebufferHoldsTheStartUntilEnoughHasArrived() {
        let player = StreamingPlayer { _ in }
        player.beginReply()
        player.enqueue(WAVBuilder.samples([Int16](repeating: 1000, count: 600)))  // 25 ms < 50 ms prebuffer
        XCTAssertTrue(render(player, periods: 3).allSatisfy { $0 == 0 })
        player.enqueue(WAVBuilder.samples([Int16](repeating: 1000, count: 600)))
        // Enough is queued, but 50 ms have not passed since the first chunk: a source at
        // exactly real time would run dry at once.
        XCTAssertTrue(render(player, periods: 2).allSatisfy { $0 == 0 })
        XCTAssertEqual(render(player, periods: 1).first, 1000)
    }

    func testUnderrunIsFilledWithSilenceCountedAndPlaybackResumes() {
        let log = EventLog<PlayerEvent>()
        let player = StreamingPlayer { log.append($0) }
        player.beginReply()
        player.enqueue(WAVBuilder.samples([Int16](repeating: 500, count: 1_200)))
        let first = render(player, periods: 12)  // 5 periods of lead, 5 of sound, 2 dry
        XCTAssertEqual(first.filter { $0 == 500 }.count, 1_200)
        XCTAssertTrue(first.suffix(480).allSatisfy { $0 == 0 }, "silence while the network is late")
        XCTAssertTrue(log.snapshot().contains { $0.event == .underrun(total: 1) })
        player.enqueue(WAVBuilder.samples([Int16](repeating: 700, count: 480)))
        player.endReply()
        let resumed = render(player, periods: 3)
        XCTAssertEqual(resumed.filter { $0 == 700 }.count, 480)
        XCTAssertTrue(log.snapshot().contains { $0.event == .finished(PlaybackReport(playedSeconds: 0.07, interrupted: false, underruns: 1, reply: 1, leadMilliseconds: 50, nextLeadMilliseconds: 220)) })
    }

    func testStopFadesOutWithinAPeriodWithoutAClickAndReportsInterrupted() {
        let log = EventLog<PlayerEvent>()
        let player = StreamingPlayer { log.append($0) }
        let tone = TestSignals.sine(amplitude: 20_000, frequency: 220, count: 48_000)
        player.beginReply()
        player.enqueue(WAVBuilder.samples(tone))
        player.endReply()
        let before = render(player, periods: 10)
        player.stop()
        let after = render(player, periods: 5)
        let fade = 20 * 24
        // Sound ends within one period (the stop is seen at the next period) plus the fade.
        XCTAssertTrue(after[fade...].allSatisfy { $0 == 0 })
        // No jump larger than the tone's own steepest step plus a small bound.
        let all = before + after
        let steepest = zip(tone, tone.dropFirst()).map { abs(Int($1) - Int($0)) }.max()!
        for i in 1..<all.count { XCTAssertLessThanOrEqual(abs(Int(all[i]) - Int(all[i - 1])), steepest + 2) }
        XCTAssertTrue(log.snapshot().contains {
            if case .finished(let report) = $0.event { return report.interrupted } else { return false }
        })
    }

    func testChunksOfAStoppedReplyAreDroppedAndNeverReachTheNextReply() {
        let log = EventLog<PlayerEvent>()
        let player = StreamingPlayer { log.append($0) }
        let first = player.beginReply()
        player.enqueue(WAVBuilder.samples([Int16](repeating: 900, count: 4_800)))
        _ = render(player, periods: 3)
        player.stop()
        // The network keeps delivering the stopped reply for a moment (a void turn's audio).
        player.enqueue(WAVBuilder.samples([Int16](repeating: 900, count: 4_800)))
        _ = render(player, periods: 10)
        let second = player.beginReply()
        XCTAssertEqual(second, first + 1)
        player.enqueue(WAVBuilder.samples([Int16](repeating: 300, count: 2_400)))
        player.endReply()
        let out = render(player, periods: 20)
        XCTAssertFalse(out.contains(900), "a sample of the stopped reply was played in the next one")
        XCTAssertEqual(out.filter { $0 == 300 }.count, 2_400)
        let finished = log.snapshot().compactMap { entry -> PlaybackReport? in
            if case .finished(let report) = entry.event { return report } else { return nil }
        }
        XCTAssertEqual(finished.map(\.reply), [first, second])
        XCTAssertEqual(finished.map(\.interrupted), [true, false])
    }

    /// A reply begun while one plays: the old one fades out from what it had queued, is told
    /// finished and interrupted, and the new one then plays from its first sample, none of its
    /// samples faded, dropped or mixed with the old one's.
    func testANewReplyTakesOverWithTheOldOneFadedAndNoSampleOfTheNewOneLost() {
        let log = EventLog<PlayerEvent>()
        let player = StreamingPlayer { log.append($0) }
        let first = player.beginReply()
        player.enqueue(WAVBuilder.samples([Int16](repeating: 900, count: 24_000)))  // 1 s, most of it still queued
        XCTAssertEqual(render(player, periods: 10).last, 900)
        let second = player.beginReply()
        let next = (0..<4_800).map { Int16(-300 - $0 % 200) }  // below zero: never a value of the old reply's fade
        player.enqueue(WAVBuilder.samples(next))
        player.endReply()
        let out = render(player, periods: 40)
        // The fade: the old reply's level falls to nothing within the fade's 20 ms.
        let fade = Array(out[0..<480])
        XCTAssertEqual(fade.first ?? 0, 900, accuracy: 2)
        XCTAssertTrue(zip(fade, fade.dropFirst()).allSatisfy { $1 <= $0 }, "a fade, not a cut")
        XCTAssertFalse(out[480...].contains(900), "the old reply's queue reached the new reply")
        // The new reply whole and in order, after its own lead.
        guard let start = out.firstIndex(of: -300), start + next.count <= out.count else { return XCTFail("the new reply never played") }
        XCTAssertTrue(Array(out[start..<(start + next.count)]) == next, "the new reply was not played whole and in order")
        XCTAssertTrue(out[480..<start].allSatisfy { $0 == 0 }, "silence between the fade and the new reply's lead")
        let events = log.snapshot().map(\.event)
        let finished = events.compactMap { event -> PlaybackReport? in if case .finished(let r) = event { r } else { nil } }
        XCTAssertEqual(finished.map(\.reply), [first, second])
        XCTAssertEqual(finished.map(\.interrupted), [true, false])
        XCTAssertEqual(events.filter { if case .started = $0 { true } else { false } }, [.started(latencyFrames: 0, reply: first), .started(latencyFrames: 0, reply: second)])
    }

    /// Sounds by number: the player alone knows whether a reply is still the current one. A
    /// chunk, an end or a stop for a replaced reply does nothing to the next one.
    func testAReplysNumberIsCheckedInTheSameStepAsItsChunkIsQueued() {
        let log = EventLog<PlayerEvent>()
        let player = StreamingPlayer { log.append($0) }
        let first = player.beginReply()
        XCTAssertEqual(WAVBuilder.samples([Int16](repeating: 900, count: 480)).withUnsafeBytes { player.enqueue($0, reply: first) }, true)
        let second = player.beginReply()
        XCTAssertNil(WAVBuilder.samples([Int16](repeating: 900, count: 4_800)).withUnsafeBytes { player.enqueue($0, reply: first) },
                     "a chunk of the replaced reply was taken")
        player.stop(reply: first)
        player.endReply(first)
        XCTAssertEqual(WAVBuilder.samples([Int16](repeating: -300, count: 2_400)).withUnsafeBytes { player.enqueue($0, reply: second) }, true)
        player.endReply(second)
        XCTAssertNil(WAVBuilder.samples([Int16](repeating: -300, count: 240)).withUnsafeBytes { player.enqueue($0, reply: second) },
                     "a chunk after the end was taken")
        XCTAssertNil(player.queueSpace(reply: second))
        let out = render(player, periods: 30)
        XCTAssertEqual(out.filter { $0 == -300 }.count, 2_400, "the second reply whole, neither stopped nor ended by the first's number")
        XCTAssertLessThanOrEqual(out.filter { $0 > 0 }.count, 480, "more of the first reply than it queued before it was replaced")
        let finished = log.snapshot().compactMap { entry -> PlaybackReport? in if case .finished(let r) = entry.event { r } else { nil } }
        // The first was replaced before the device took it up: it never sounded, so it never ends.
        XCTAssertEqual(finished.map(\.reply), [second])
        XCTAssertEqual(finished.last?.interrupted, false)
    }

    /// On a running device, `beginReply` returns while the old reply still fades (it used to
    /// wait for the fade, up to 500 ms, on the caller's thread): the old reply's end is told
    /// after the call has returned, and the player stays active through the handover.
    func testBeginReplyOnARunningDeviceNeverWaitsForTheOldReplysFade() throws {
        let log = EventLog<String>()
        var stream = AudioStreamConfiguration()
        stream.periodFrames = 240
        let player = try StreamingPlayer(device: .null, stream: stream) { event in
            switch event {
            case .started(_, let reply): log.append("started \(reply)")
            case .finished(let report): log.append("finished \(report.reply)")
            default: break
            }
        }
        try player.start()
        defer { player.shutdown() }
        player.beginReply()
        player.enqueue(WAVBuilder.samples([Int16](repeating: 900, count: 48_000)))
        XCTAssertTrue(log.wait(timeout: 5) { $0.contains { $0.event == "started 1" } })
        player.beginReply()
        log.append("begun 2")
        XCTAssertTrue(player.isReplyActive, "the player fell silent between the replies")
        player.enqueue(WAVBuilder.samples([Int16](repeating: 300, count: 2_400)))
        player.endReply()
        XCTAssertTrue(log.wait(timeout: 5) { $0.contains { $0.event == "finished 2" } })
        XCTAssertEqual(log.snapshot().map(\.event), ["started 1", "begun 2", "finished 1", "started 2", "finished 2"])
    }
}

/// The volume: applied to everything played, changed along a ramp. Zipper noise is a step in
/// the gain; it shows as a jump between neighbouring samples of a steady input, which the
/// ramp spreads over 30 ms.
final class StreamingPlayerVolumeTests: XCTestCase {
    /// Renders a reply of constant samples (16,384, half scale), changing the volume to 0.25
    /// after `changeAfter` periods; returns the rendered samples as Float32 × 32,768.
    private func render(rampMilliseconds: Int, changeAfter: Int = 10, periods: Int = 20) -> [Float] {
        var configuration = StreamingPlayerConfiguration()
        configuration.prebufferMilliseconds = 0
        configuration.volumeRampMilliseconds = rampMilliseconds
        let player = StreamingPlayer(configuration: configuration) { _ in }
        player.beginReply()
        player.enqueue(WAVBuilder.samples([Int16](repeating: 16_384, count: 240 * (periods + 2))))
        var out: [Float] = []
        var buffer = [Float](repeating: 0, count: 240)
        for period in 0..<periods {
            if period == changeAfter { player.volume = 0.25 }
            buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
            out += buffer.map { $0 * 32_768 }
        }
        return out
    }

    /// The largest change between neighbouring samples once the reply plays.
    private func largestStep(_ samples: [Float]) -> Float {
        let playing = samples.drop { $0 == 0 }
        return zip(playing, playing.dropFirst()).map { abs($1 - $0) }.max() ?? 0
    }

    func testAVolumeChangeIsRampedWithoutZipperNoise() {
        let ramped = render(rampMilliseconds: 30)
        // Before the change: full level; after the ramp: a quarter.
        XCTAssertEqual(ramped[2_000], 16_384, accuracy: 0.5)
        XCTAssertEqual(ramped.last!, 4_096, accuracy: 0.5)
        // 30 ms at 24 kHz is 720 samples: 12,288 down over 720 is about 17 per sample.
        let step = largestStep(ramped)
        XCTAssertLessThan(step, 18, "a ramped change moves at most 12,288 / 720 per sample")
        let rampSamples = ramped.filter { $0 < 16_383.5 && $0 > 4_096.5 }.count
        XCTAssertEqual(rampSamples, 719, accuracy: 2, "the change spans 30 ms")
        // The measure itself: without a ramp the same change is one step of 12,288.
        XCTAssertGreaterThan(largestStep(render(rampMilliseconds: 0)), 12_000)
    }

    func testTheVolumeAppliesToSilenceAndIsClampedToZeroToOne() {
        let player = StreamingPlayer { _ in }
        player.volume = 2
        XCTAssertEqual(player.volume, 1)
        player.volume = -1
        XCTAssertEqual(player.volume, 0)
        player.volume = .nan
        XCTAssertEqual(player.volume, 1)
        player.volume = 0
        var configuration = StreamingPlayerConfiguration()
        configuration.prebufferMilliseconds = 0
        let quiet = StreamingPlayer(configuration: configuration) { _ in }
        quiet.volume = 0
        quiet.beginReply()
        quiet.enqueue(WAVBuilder.samples([Int16](repeating: 20_000, count: 4_800)))
        var buffer = [Float](repeating: 1, count: 240)
        var heard: [Float] = []
        for _ in 0..<19 {
            buffer.withUnsafeMutableBufferPointer { quiet.render(into: $0) }
            heard += buffer
        }
        // The first period ramps from 1 to 0 (the player starts at full level); then silence.
        XCTAssertTrue(heard[720...].allSatisfy { $0 == 0 }, "at volume 0 nothing is heard once the ramp has run")
    }
}

/// The mix layer: a clip summed over the reply in Float32, through the soft limiter.
final class StreamingPlayerMixTests: XCTestCase {
    final class Events: @unchecked Sendable {
        let lock = NSLock()
        var all: [PlayerEvent] = []
        func append(_ e: PlayerEvent) { lock.withLock { all.append(e) } }
        var snapshot: [PlayerEvent] { lock.withLock { all } }
    }

    func testAMixIsSummedOverTheReplyExactlyBelowTheKneeAndHeldActive() {
        var configuration = StreamingPlayerConfiguration()
        configuration.prebufferMilliseconds = 0
        let events = Events()
        let player = StreamingPlayer(configuration: configuration) { events.append($0) }
        player.beginReply()
        player.enqueue(WAVBuilder.samples([Int16](repeating: 8_192, count: 2_400)))  // 0.25
        player.endReply()
        let mix = player.beginMix()
        let clip = [Float](repeating: 0.125, count: 480)
        clip.withUnsafeBufferPointer { _ = player.enqueueMix(samples: $0) }
        player.endMix()
        var buffer = [Float](repeating: 0, count: 240)
        buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
        XCTAssertTrue(buffer.allSatisfy { $0 == 0.375 }, "0.25 + 0.125 below the knee is exact")
        XCTAssertTrue(player.isActive)
        buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
        XCTAssertEqual(buffer[0], 0.375)
        // The mix has ended: the reply alone, bit for bit.
        buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
        XCTAssertTrue(buffer.allSatisfy { $0 == 0.25 })
        XCTAssertTrue(events.snapshot.contains(.mixStarted(mix: mix)))
        XCTAssertTrue(events.snapshot.contains { if case .mixFinished(let r) = $0 { return r.reply == mix && !r.interrupted } else { return false } })
    }

    func testTheLimiterNeverWrapsAndIsContinuous() {
        // A sweep of sums from -4 to 4 through the knee: bounded below 1, monotonic, no jumps.
        var previous = SoftLimiter.limit(-4)
        for i in 1...8_000 {
            let x = -4 + Float(i) / 1_000
            let y = SoftLimiter.limit(x)
            XCTAssertLessThanOrEqual(abs(y), 1, "never past full scale")
            XCTAssertGreaterThanOrEqual(y, previous)
            XCTAssertLessThan(y - previous, 0.0011)
            previous = y
        }
        XCTAssertEqual(SoftLimiter.limit(.nan), 0)
        XCTAssertEqual(SoftLimiter.limit(.infinity), 1)
        XCTAssertEqual(SoftLimiter.limit(0.5), 0.5)
    }

    func testStoppingTheMixFadesItAndLeavesTheReply() {
        var configuration = StreamingPlayerConfiguration()
        configuration.prebufferMilliseconds = 0
        let events = Events()
        let player = StreamingPlayer(configuration: configuration) { events.append($0) }
        let mix = player.beginMix()
        let clip = [Float](repeating: 0.5, count: 24_000)
        clip.withUnsafeBufferPointer { _ = player.enqueueMix(samples: $0) }
        var buffer = [Float](repeating: 0, count: 240)
        buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
        XCTAssertTrue(player.isActive, "a mix alone holds the half-duplex switch")
        XCTAssertFalse(player.isReplyActive)
        player.stopMix()
        var faded: [Float] = []
        for _ in 0..<4 {
            buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
            faded += buffer
        }
        XCTAssertEqual(faded[0], 0.5, accuracy: 0.01)
        XCTAssertTrue(zip(faded, faded.dropFirst()).allSatisfy { $1 <= $0 + 1e-6 }, "a fade, not a cut")
        XCTAssertEqual(faded.last!, 0)
        XCTAssertFalse(player.isActive)
        XCTAssertTrue(events.snapshot.contains { if case .mixFinished(let r) = $0 { return r.reply == mix && r.interrupted } else { return false } })
    }
}
