import AudioKernel
import Dispatch
import XCTest

/// The reply's hand-off from the network's thread to the speaker (``ReplyFeed``): one atomic
/// state word, each chunk straight to the speaker that began the reply. A stop or an end
/// that races the first chunk's `beginReply` must still stop what was begun; nothing plays
/// after a stop; a reply is stopped or ended once.
final class ReplyFeedTests: XCTestCase {
    /// A speaker in memory that, as the player does, drops a chunk of a reply it has stopped
    /// (logged as `dropped`); `duringBegin` runs inside `beginReply`, where a stop from another
    /// queue can land between the speaker beginning the reply and the feed publishing it.
    final class Speaker: ReplySpeakerProvider, ReplySpeaker, @unchecked Sendable {
        let log = Locked([String]())
        var duringBegin: (() -> Void)?
        private let next = Locked(0)
        func beginReply() -> SpeakerReply? {
            let number = next.withLock { $0 += 1; return $0 }
            log.withLock { $0.append("begin \(number)") }
            duringBegin?()
            return SpeakerReply(speaker: self, number: number)
        }
        func enqueue(_ bytes: UnsafeRawBufferPointer, reply number: Int) -> Bool? {
            log.withLock { log in
                let stopped = log.contains("stop \(number)")
                log.append(stopped ? "dropped \(number)" : "chunk \(number)")
                return stopped ? nil : true
            }
        }
        func endReply(_ number: Int) { log.withLock { $0.append("end \(number)") } }
        func stop(reply number: Int) { log.withLock { $0.append("stop \(number)") } }
    }

    private static let chunk = [UInt8](repeating: 1, count: 480)
    private func send(_ feed: ReplyFeed) -> UInt64? { Self.send(feed) }
    private static func send(_ feed: ReplyFeed) -> UInt64? { chunk.withUnsafeBytes { feed.enqueue($0) } }

    func testChunksGoToTheSpeakerThatBeganTheReplyAndTheFirstCarriesItsTime() throws {
        let speaker = Speaker()
        let feed = ReplyFeed(audio: speaker)
        let before = DispatchTime.now().uptimeNanoseconds
        let arrived = try XCTUnwrap(send(feed), "the first chunk's arrival")
        XCTAssertGreaterThanOrEqual(arrived, before)
        XCTAssertLessThanOrEqual(arrived, DispatchTime.now().uptimeNanoseconds)
        XCTAssertNil(send(feed), "later chunks carry no time")
        XCTAssertTrue(feed.owns(1))
        XCTAssertFalse(feed.owns(2))
        XCTAssertTrue(feed.end())
        XCTAssertTrue(feed.end(), "ended twice: still what plays")
        XCTAssertNil(send(feed), "no chunk after the end")
        XCTAssertEqual(speaker.log.withLock { $0 }, ["begin 1", "chunk 1", "chunk 1", "end 1"], "begun once, ended once")
    }

    func testAStopThatLandsWhileTheSpeakerBeginsStopsWhatWasBegun() {
        let speaker = Speaker()
        let feed = ReplyFeed(audio: speaker)
        speaker.duringBegin = { feed.stop() }  // the session stops the reply meanwhile
        XCTAssertNil(send(feed), "the chunk is not played")
        XCTAssertNil(send(feed))
        XCTAssertFalse(feed.end(), "nothing plays")
        XCTAssertEqual(speaker.log.withLock { $0 }, ["begin 1", "stop 1"], "the reply begun is stopped, by the feed")
    }

    func testAnEndThatLandsWhileTheSpeakerBeginsStopsWhatWasBegun() {
        let speaker = Speaker()
        let feed = ReplyFeed(audio: speaker)
        speaker.duringBegin = { XCTAssertFalse(feed.end(), "nothing had begun") }
        XCTAssertNil(send(feed))
        XCTAssertEqual(speaker.log.withLock { $0 }, ["begin 1", "stop 1"], "told nothing plays, so nothing may")
    }

    func testAStopAfterTheEndStopsThePlayOutAndNothingFollows() {
        let speaker = Speaker()
        let feed = ReplyFeed(audio: speaker)
        _ = send(feed)
        XCTAssertTrue(feed.end())
        feed.stop()
        feed.stop()
        XCTAssertFalse(feed.end(), "stopped: nothing plays")
        XCTAssertEqual(speaker.log.withLock { $0 }, ["begin 1", "chunk 1", "end 1", "stop 1"])
    }

    func testWithoutASpeakerTheFirstChunkIsStillTimedAndTheNextOneTriesAgain() {
        final class NoSpeaker: ReplySpeakerProvider, @unchecked Sendable {
            let asked = Locked(0)
            func beginReply() -> SpeakerReply? { asked.withLock { $0 += 1 }; return nil }
        }
        let audio = NoSpeaker()
        let feed = ReplyFeed(audio: audio)
        XCTAssertNotNil(send(feed), "the first chunk is timed")
        XCTAssertNil(send(feed))
        XCTAssertEqual(audio.asked.withLock { $0 }, 2)
        XCTAssertFalse(feed.end())
    }

    /// The backend's queue sends chunks while another queue stops the reply at a random
    /// moment, 2,000 times: whatever the interleaving, a reply begun is stopped exactly once,
    /// so no chunk plays after the stop (a chunk already on its way reaches the speaker as
    /// the stopped reply's, which the player drops). ThreadSanitizer runs this too.
    func testAStopRacingTheChunksStopsTheReplyOnceAndNothingPlaysAfter() {
        for round in 0..<2_000 {
            let speaker = Speaker()
            let feed = ReplyFeed(audio: speaker)
            let group = DispatchGroup()
            let chunks = 1 + round % 5
            DispatchQueue.global().async(group: group) { for _ in 0..<chunks { _ = Self.send(feed) } }
            DispatchQueue.global().async(group: group) { feed.stop() }
            XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
            let log = speaker.log.withLock { $0 }
            let stops = log.filter { $0.hasPrefix("stop") }.count
            XCTAssertEqual(stops, log.contains("begin 1") ? 1 : 0, "round \(round): \(log)")
            if let stop = log.firstIndex(of: "stop 1") {
                XCTAssertFalse(log[stop...].contains("chunk 1"), "round \(round): a chunk played after the stop: \(log)")
            }
            XCTAssertNil(send(feed), "stopped: dropped")
            if testRun?.failureCount ?? 0 > 0 { return }
        }
    }
}
