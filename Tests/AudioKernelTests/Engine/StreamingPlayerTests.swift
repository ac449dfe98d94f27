import AudioKernel
import XCTest

final class StreamingPlayerTests: XCTestCase {
    func render(_ player: StreamingPlayer, periods: Int) -> [Int16] {
        var out: [Int16] = []
        var buffer = [Int16](repeating: 0, count: 240)
        for _ in 0..<periods {
            buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
            out += buffer
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
        XCTAssertEqual(events.last, .finished(PlaybackReport(playedSeconds: 1.0, interrupted: false, underruns: 0, reply: 1)))
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
        XCTAssertTrue(log.snapshot().contains { $0.event == .finished(PlaybackReport(playedSeconds: 0.07, interrupted: false, underruns: 1, reply: 1)) })
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
}
