import AudioKernel
import AudioMeasurement
import Foundation
import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// `play` with WAV files as other tools write them (8-192 kHz, 1-8 channels, 8-bit unsigned,
/// 16/24/32-bit integer, 32-bit float, G.711 A-law and µ-law) and MPEG-4 AAC-LC files (ours,
/// ffmpeg's, the Chatterbox backend's recording), converted on the fly by the daemon as a real process, and
/// measured where they land: the speaker (a PCM16 24 kHz mono WAV file device). Encodings
/// the decoder does not read are typed errors. A clip played with `mix: true` is mixed over
/// what plays, through the limiter.
final class PlayFormatTests: XCTestCase {
    private var scratch: String!

    override func setUp() { scratch = DaemonHarness.makeDirectory() }
    override func tearDown() { try? FileManager.default.removeItem(atPath: scratch) }

    private func write(_ name: String, _ bytes: [UInt8]) -> String {
        let path = "\(scratch!)/\(name)"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return path
    }

    /// The speaker's samples after `start` (the file grows as the daemon plays).
    private func speaker(_ daemon: DaemonHarness) throws -> [Int16] {
        try WAVDecoder.decode(contentsOfFile: "\(daemon.directory)/speaker.wav").samples
    }

    func testEveryPCMAndFloatFormatPlaysConvertedToTheSpeaker() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.client()
        _ = try client.request(Command.Subscribe.self, ["topics": ["playback"]])
        XCTAssertNotNil(client.waitForEvent(DaemonSnapshot.self))
        let formats: [WAVFormat] = [
            WAVFormat(sampleRate: 48_000, channels: 2, sampleFormat: .float),
            WAVFormat(sampleRate: 44_100, channels: 6, sampleFormat: .s24_3),
            WAVFormat(sampleRate: 8_000, channels: 1, sampleFormat: .s32),
            WAVFormat(sampleRate: 192_000, channels: 8, sampleFormat: .s24),
            WAVFormat(sampleRate: 96_000, channels: 1, sampleFormat: .s16),
            WAVFormat(sampleRate: 22_050, channels: 2, sampleFormat: .u8),
            WAVFormat(sampleRate: 8_000, channels: 1, sampleFormat: .alaw),
            WAVFormat(sampleRate: 8_000, channels: 1, sampleFormat: .mulaw),
        ]
        for format in formats {
            // Half a second of a 1 kHz tone at 0.5 on every channel (the mix-down keeps 0.5).
            let frames = format.sampleRate / 2
            let path = write("tone-\(format.sampleRate)-\(format.channels)-\(format.sampleFormat).wav", WAVFixture.file(format, frames: frames) { frame, _ in
                0.5 * sin(2 * Double.pi * 1_000 * Double(frame) / Double(format.sampleRate))
            })
            let before = try speaker(daemon).count
            let played = try client.request(Command.Play.self, ["path": .string(path)])
            XCTAssertEqual(try XCTUnwrap(played["duration_s"]?.doubleValue), 0.5, accuracy: 0.001, "\(format)")
            let finished = try XCTUnwrap(client.waitForEvent(Event.PlaybackFinished.self, timeout: 10), "\(format)")
            XCTAssertEqual(try XCTUnwrap(finished["data"]?["played_s"]?.doubleValue), 0.5, accuracy: 0.01, "\(format)")
            let heard = Array(try speaker(daemon)[before...])
            let onset = try XCTUnwrap(heard.firstIndex { abs(Int($0)) > 1_000 }, "\(format): nothing reached the speaker")
            // 8,192 samples from 50 ms in: the steady tone, at 24 kHz.
            XCTAssertGreaterThan(heard.count, onset + 1_200 + 8_192, "\(format)")
            let steady = heard[(onset + 1_200)..<(onset + 1_200 + 8_192)].map { Double($0) / 32_768 }
            let spectrum = Spectrum(steady, rate: 24_000)
            XCTAssertEqual(spectrum.amplitude(at: 1_000), 0.5, accuracy: format.sampleFormat.bytesPerSample == 1 ? 0.01 : 0.002, "\(format)")
            // The 8-bit formats' own floors: 8-bit PCM's rounding (about -44 dB for a tone
            // at half scale) and G.711's segments (about -38 dB); the rest PCM16's.
            let floor: [SampleFormat: Double] = [.u8: -40, .alaw: -33, .mulaw: -33]
            XCTAssertLessThan(spectrum.thdPlusNoise(fundamental: 1_000), floor[format.sampleFormat] ?? -85, "\(format)")
        }
    }

    /// Half a second of a 1 kHz tone at 0.5 reaches the speaker from each AAC file: ours at the
    /// recorder's 24 kHz mono 48 kbit/s, ffmpeg's as Chatterbox's iPhone app records (48 kHz
    /// mono 128 kbit/s) and at 44.1 kHz stereo; the recording in the Chatterbox trace plays
    /// its whole length. Other codecs in MP4 are refused, named.
    func testMPEG4AACFilesPlayAndOtherCodecsAreNamed() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.client()
        _ = try client.request(Command.Subscribe.self, ["topics": ["playback"]])
        XCTAssertNotNil(client.waitForEvent(DaemonSnapshot.self))
        let tone = WAVFormat(sampleRate: 48_000, channels: 2)
        let source = write("tone.wav", WAVFixture.file(tone, frames: 24_000) { frame, _ in
            0.5 * sin(2 * Double.pi * 1_000 * Double(frame) / 48_000)
        })
        let ours = "\(scratch!)/ours.m4a"
        let samples = try WAVDecoder.decode(contentsOfFile: source).samples
        let mono24k = stride(from: 0, to: samples.count, by: 4).map { samples[$0] }  // 48 kHz stereo → 24 kHz mono (a 1 kHz tone has no alias)
        let writer = try AACFileWriter(path: ours, sampleRate: 24_000, channels: 1, bitRate: 48_000)
        try mono24k.withUnsafeBufferPointer { try writer.write($0.baseAddress!, frames: $0.count) }
        try writer.finish()
        let iphone = "\(scratch!)/iphone.m4a", stereo = "\(scratch!)/stereo.m4a"
        try runTool("ffmpeg", ["-v", "error", "-y", "-i", source, "-af", "pan=mono|c0=c0", "-c:a", "aac", "-b:a", "128k", iphone])
        try runTool("ffmpeg", ["-v", "error", "-y", "-i", source, "-ar", "44100", "-c:a", "aac", "-b:a", "96k", stereo])
        for path in [ours, iphone, stereo] {
            let before = try speaker(daemon).count
            let played = try client.request(Command.Play.self, ["path": .string(path)])
            XCTAssertEqual(try XCTUnwrap(played["duration_s"]?.doubleValue), 0.5, accuracy: 0.002, path)
            let finished = try XCTUnwrap(client.waitForEvent(Event.PlaybackFinished.self, timeout: 10), path)
            XCTAssertEqual(try XCTUnwrap(finished["data"]?["played_s"]?.doubleValue), 0.5, accuracy: 0.01, path)
            let heard = Array(try speaker(daemon)[before...])
            let onset = try XCTUnwrap(heard.firstIndex { abs(Int($0)) > 1_000 }, "\(path): nothing reached the speaker")
            XCTAssertGreaterThan(heard.count, onset + 1_200 + 8_192, path)
            let steady = heard[(onset + 1_200)..<(onset + 1_200 + 8_192)].map { Double($0) / 32_768 }
            let spectrum = Spectrum(steady, rate: 24_000)
            XCTAssertEqual(spectrum.amplitude(at: 1_000), 0.5, accuracy: 0.01, path)
            // The coders' noise on a pure tone (ffmpeg's at 96 kbit/s stereo: -38.9 dB).
            XCTAssertLessThan(spectrum.thdPlusNoise(fundamental: 1_000), -35, path)
        }

        // The learner's recording as the Chatterbox backend hands it back (trace 34).
        let trace = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../shared/chatterbox-traces/34-download-recording.json").standardized
        let record = try JSONSerialization.jsonObject(with: Data(contentsOf: trace)) as! [String: Any]
        let body = try XCTUnwrap(Data(base64Encoded: (record["response"] as! [String: Any])["body_base64"] as! String))
        let recording = write("recording.m4a", [UInt8](body))
        let played = try client.request(Command.Play.self, ["path": .string(recording)])
        XCTAssertEqual(try XCTUnwrap(played["duration_s"]?.doubleValue), 3.545, accuracy: 0.001, "ffprobe's duration of the trace's file")
        let finished = try XCTUnwrap(client.waitForEvent(Event.PlaybackFinished.self, timeout: 15))
        XCTAssertEqual(try XCTUnwrap(finished["data"]?["played_s"]?.doubleValue), 3.545, accuracy: 0.02)

        // A file whose frames turn to garbage halfway (all ones: an END element where a
        // channel should be): what decoded plays, then playback.failed names the frame, and
        // the daemon serves on.
        let broken = "\(scratch!)/broken.m4a"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ours)))
        let frames = try MPEG4AudioFile(path: ours).track.frames
        XCTAssertGreaterThan(frames.count, 10)
        for frame in frames[6...] { for i in frame.offset..<(frame.offset + frame.size) { bytes[i] = 0xFF } }
        XCTAssertTrue(FileManager.default.createFile(atPath: broken, contents: Data(bytes)))
        _ = try client.request(Command.Play.self, ["path": .string(broken)])
        let failed = try XCTUnwrap(client.waitForEvent(Event.PlaybackFailed.self, timeout: 10), "no playback.failed for garbage frames")
        XCTAssertTrue(failed["data"]?["message"]?.stringValue?.contains("decoding failed at frame") ?? false, "\(failed)")
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackFinished.self, timeout: 10))

        // Apple Lossless and Opus in MP4: named, not played.
        for (codec, name) in [("alac", "alac"), ("libopus", "Opus")] {
            let path = "\(scratch!)/other-\(codec).mp4"
            try runTool("ffmpeg", ["-v", "error", "-y", "-i", source, "-c:a", codec, path])
            let error = try XCTUnwrap(client.failure(Command.Play.self, ["path": .string(path)]), codec)
            XCTAssertEqual(error.code, .fileError, codec)
            XCTAssertTrue(error.message.contains(name), "\(codec): \(error.message)")
        }
        XCTAssertEqual(try client.request(Command.Ping.self)["pong"], .bool(true), "the daemon serves on")
    }

    func testEncodingsTheDecoderDoesNotReadAreTypedErrors() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.client()
        let pcm = WAVFormat(sampleRate: 24_000, channels: 1)
        let cases: [(String, [UInt8], String)] = [
            ("adpcm.wav", WAVFixture.header(pcm, dataBytes: 4, formatTag: 2) + [0, 0, 0, 0], "unsupported encoding (format tag 2)"),
            ("mp3.wav", WAVFixture.header(pcm, dataBytes: 4, formatTag: 0x55) + [0, 0, 0, 0], "compressed encodings are not"),
            ("s12.wav", WAVFixture.header(WAVFormat(sampleRate: 24_000, channels: 2), dataBytes: 4, bitsPerSample: 12) + [0, 0, 0, 0],
             "unsupported bit depth 12"),
            ("float64.wav", WAVFixture.header(WAVFormat(sampleRate: 24_000, channels: 1, sampleFormat: .float), dataBytes: 8, bitsPerSample: 64)
                + [UInt8](repeating: 0, count: 8), "unsupported bit depth 64"),
            ("nine.wav", WAVFixture.file(WAVFormat(sampleRate: 24_000, channels: 9), frames: 10) { _, _ in 0 }, "1 to 8 channels"),
            ("slow.wav", WAVFixture.file(WAVFormat(sampleRate: 4_000, channels: 1), frames: 10) { _, _ in 0 }, "8,000 to 192,000 Hz"),
        ]
        for (name, bytes, message) in cases {
            let error = try XCTUnwrap(client.failure(Command.Play.self, ["path": .string(write(name, bytes))]), name)
            XCTAssertEqual(error.code, .fileError, name)
            XCTAssertTrue(error.message.contains(message), "\(name): \(error.message)")
        }
        XCTAssertEqual(try client.request(Command.Ping.self)["pong"], .bool(true), "the daemon serves on")
    }

    func testAClipMixedOverAnotherIsSummedThroughTheLimiterAndOnlyWithMix() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.client()
        _ = try client.request(Command.Subscribe.self, ["topics": ["playback"]])
        XCTAssertNotNil(client.waitForEvent(DaemonSnapshot.self))
        let speech = WAVFormat(sampleRate: 24_000, channels: 1)
        // Under: 2 s of 440 Hz at 0.6. Over: 1 s of 1 kHz at 0.6, at 48 kHz float (converted
        // too). Their sum peaks at 1.2: without headroom it would clip or wrap.
        let under = write("under.wav", WAVFixture.file(speech, frames: 48_000) { i, _ in 0.6 * sin(2 * Double.pi * 440 * Double(i) / 24_000) })
        let over = write("over.wav", WAVFixture.file(WAVFormat(sampleRate: 48_000, channels: 1, sampleFormat: .float), frames: 48_000) { i, _ in
            0.6 * sin(2 * Double.pi * 1_000 * Double(i) / 48_000)
        })
        let before = try speaker(daemon).count
        _ = try client.request(Command.Play.self, ["path": .string(under)])
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackStarted.self))
        let mixed = try client.request(Command.Play.self, ["path": .string(over), "mix": true])
        XCTAssertEqual(try XCTUnwrap(mixed["duration_s"]?.doubleValue), 1, accuracy: 0.001)
        // Both end; the mixed one first.
        let first = try XCTUnwrap(client.waitForEvent(Event.PlaybackFinished.self, timeout: 10))
        XCTAssertEqual(try XCTUnwrap(first["data"]?["played_s"]?.doubleValue), 1, accuracy: 0.02)
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackFinished.self, timeout: 10))

        let heard = Array(try speaker(daemon)[before...]).map { Double($0) / 32_768 }
        let onset = try XCTUnwrap(heard.firstIndex { abs($0) > 0.03 })
        let overOnset = try XCTUnwrap((onset..<heard.count).first { i in
            // The mixed clip shows as the sum passing the under tone's own peak.
            abs(heard[i]) > 0.62
        })
        // The overlap: both tones present; nothing wrapped (a wrap is a jump of ~2 full scales).
        let overlap = Array(heard[(overOnset + 1_200)..<(overOnset + 1_200 + 8_192)])
        let spectrum = Spectrum(overlap, rate: 24_000)
        XCTAssertGreaterThan(spectrum.amplitude(at: 440), 0.5)
        XCTAssertGreaterThan(spectrum.amplitude(at: 1_000), 0.5)
        XCTAssertLessThan(overlap.map(abs).max()!, 1.0, "the limiter keeps the sum inside full scale")
        XCTAssertGreaterThan(overlap.map(abs).max()!, 0.9, "the sum did reach the limiter")
        let largestJump = zip(heard, heard.dropFirst()).map { abs($1 - $0) }.max()!
        XCTAssertLessThan(largestJump, 0.5, "no wrap-around or hard edge anywhere")

        // Without mix, a second clip while one plays is the same as before: it takes the speaker.
        _ = try client.request(Command.Play.self, ["path": .string(under)])
        XCTAssertNotNil(client.waitForEvent(Event.PlaybackStarted.self))
    }
}
