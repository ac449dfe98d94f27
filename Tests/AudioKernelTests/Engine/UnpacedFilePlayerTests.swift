import AudioKernel
import AudioMeasurement
import Foundation
import TestSupport
import XCTest

/// The player on a WAV file without `?realtime`: a device with no clock. It holds what was
/// played and nothing else: each sound's samples back to back as they came, however slowly
/// (a reply over the network, a clip decoded from disk), nothing while idle, and only a
/// sound's last period completed with silence. Before the device waited for its source, it
/// consumed periods as fast as the disk took them: holes of silence inside every sound that
/// came slower than that, and silence written without end while idle (35 MB a second here).
final class UnpacedFilePlayerTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try makeTemporaryDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// Queues `samples` as a reply in chunks of an odd number of bytes, with a pause after
    /// each: a network slower than the disk.
    private func stream(_ samples: [Int16], to player: StreamingPlayer, chunkBytes: Int = 1_201, pauseMicroseconds: UInt32 = 4_000, end: Bool = true) {
        let bytes = WAVBuilder.samples(samples)
        var offset = 0
        while offset < bytes.count {
            let n = min(chunkBytes, bytes.count - offset)
            XCTAssertTrue(player.enqueue(Array(bytes[offset..<(offset + n)])))
            offset += n
            // The network's pace, simulated: the device must wait for the next chunk.
            usleep(pauseMicroseconds)
        }
        if end { player.endReply() }
    }

    private func finishedReports(_ log: EventLog<PlayerEvent>) -> [PlaybackReport] { finished(log.snapshot()) }

    private func finished(_ events: [(event: PlayerEvent, time: Date)]) -> [PlaybackReport] {
        events.compactMap { if case .finished(let report) = $0.event { return report } else { return nil } }
    }

    func testRepliesStreamedSlowerThanTheFileAreWrittenBitExactBackToBackAndNothingWhileIdle() throws {
        let path = dir.appendingPathComponent("speaker.wav").path
        let log = EventLog<PlayerEvent>()
        let player = try StreamingPlayer(device: .file(path: path, realTime: false)) { log.append($0) }
        try player.start()
        defer { player.shutdown() }

        // 1: one second streamed in 40 slow chunks.
        let first = Loopback.signal(count: 24_000, seed: 1)
        player.beginReply()
        stream(first, to: player)
        XCTAssertTrue(log.wait(timeout: 10) { self.finished($0).count == 1 })
        // 2: after an idle pause, half a second queued at once.
        let second = Loopback.signal(count: 12_000, seed: 2)
        player.beginReply()
        stream(second, to: player, chunkBytes: 24_000, pauseMicroseconds: 0)
        XCTAssertTrue(log.wait(timeout: 10) { self.finished($0).count == 2 })
        // 3: stopped while the device waits for more of it (barge-in on a slow reply).
        let third = Loopback.signal(count: 6_000, seed: 3)
        player.beginReply()
        stream(third, to: player, end: false)
        player.stop()
        XCTAssertTrue(log.wait(timeout: 10) { self.finished($0).count == 3 })
        // 4: the next reply after the stop, whole.
        let fourth = Loopback.signal(count: 7_200, seed: 4)
        player.beginReply()
        stream(fourth, to: player)
        XCTAssertTrue(log.wait(timeout: 10) { self.finished($0).count == 4 })
        player.shutdown()

        let reports = finishedReports(log)
        XCTAssertEqual(reports.map(\.interrupted), [false, false, true, false])
        XCTAssertEqual(reports.map(\.underruns), [0, 0, 0, 0], "a device without a clock waits for data; it never runs dry")
        XCTAssertFalse(log.snapshot().contains { if case .underrun = $0.event { return true } else { return false } })
        XCTAssertEqual(reports[0].playedSeconds, 1, accuracy: 0.001)

        // The file: each reply bit for bit, separated only by the silence completing the
        // previous reply's last period and its drain (2 periods at most), and after the stop
        // by its 20 ms fade, here over nothing queued.
        let written = try WAVDecoder.decode(contentsOfFile: path).samples
        var position = 0
        for (index, reply) in [first, second, third, fourth].enumerated() {
            let gap = index == 3 ? 480 + 480 : 480
            let start = try XCTUnwrap((position...min(position + gap, written.count - reply.count)).first { offset in
                written[offset..<(offset + reply.count)].elementsEqual(reply)
            }, "reply \(index + 1) is not in the file bit for bit within \(gap) samples of the previous one's end (at \(position) of \(written.count))")
            XCTAssertTrue(written[position..<start].allSatisfy { $0 == 0 }, "reply \(index + 1): only silence before it")
            position = start + reply.count
        }
        XCTAssertLessThanOrEqual(written.count - position, 480, "nothing written while idle after the last reply")
        XCTAssertTrue(written[position...].allSatisfy { $0 == 0 })
    }

    func testAReplyResampledIntoAnUnpacedFileIsAsCleanAsThePacedOne() throws {
        // 48 kHz, as a kiosk's file speaker for a 48 kHz pipeline would be: the reply goes
        // through the device's resampler in slow chunks. Holes would show as THD+N near
        // -20 dB (the figure before the fix); the resampler's own floor is PCM16's.
        let uri = try AudioDeviceURI(parsing: "file:\(dir.appendingPathComponent("speaker48.wav").path)?rate=48000")
        var streamConfiguration = AudioStreamConfiguration()
        streamConfiguration.device = uri.format
        let log = EventLog<PlayerEvent>()
        let player = try StreamingPlayer(device: uri.name, stream: streamConfiguration) { log.append($0) }
        try player.start()
        defer { player.shutdown() }
        let tone = (0..<24_000).map { Int16((0.5 * 32_767 * sin(2 * Double.pi * 1_000 * Double($0) / 24_000)).rounded()) }
        player.beginReply()
        stream(tone, to: player, chunkBytes: 963)
        XCTAssertTrue(log.wait(timeout: 10) { self.finished($0).count == 1 })
        player.shutdown()
        XCTAssertEqual(finishedReports(log).first?.underruns, 0)

        guard case .file(let path, _) = uri.name else { return XCTFail("\(uri.name)") }
        let written = try WAVDecoder.decode(contentsOfFile: path)
        XCTAssertEqual(written.format.sampleRate, 48_000)
        XCTAssertEqual(written.samples.count, 48_000, accuracy: 1_000, "the tone and its last period, nothing more")
        let onset = try XCTUnwrap(written.samples.firstIndex { abs(Int($0)) > 1_000 })
        let steady = written.samples[(onset + 2_400)..<(onset + 2_400 + 32_768)].map { Double($0) / 32_768 }
        let spectrum = Spectrum(steady, rate: 48_000)
        XCTAssertEqual(spectrum.amplitude(at: 1_000), 0.5, accuracy: 0.002)
        let thdN = spectrum.thdPlusNoise(fundamental: 1_000)
        XCTAssertLessThan(thdN, -85, "THD+N \(thdN) dB")
    }
}
