import AudioKernel
import XCTest

/// The adaptive jitter buffer, on the device's clock simulated period by period (10 ms at
/// 24 kHz) against a network schedule: what arrives when. The process-level test
/// (PracticedTests.JitterBufferTests) runs the same through practice-sim's bursts.
final class StreamingPlayerJitterTests: XCTestCase {
    /// One reply's audio as the network delivers it: (arrival in ms from the reply's
    /// start, samples).
    typealias Schedule = [(at: Int, samples: Int)]

    /// Wi-Fi in bursts: one event per 250 ms with 1.0-1.2 × 250 ms of audio, each up to
    /// `jitter` ms late (as `practice-sim --burst 250:JITTER` sends them).
    static func bursts(seconds: Double, jitter: Int, random: inout SeededGenerator) -> Schedule {
        var schedule: Schedule = []
        var left = Int(seconds * 24_000)
        var k = 0
        while left > 0 {
            let samples = min(left, 6_000 * Int.random(in: 1_000...1_200, using: &random) / 1_000)
            schedule.append((250 * k + Int.random(in: 0...jitter, using: &random), samples))
            left -= samples
            k += 1
        }
        return schedule
    }

    /// A steady backend: 20 ms of audio every 20 ms, exactly on time.
    static func steady(seconds: Double) -> Schedule {
        (0..<Int(seconds * 50)).map { (20 * $0, 480) }
    }

    struct ReplyFigures { var report: PlaybackReport; var firstSoundMs: Int }

    /// Plays each schedule as a reply, a second of silence between replies; the figures of
    /// each.
    func play(_ replies: [Schedule], configuration: StreamingPlayerConfiguration = StreamingPlayerConfiguration()) -> [ReplyFigures] {
        let log = EventLog<PlayerEvent>()
        // The network's clock is the simulation's: chunks arrive at their scheduled times.
        final class Clock: @unchecked Sendable { var nanoseconds: Int64 = 0 }
        let clock = Clock()
        let player = StreamingPlayer(configuration: configuration, clock: { clock.nanoseconds }) { log.append($0) }
        var buffer = [Float](repeating: 0, count: 240)
        var figures: [ReplyFigures] = []
        for schedule in replies {
            player.beginReply()
            var next = 0
            var now = 0  // ms since the reply's first byte could have come
            var firstSound: Int?
            var finished: PlaybackReport?
            var lastCount = log.snapshot().count
            let chunk = [UInt8](repeating: 0x10, count: 2 * 24_000)
            while finished == nil, now < 120_000 {
                clock.nanoseconds += 10_000_000
                while next < schedule.count, schedule[next].at <= now {
                    _ = chunk.withUnsafeBytes { player.enqueue(UnsafeRawBufferPointer(rebasing: $0[0..<(2 * schedule[next].samples)])) }
                    next += 1
                    if next == schedule.count { player.endReply() }
                }
                buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
                if firstSound == nil, buffer.contains(where: { $0 != 0 }) { firstSound = now }
                now += 10
                if ProcessInfo.processInfo.environment["JITTER_DEBUG"] != nil, case .underrun = log.snapshot().last?.event, log.snapshot().count != lastCount {
                    print("reply \(figures.count + 1) underrun at \(now) ms; schedule \(schedule.prefix(6).map { "\($0.at):\($0.samples / 24)" })")
                }
                lastCount = log.snapshot().count
                for entry in log.snapshot() {
                    if case .finished(let report) = entry.event, report.reply == figures.count + 1 { finished = report }
                }
            }
            guard let finished else { XCTFail("reply \(figures.count + 1) never finished"); break }
            figures.append(ReplyFigures(report: finished, firstSoundMs: (firstSound ?? 0) - (schedule.first?.at ?? 0)))
            for _ in 0..<100 {
                buffer.withUnsafeMutableBufferPointer { player.render(into: $0) }
                clock.nanoseconds += 10_000_000
            }
        }
        return figures
    }

    func testBurstyWiFiGivesAtMostOneUnderrunPerReplyAfterTheFirst() {
        var random = SeededGenerator(seed: 42)
        let jitter = Int(ProcessInfo.processInfo.environment["JITTER_MS"] ?? "") ?? 300
        let replies = (0..<10).map { _ in Self.bursts(seconds: Double.random(in: 2...5, using: &random), jitter: jitter, random: &random) }
        let adaptive = play(replies)
        for (i, reply) in adaptive.enumerated() {
            print("burst reply \(i + 1): lead \(reply.report.leadMilliseconds) ms → \(reply.report.nextLeadMilliseconds) ms, \(reply.report.underruns) underruns")
        }
        XCTAssertEqual(adaptive.count, 10)
        for reply in adaptive.dropFirst() {
            XCTAssertLessThanOrEqual(reply.report.underruns, 1, "reply \(reply.report.reply) underran \(reply.report.underruns) times at lead \(reply.report.leadMilliseconds) ms")
        }
        XCTAssertGreaterThan(adaptive.map(\.report.nextLeadMilliseconds).max()!, 50, "the lead grew")
        XCTAssertLessThanOrEqual(adaptive.map(\.report.nextLeadMilliseconds).max()!, 500, "the lead stays under its ceiling")

        // The same network with the lead fixed at 50 ms (the player before): the test above
        // is not vacuous.
        var fixed = StreamingPlayerConfiguration()
        fixed.maximumLeadMilliseconds = fixed.prebufferMilliseconds
        let before = play(replies, configuration: fixed)
        let total = before.dropFirst().map(\.report.underruns).reduce(0, +)
        print("replies 2-10 at \(jitter) ms jitter: \(adaptive.dropFirst().map(\.report.underruns).reduce(0, +)) underruns adaptive, \(total) with the lead fixed at 50 ms")
        XCTAssertGreaterThan(before.dropFirst().map(\.report.underruns).max()!, 1)
    }

    func testASteadyBackendKeepsTheShortLeadAndFirstSoundWithin60ms() {
        let figures = play((0..<5).map { _ in Self.steady(seconds: 3) })
        for reply in figures {
            XCTAssertEqual(reply.report.underruns, 0)
            XCTAssertEqual(reply.report.leadMilliseconds, 50)
            XCTAssertLessThanOrEqual(reply.firstSoundMs, 60, "first audio → sound")
        }
    }

    func testTheLeadShrinksBackWhileTheNetworkIsSteady() {
        var random = SeededGenerator(seed: 7)
        let rough = (0..<3).map { _ in Self.bursts(seconds: 3, jitter: 200, random: &random) }
        let figures = play(rough + (0..<12).map { _ in Self.steady(seconds: 5) })
        let grown = figures[2].report.nextLeadMilliseconds
        let settled = figures.last!.report.nextLeadMilliseconds
        print("lead after bursts \(grown) ms, after 60 s of steady replies \(settled) ms")
        XCTAssertGreaterThan(grown, 100)
        // 4 ms a second: 60 s of steady playback takes back 240 ms at most, never below 50.
        XCTAssertEqual(settled, max(50, grown - 240), accuracy: 12)
        XCTAssertTrue(figures.dropFirst(3).allSatisfy { $0.report.underruns == 0 })
    }
}
