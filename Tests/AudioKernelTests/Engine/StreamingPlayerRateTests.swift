import AudioKernel
import XCTest

/// The player's playback rate (issue 69): replies stretched on their way to the ring, a
/// replay from memory that starts without the jitter lead, and the reply kept for it.
final class StreamingPlayerRateTests: XCTestCase {
    /// A voiced, speech-like test signal: a 140 Hz pulse train through a resonance, so the
    /// stretcher has periods to join on.
    private func voice(count: Int) -> [Int16] {
        var y1 = 0.0, y2 = 0.0
        return (0..<count).map { i in
            let pulse = i % 171 == 0 ? 1.0 : 0.0
            let y = pulse + 1.8 * 0.97 * cos(2 * Double.pi * 700 / 24_000) * y1 - 0.97 * 0.97 * y2
            y2 = y1; y1 = y
            return Int16(clamping: Int(y * 1_500))
        }
    }

    /// Renders until `finished` (or `limit` periods), returning every sample rendered.
    private func renderToEnd(_ player: StreamingPlayer, log: EventLog<PlayerEvent>, limit: Int = 2_000) -> [Float] {
        var out: [Float] = []
        var buffer = [Float](repeating: 0, count: 240)
        for _ in 0..<limit {
            buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
            out += buffer
            if log.snapshot().contains(where: { if case .finished = $0.event { return true } else { return false } }) { break }
        }
        return out
    }

    private func enqueue(_ samples: [Int16], to player: StreamingPlayer, reply: Int, chunk: Int) {
        let bytes = WAVBuilder.samples(samples)
        var offset = 0
        while offset < bytes.count {
            let n = min(chunk * 2, bytes.count - offset)
            bytes[offset..<(offset + n)].withUnsafeBytes { XCTAssertEqual(player.enqueue($0, reply: reply), true) }
            offset += n
        }
    }

    /// What a ``TimeStretcher`` alone makes of `samples` fed `chunk` at a time.
    private func stretched(_ samples: [Int16], rate: Double, chunk: Int) throws -> [Float] {
        let stretcher = try TimeStretcher(sampleRate: 24_000, rate: rate)
        var output = [Float](repeating: 0, count: stretcher.maximumOutputFrames(forInputFrames: chunk))
        var out: [Float] = []
        let floats = samples.map { Float($0) * SampleConverter.int16ToFloatScale }
        var offset = 0
        while offset < floats.count {
            let n = min(chunk, floats.count - offset)
            let made = floats[offset..<(offset + n)].withUnsafeBufferPointer { input in
                output.withUnsafeMutableBufferPointer { stretcher.process(input, into: $0) }
            }
            out += output[0..<made]
            offset += n
        }
        let made = output.withUnsafeMutableBufferPointer { stretcher.flush(into: $0) }
        return out + output[0..<made]
    }

    func testAReplyAtThePlayersRateIsTheStretchersOutputSampleForSample() throws {
        let log = EventLog<PlayerEvent>()
        let player = StreamingPlayer { log.append($0) }
        try player.setPlaybackRate(0.75)
        let input = voice(count: 24_000)
        let number = player.beginReply()
        enqueue(input, to: player, reply: number, chunk: 4_800)
        player.endReply(number)
        let out = renderToEnd(player, log: log)
        let expected = try stretched(input, rate: 0.75, chunk: 4_800)
        XCTAssertEqual(expected.count, 32_000, accuracy: 240, "a second at 0.75 lasts 4/3 s")
        // The jitter lead (50 ms of silence) comes first, then the stretcher's output exactly.
        guard let first = out.firstIndex(where: { $0 != 0 }) else { return XCTFail("nothing played") }
        let lead = expected.firstIndex(where: { $0 != 0 }) ?? 0
        XCTAssertEqual(Array(out[(first - lead)..<(first - lead + expected.count)]), expected)
        guard case .finished(let report) = log.snapshot().last?.event else { return XCTFail("no finished") }
        XCTAssertEqual(report.playedSeconds, Double(expected.count) / 24_000, accuracy: 0.011)
    }

    func testAtRateOneTheReplyIsCopiedBitForBit() throws {
        let log = EventLog<PlayerEvent>()
        let player = StreamingPlayer { log.append($0) }
        try player.setPlaybackRate(0.6)
        try player.setPlaybackRate(1.0)
        let input = voice(count: 12_000)
        let number = player.beginReply()
        enqueue(input, to: player, reply: number, chunk: 1_001)
        player.endReply(number)
        let out = renderToEnd(player, log: log)
        guard let first = out.firstIndex(where: { $0 != 0 }) else { return XCTFail("nothing played") }
        let played = out[first..<(first + input.count)].map { Int16(($0 / SampleConverter.int16ToFloatScale).rounded()) }
        XCTAssertEqual(Array(played), Array(input[input.firstIndex(where: { $0 != 0 })!...]) + Array(repeating: 0, count: input.firstIndex(where: { $0 != 0 })!))
    }

    func testARateChangeReachesAStreamingReplyAtItsNextChunk() throws {
        let log = EventLog<PlayerEvent>()
        let player = StreamingPlayer { log.append($0) }
        let input = voice(count: 48_000)
        let number = player.beginReply()
        enqueue(Array(input[0..<24_000]), to: player, reply: number, chunk: 2_400)
        try player.setPlaybackRate(0.5)
        enqueue(Array(input[24_000...]), to: player, reply: number, chunk: 2_400)
        player.endReply(number)
        let out = renderToEnd(player, log: log)
        guard case .finished(let report) = log.snapshot().last?.event else { return XCTFail("no finished") }
        // One second as it came, one second twice as long.
        XCTAssertEqual(report.playedSeconds, 3.0, accuracy: 0.05)
        XCTAssertGreaterThan(out.count, 3 * 24_000)
    }

    func testAReplyFromMemoryStartsWithTheFirstPeriodAndTeachesTheLeadNothing() throws {
        let log = EventLog<PlayerEvent>()
        let player = StreamingPlayer { log.append($0) }
        let number = player.beginReply(rate: 0.75, immediate: true)
        enqueue(voice(count: 2_400), to: player, reply: number, chunk: 2_400)
        var buffer = [Float](repeating: 0, count: 240)
        buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
        XCTAssertTrue(buffer.contains { $0 != 0 }, "a replay sounds at its first period, with no jitter lead")
        XCTAssertEqual(log.snapshot().first?.event, .started(latencyFrames: 0, reply: number))
        player.endReply(number)
        _ = renderToEnd(player, log: log)
        guard case .finished(let report) = log.snapshot().last?.event else { return XCTFail("no finished") }
        XCTAssertEqual(report.playedSeconds, 0.1 / 0.75, accuracy: 0.011, "its own rate, not the player's 1.0")
        XCTAssertEqual(report.leadMilliseconds, 0)
        XCTAssertEqual(player.leadSeconds, 0.05, "the lead is the network's, untouched by a replay")
        XCTAssertEqual(player.playbackRate, 1.0, "a replay's rate is its own")
    }

    func testRatesOutsideHalfToTwiceAreRefused() throws {
        let player = StreamingPlayer { _ in }
        for bad in [0, -1, .nan, .infinity, 10, 0.49, 2.01] as [Double] {
            XCTAssertThrowsError(try player.setPlaybackRate(bad), "\(bad)")
        }
        XCTAssertEqual(player.playbackRate, 1.0)
        for good in [0.5, 0.6, 0.75, 0.85, 1.0, 2.0] {
            XCTAssertNoThrow(try player.setPlaybackRate(good))
            XCTAssertEqual(player.playbackRate, good)
        }
    }

    func testTheTakeKeepsTheFirstMinuteAndCountsTheRest() {
        let take = ReplyTake(bytesPerSecond: 100, maximumSeconds: 2)
        let speaker = StreamingPlayer { _ in }
        let provider = OneSpeaker(speaker)
        let feed = ReplyFeed(audio: provider, take: take)
        let chunk = [UInt8](repeating: 7, count: 75)
        for _ in 0..<4 { chunk.withUnsafeBytes { _ = feed.enqueue($0) } }
        XCTAssertEqual(take.byteCount, 200)
        XCTAssertEqual(take.droppedBytes, 100)
        feed.stop()
        chunk.withUnsafeBytes { _ = feed.enqueue($0) }
        XCTAssertEqual(take.byteCount + take.droppedBytes, 300, "nothing is kept after the reply was stopped")
        XCTAssertEqual(take.pcm.count, 200)
    }
}

/// A provider that begins every reply on one player.
private final class OneSpeaker: ReplySpeakerProvider, @unchecked Sendable {
    let player: StreamingPlayer
    init(_ player: StreamingPlayer) { self.player = player }
    func beginReply() -> SpeakerReply? { SpeakerReply(speaker: player, number: player.beginReply()) }
}
