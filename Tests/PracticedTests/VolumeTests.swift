import AudioKernel
import Foundation
import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport
import XCTest

/// `volume.get` / `volume.set` against the daemon as a process: the level reaches the
/// speaker (a WAV file device), is told as an event, survives a restart, and hostile values
/// are refused with a clear error.
final class VolumeTests: XCTestCase {
    func testTheVolumeReachesTheSpeakerIsToldAndIsKeptAcrossRestarts() throws {
        let directory = DaemonHarness.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var daemon: DaemonHarness? = try DaemonHarness(directory: directory)
        daemon!.keepsDirectory = true
        let client = try daemon!.client()
        XCTAssertEqual(try client.request(Command.VolumeGet.self)["level"], .double(1))
        XCTAssertEqual(try client.request(Command.VolumeGet.self)["db"], .double(0))
        _ = try client.request(Command.Subscribe.self, ["topics": ["playback"]])
        XCTAssertNotNil(client.waitForEvent(DaemonSnapshot.self))

        let set = try client.request(Command.VolumeSet.self, ["db": .double(-6.0206)])
        XCTAssertEqual(try XCTUnwrap(set["level"]?.doubleValue), 0.5, accuracy: 0.0001)
        XCTAssertEqual(set["db"], .double(-6))
        let changed = try XCTUnwrap(client.waitForEvent(Event.VolumeChanged.self))
        XCTAssertEqual(try XCTUnwrap(changed["data"]?["level"]?.doubleValue), 0.5, accuracy: 0.0001)

        // A clip at half volume: the speaker gets each sample halved (rounded, or dithered
        // by one step where halving leaves a fraction). The clip is complete at once, so it
        // starts at the next period, while the 30 ms ramp to the new level may still run:
        // its first 60 ms are left out of the comparison.
        let clip = "\(SimulatorHarness.samplesDirectory)/reply-2.wav"
        _ = try client.request(Command.Play.self, ["path": .string(clip)])
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackFinished.self, timeout: 15))
        let original = try WAVDecoder.decode(contentsOfFile: clip).samples
        let speaker = try WAVDecoder.decode(contentsOfFile: "\(directory)/speaker.wav").samples
        // Aligned on the first loud sample, give or take the few quiet ones dither may zero.
        let start = try XCTUnwrap(speaker.firstIndex { abs(Int($0)) > 500 })
        let clipStart = try XCTUnwrap(original.firstIndex { abs(Int($0)) > 1_000 })
        let worst = (-8...8).map { shift -> Double in
            let from = start + shift - clipStart
            guard from >= 0, from + original.count <= speaker.count else { return .infinity }
            return (1_440..<original.count).map { abs(Double(speaker[from + $0]) - Double(original[$0]) / 2) }.max() ?? .infinity
        }.min()!
        XCTAssertLessThanOrEqual(worst, 1.5, "each sample is half the clip's, within the dither, the whole clip")

        // practicectl, as an operator would type it.
        let typed = try DaemonHarness.practicectl(["volume", "-12dB"], socket: daemon!.socketPath)
        XCTAssertEqual(typed.status, 0, typed.stderr)
        XCTAssertEqual(typed.stdout, "volume 0.251 (-12.0 dB)\n")

        // A restart keeps the level the client set.
        daemon = nil
        daemon = try DaemonHarness(directory: directory)
        daemon!.keepsDirectory = true
        XCTAssertEqual(try XCTUnwrap(try daemon!.client().request(Command.VolumeGet.self)["level"]?.doubleValue), 0.2512, accuracy: 0.0001)
        let shown = try DaemonHarness.practicectl(["volume"], socket: daemon!.socketPath)
        XCTAssertEqual(shown.stdout, "volume 0.251 (-12.0 dB)\n")
    }

    func testTheConfiguredVolumeAppliesAtFirstStartAndHostileValuesAreRefused() throws {
        let daemon = try DaemonHarness(arguments: ["--audio-volume", "50%"])
        let client = try daemon.client()
        XCTAssertEqual(try client.request(Command.VolumeGet.self)["level"], .double(0.5))
        for bad: JSONValue in [
            .object([]), ["level": .double(0.5), "db": .double(-6)], ["level": .double(1.5)], ["level": .double(-0.1)],
            ["db": .double(3)], ["db": .double(-1000)], ["level": "loud"], ["db": .double(1e308)],
        ] {
            let error = try XCTUnwrap(client.failure(Command.VolumeSet.self, bad), "\(bad)")
            XCTAssertEqual(error.code, .badArguments, "\(bad)")
        }
        XCTAssertEqual(try client.request(Command.VolumeGet.self)["level"], .double(0.5), "a refused value changes nothing")
        XCTAssertEqual(try client.request(Command.VolumeSet.self, ["level": .double(0)])["db"], .null, "silence has no finite dB")

        // A value out of range in the configuration stops the start with the key named.
        let refused = try DaemonHarness(arguments: ["--audio-volume", "2"], waitReady: false)
        XCTAssertNotNil(refused.process.waitForExit(timeout: 10))
        XCTAssertTrue(refused.log.contains("audio.volume"), refused.log)
    }
}
