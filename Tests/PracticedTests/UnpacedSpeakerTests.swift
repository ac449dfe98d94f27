import AudioKernel
import AudioMeasurement
import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// The daemon as a real process with a WAV file speaker without `?realtime` (docs/audio.md:
/// a file has no clock). What it writes is what was played, back to back: a clip decoded
/// and resampled from disk and a reply streamed by practice-sim over TCP at the network's
/// pace are whole, and nothing is written while idle. Before, the file device consumed
/// periods as fast as the disk took them: a 48 kHz 24-bit tone came out at THD+N -22 dB
/// (holes of silence inside it), and the file grew by 35 MB a second of silence while idle.
final class UnpacedSpeakerTests: XCTestCase {
    private var scratch: String!

    override func setUp() { scratch = DaemonHarness.makeDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: scratch) }

    private func unpacedDaemon(backend: URL? = nil) throws -> (DaemonHarness, String) {
        let path = "\(scratch!)/unpaced.wav"
        return (try DaemonHarness(backend: backend, arguments: ["--playback-device", "file:\(path)"]), path)
    }

    private func speaker(_ path: String) throws -> [Int16] { try WAVDecoder.decode(contentsOfFile: path).samples }

    /// Where `expected` lies in `written` bit for bit, at `from` or after at most `gap`
    /// samples of silence.
    private func find(_ expected: [Int16], in written: [Int16], from: Int, gap: Int = 480) -> Int? {
        guard written.count >= from + expected.count else { return nil }
        return (from...min(from + gap, written.count - expected.count)).first { offset in
            written[from..<offset].allSatisfy { $0 == 0 } && written[offset..<(offset + expected.count)].elementsEqual(expected)
        }
    }

    /// Reads events until the session's stage is `stage`.
    private func waitForStage(_ stage: String, _ client: ControlClient, timeout: Double = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while let event = try? client.nextEvent(timeout: max(0.01, deadline.timeIntervalSinceNow)) {
            if event["event"] == "session.stage", event["data"]?["stage"]?.stringValue == stage { return true }
        }
        return false
    }

    func testClipsAreWrittenWholeBackToBackAndNothingWhileIdle() throws {
        let (daemon, path) = try unpacedDaemon()
        let client = try daemon.client()
        _ = try client.request(Command.Subscribe.self, ["topics": ["playback"]])
        XCTAssertTrue(try speaker(path).isEmpty, "an idle speaker writes nothing")

        // The issue's clip: 1 s of a 1 kHz tone at 0.5, 48 kHz 24-bit, resampled to 24 kHz.
        let tonePath = "\(scratch!)/tone48.wav"
        let format = WAVFormat(sampleRate: 48_000, channels: 1, sampleFormat: .s24_3)
        XCTAssertTrue(FileManager.default.createFile(atPath: tonePath, contents: Data(WAVFixture.file(format, frames: 48_000) { i, _ in
            0.5 * sin(2 * Double.pi * 1_000 * Double(i) / 48_000)
        })))
        _ = try client.request(Command.Play.self, ["path": .string(tonePath)])
        let finished = try XCTUnwrap(client.waitForEvent(Event.PlaybackFinished.self))
        XCTAssertEqual(finished["data"]?["underruns"], .int(0))
        let tone = try speaker(path)
        XCTAssertEqual(tone.count, 24_000, accuracy: 480, "the clip, its filter's tail and its last period: nothing more")
        let onset = try XCTUnwrap(tone.firstIndex { abs(Int($0)) > 1_000 })
        let spectrum = Spectrum(tone[(onset + 600)..<(onset + 600 + 16_384)].map { Double($0) / 32_768 }, rate: 24_000)
        XCTAssertEqual(spectrum.amplitude(at: 1_000), 0.5, accuracy: 0.002)
        let thdN = spectrum.thdPlusNoise(fundamental: 1_000)
        print("figures: 48 kHz 24-bit tone through an unpaced file speaker: THD+N \(String(format: "%.1f", thdN)) dB")
        XCTAssertLessThan(thdN, -85, "as through the paced file (the PCM16 floor)")

        // Then a 24 kHz PCM16 clip: the speaker's own format, so bit for bit, right after the
        // tone (nothing was written in between while the daemon was idle).
        let words = try WAVDecoder.decode(contentsOfFile: "\(SimulatorHarness.samplesDirectory)/reply-1.wav")
        XCTAssertEqual(words.format, .speech)
        let wordsPath = "\(scratch!)/words.wav"
        XCTAssertTrue(FileManager.default.createFile(atPath: wordsPath, contents: Data(try WAVEncoder.encode(words.samples, format: .speech))))
        let run = try DaemonHarness.practicectl(["--wait-for", "playback.finished", "play", wordsPath], socket: daemon.socketPath)
        XCTAssertEqual(run.status, 0, run.stderr)
        let both = try speaker(path)
        let start = try XCTUnwrap(find(words.samples, in: both, from: tone.count), "the clip is not in the file bit for bit right after the tone")
        XCTAssertLessThanOrEqual(both.count - (start + words.samples.count), 480, "only the last period's completion after it")
    }

    func testRepliesStreamedAtTheNetworksPaceAreBitExactAndStopAndTheNextReplyBehave() throws {
        // practice-sim sends the greeting's audio at twice real time in SSE events: slower
        // than a disk takes it, so the file device must wait for each chunk.
        let sim = try SimulatorHarness { $0.pace = 2 }
        let (daemon, path) = try unpacedDaemon(backend: sim.baseURL)
        let client = try daemon.client()
        _ = try client.request(Command.Subscribe.self, ["topics": ["session", "playback"]])
        _ = try client.request(Command.SessionStart.self, ["mode": "conversation", "topic_id": "travel"], timeout: 20)
        let greeted = try XCTUnwrap(client.waitForEvent(Event.ReplyFinished.self, timeout: 20))
        XCTAssertEqual(greeted["data"]?["greeting"], .bool(true))
        let greeting = SimulatorHarness.speech.greeting.pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let written = try speaker(path)
        let start = try XCTUnwrap(find(greeting, in: written, from: 0, gap: 0), "the greeting is not the file's first samples bit for bit")
        XCTAssertLessThanOrEqual(written.count - (start + greeting.count), 480)
        XCTAssertTrue(waitForStage("ready", client))

        // A typed turn; its reply is stopped while it streams (barge-in), then the next
        // turn's reply plays whole after it.
        _ = try client.request(Command.Say.self, ["text": "I would like to visit Kyoto."], timeout: 20)
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackStarted.self, timeout: 20))
        _ = try client.request(Command.PlaybackStop.self)
        // The stopped sound's end and the session back at ready, in either order.
        var stopped: JSONValue?, ready = false
        let deadline = Date().addingTimeInterval(20)
        while stopped == nil || !ready, let event = try? client.nextEvent(timeout: max(0.01, deadline.timeIntervalSinceNow)) {
            if event["event"] == "playback.finished" { stopped = event }
            if event["event"] == "session.stage", event["data"]?["stage"] == "ready" { ready = true }
        }
        XCTAssertEqual(stopped?["data"]?["interrupted"], .bool(true))
        XCTAssertTrue(ready, "the session is ready again after the stop")
        let afterStop = try speaker(path).count

        _ = try client.request(Command.Say.self, ["text": "What should I see there?"], timeout: 20)
        let second = try XCTUnwrap(client.waitForEvent(Event.ReplyFinished.self, timeout: 30))
        XCTAssertEqual(second["data"]?["outcome"], "answered", "\(second)")
        let all = try speaker(path)
        let replies = SimulatorHarness.speech.replies.map { phrase in phrase.pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) } }
        // Which reply the simulator chose is its own business: one of them, whole, right
        // after the stopped one (its fade and last period at most).
        let found = replies.contains { reply in find(reply, in: all, from: afterStop, gap: 960) != nil }
        XCTAssertTrue(found, "the reply after the stop is not in the file bit for bit (\(all.count - afterStop) samples after the stop)")
    }
}
