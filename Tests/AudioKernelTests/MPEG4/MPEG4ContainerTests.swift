import AudioKernel
import Foundation
import TestSupport
import XCTest

/// The MPEG-4 container, against tools the project did not write: ffmpeg's AAC files are
/// read frame for frame as ffmpeg itself extracts them, and the same frames written by
/// ``MPEG4AudioWriter`` make a file that ffprobe, ffmpeg, mediainfo and AtomicParsley take
/// and that decodes to ffmpeg's own file's PCM, to the sample, its priming hidden.
final class MPEG4ContainerTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory()
        addTeardownBlock { [directory] in try? FileManager.default.removeItem(at: directory!) }
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// A WAV of `frames` frames (a sweep, so that every frame differs) at `rate`.
    private func source(rate: Int, channels: Int, frames: Int) throws -> String {
        let wav = path("source-\(rate)-\(channels)-\(frames).wav")
        let format = WAVFormat(sampleRate: rate, channels: channels, sampleFormat: .s16)
        let bytes = WAVFixture.file(format, frames: frames) { i, channel in
            let t = Double(i) / Double(rate)
            return 0.4 * sin(2 * Double.pi * (200 + 1_500 * t) * t + Double(channel))
        }
        XCTAssertTrue(FileManager.default.createFile(atPath: wav, contents: Data(bytes)))
        return wav
    }

    /// ffmpeg's own AAC-LC `.m4a` of `wav`, and its frames as ffmpeg extracts them (ADTS
    /// without CRC: 7-byte headers dropped).
    private func ffmpegAAC(_ wav: String, bitRate: String = "48k") throws -> (m4a: String, frames: [[UInt8]]) {
        let m4a = wav + ".ffmpeg.m4a", adts = wav + ".aac"
        try runTool("ffmpeg", ["-v", "error", "-y", "-i", wav, "-c:a", "aac", "-b:a", bitRate, m4a])
        try runTool("ffmpeg", ["-v", "error", "-y", "-i", m4a, "-c", "copy", "-f", "adts", adts])
        let stream = [UInt8](try Data(contentsOf: URL(fileURLWithPath: adts)))
        var frames: [[UInt8]] = []
        var offset = 0
        while offset + 7 <= stream.count {
            XCTAssertEqual(stream[offset], 0xFF)
            XCTAssertEqual(stream[offset + 1] & 0xF6, 0xF0, "ADTS sync, layer 0")
            let protectionAbsent = stream[offset + 1] & 1 == 1
            let length = (Int(stream[offset + 3] & 0x03) << 11) | (Int(stream[offset + 4]) << 3) | Int(stream[offset + 5] >> 5)
            let header = protectionAbsent ? 7 : 9
            frames.append(Array(stream[(offset + header)..<(offset + length)]))
            offset += length
        }
        XCTAssertEqual(offset, stream.count)
        return (m4a, frames)
    }

    private func pcm(_ file: String) throws -> Data {
        let raw = file + ".raw"
        try runTool("ffmpeg", ["-v", "warning", "-y", "-i", file, "-f", "s16le", "-c:a", "pcm_s16le", raw])
        return try Data(contentsOf: URL(fileURLWithPath: raw))
    }

    private func probe(_ file: String, _ entries: String) throws -> [String: String] {
        let text = try runTool("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", entries, "-of", "default=noprint_wrappers=1", file])
        return Dictionary(text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }, uniquingKeysWith: { first, _ in first })
    }

    func testFFmpegsFilesAreReadFrameForFrame() throws {
        for (rate, channels, frames) in [(24_000, 1, 24_000 * 3 + 17), (44_100, 2, 44_100), (8_000, 1, 1)] {
            let wav = try source(rate: rate, channels: channels, frames: frames)
            let (m4a, expected) = try ffmpegAAC(wav)
            let file = try MPEG4AudioFile(path: m4a)
            XCTAssertEqual(file.track.config, AudioSpecificConfig(sampleRate: rate, channelConfiguration: channels))
            XCTAssertEqual(file.track.frames.count, expected.count, "\(rate) Hz")
            var buffer: [UInt8] = []
            for index in expected.indices {
                try file.readFrame(index, into: &buffer)
                XCTAssertEqual(buffer, expected[index], "frame \(index) at \(rate) Hz")
            }
            // ffmpeg primes with 1024 samples and its edit list presents the input's length.
            XCTAssertEqual(file.track.presentationStart, 1_024)
            XCTAssertEqual(file.track.presentationLength, frames, "\(rate) Hz")
            XCTAssertEqual(file.track.timescale, rate)
        }
    }

    func testFramesWrittenAreAFileThatFFmpegDecodesToTheSampleAndOtherToolsRead() throws {
        for (rate, channels, frames) in [(24_000, 1, 24_000 * 3 + 17), (48_000, 2, 48_000 * 2 + 1), (16_000, 1, 1), (8_000, 1, 5_000)] {
            let wav = try source(rate: rate, channels: channels, frames: frames)
            let (reference, coded) = try ffmpegAAC(wav)
            let ours = path("ours-\(rate)-\(channels).m4a")
            let writer = try MPEG4AudioWriter(path: ours, config: AudioSpecificConfig(sampleRate: rate, channelConfiguration: channels))
            for frame in coded { try frame.withUnsafeBytes { try writer.append($0) } }
            try writer.finish(priming: 1_024, length: frames, sync: true)
            XCTAssertFalse(FileManager.default.fileExists(atPath: ours + ".partial"), "the scratch file is gone")
            XCTAssertFalse(FileManager.default.fileExists(atPath: ours + ".assembling"))

            let stream = try probe(ours, "stream=codec_name,profile,sample_rate,channels,duration_ts,time_base")
            XCTAssertEqual(stream["codec_name"], "aac")
            XCTAssertEqual(stream["profile"], "LC")
            XCTAssertEqual(stream["sample_rate"], "\(rate)")
            XCTAssertEqual(stream["channels"], "\(channels)")
            XCTAssertEqual(stream["duration_ts"], "\(frames)", "the edit list's length, in samples")
            // Decoded silently, to the same PCM as ffmpeg's own file: the same frames, the
            // priming hidden. (ffmpeg 5.1's command line trims the priming but keeps the last
            // frame's padding, for its own files as for these; ffprobe's duration_ts above is
            // the edit's exact length.)
            let decoded = try pcm(ours)
            XCTAssertEqual(decoded.count, (coded.count * 1_024 - 1_024) * channels * 2, "\(rate) Hz \(channels) ch")
            XCTAssertEqual(decoded, try pcm(reference), "\(rate) Hz \(channels) ch")

            // moov before mdat: a browser plays from the first bytes.
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ours)))
            let moov = try XCTUnwrap(bytes.firstRange(of: Array("moov".utf8))?.lowerBound)
            let mdat = try XCTUnwrap(bytes.firstRange(of: Array("mdat".utf8))?.lowerBound)
            XCTAssertLessThan(moov, mdat)
            XCTAssertEqual(Array(bytes[4..<12]), Array("ftypM4A ".utf8))

            let tree = try runTool("AtomicParsley", [ours, "-T"])
            for box in ["ftyp", "moov", "mvhd", "trak", "tkhd", "elst", "mdhd", "hdlr", "stsd", "mp4a", "esds", "stts", "stsc", "stsz", "stco", "mdat"] {
                XCTAssertTrue(tree.contains("Atom \(box)"), "AtomicParsley does not list \(box):\n\(tree)")
            }
            XCTAssertFalse(tree.lowercased().contains("error") || tree.lowercased().contains("warning"), tree)
            let info = try runTool("mediainfo", ["--Inform=Audio;%Format%|%Format_AdditionalFeatures%|%SamplingRate%|%Channel(s)%|%Duration%", ours])
            XCTAssertEqual(info.trimmingCharacters(in: .whitespacesAndNewlines),
                           "AAC|LC|\(rate)|\(channels)|\(Int((Double(frames) * 1_000 / Double(rate)).rounded()))", "mediainfo")

            // And our reader takes our file back, frame for frame.
            let read = try MPEG4AudioFile(path: ours)
            XCTAssertEqual(read.track.frames.count, coded.count)
            XCTAssertEqual(read.track.presentationStart, 1_024)
            XCTAssertEqual(read.track.presentationLength, frames)
            var buffer: [UInt8] = []
            try read.readFrame(coded.count - 1, into: &buffer)
            XCTAssertEqual(buffer, coded.last)
        }
    }

    /// Headless Chromium's `decodeAudioData` (its own demuxer and decoder, as a browser
    /// plays a recording) decodes our file to the input's length: priming and padding hidden.
    func testChromiumDecodesOurFileToTheInputsLength() throws {
        let browser = try WebDriver(width: 320, height: 240)
        for (rate, channels, frames) in [(24_000, 1, 24_000 * 3 + 17), (48_000, 2, 48_000 + 1), (16_000, 1, 1_000)] {
            let wav = try source(rate: rate, channels: channels, frames: frames)
            let (_, coded) = try ffmpegAAC(wav)
            let ours = path("chromium-\(rate).m4a")
            let writer = try MPEG4AudioWriter(path: ours, config: AudioSpecificConfig(sampleRate: rate, channelConfiguration: channels))
            for frame in coded { try frame.withUnsafeBytes { try writer.append($0) } }
            try writer.finish(priming: 1_024, length: frames)
            let encoded = try Data(contentsOf: URL(fileURLWithPath: ours)).base64EncodedString()
            let decoded = try browser.runAsync("""
                const [encoded, rate, channels, done] = arguments;
                const bytes = Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
                new OfflineAudioContext(channels, 1, rate).decodeAudioData(bytes.buffer)
                  .then((b) => done({ length: b.length, rate: b.sampleRate, channels: b.numberOfChannels }), (e) => done({ error: String(e) }));
                """, [.string(encoded), .int(rate), .int(channels)])
            XCTAssertNil(decoded["error"], "\(decoded)")
            XCTAssertEqual(decoded["length"], .int(frames), "\(rate) Hz \(channels) ch: \(decoded)")
            XCTAssertEqual(decoded["channels"], .int(channels))
        }
    }

    func testAFileWithNoFramesIsValidAndEmpty() throws {
        let empty = path("empty.m4a")
        let writer = try MPEG4AudioWriter(path: empty, config: AudioSpecificConfig(sampleRate: 24_000, channelConfiguration: 1))
        try writer.finish(priming: 0, length: 0)
        let track = try MPEG4AudioFile(path: empty).track
        XCTAssertEqual(track.frames, [])
        XCTAssertEqual(track.presentationLength, 0)
        XCTAssertEqual(try probe(empty, "stream=codec_name")["codec_name"], "aac")
    }

    func testACancelledWriterLeavesNothing() throws {
        let target = path("cancelled.m4a")
        let writer = try MPEG4AudioWriter(path: target, config: AudioSpecificConfig(sampleRate: 24_000, channelConfiguration: 1))
        try [UInt8](repeating: 0x21, count: 10).withUnsafeBytes { try writer.append($0) }
        writer.cancel()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("cancelled") }, [])
    }

    func testOtherCodecsAreNamedNotDecoded() throws {
        let wav = try source(rate: 44_100, channels: 2, frames: 44_100)
        let alac = path("alac.m4a"), mp3 = path("mp3.mp4")
        try runTool("ffmpeg", ["-v", "error", "-y", "-i", wav, "-c:a", "alac", alac])
        XCTAssertThrowsError(try MPEG4AudioFile(path: alac)) { XCTAssertEqual($0 as? MPEG4Error, .unsupportedCodec("Apple Lossless (alac)")) }
        try runTool("ffmpeg", ["-v", "error", "-y", "-i", wav, "-c:a", "libmp3lame", "-f", "mp4", mp3])
        XCTAssertThrowsError(try MPEG4AudioFile(path: mp3)) { XCTAssertEqual($0 as? MPEG4Error, .unsupportedCodec("MP3")) }

        // HE-AAC: an LC file whose AudioSpecificConfig says SBR (object type 5), as an
        // HE-AAC encoder writes it. Debian's ffmpeg has no HE-AAC encoder, so the bytes are
        // changed in place: the config's first 5 bits.
        let (m4a, _) = try ffmpegAAC(try source(rate: 24_000, channels: 1, frames: 4_800))
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: m4a)))
        // ffmpeg writes the descriptor's size in four bytes: 05 80 80 80 05.
        let asc = try XCTUnwrap(bytes.firstRange(of: [0x05, 0x80, 0x80, 0x80])?.upperBound, "the decoder specific info") + 1
        bytes[asc] = (bytes[asc] & 0x07) | (5 << 3)
        XCTAssertThrowsError(try MPEG4Demuxer.parse(bytes)) {
            XCTAssertEqual($0 as? MPEG4Error, .unsupportedAudioObjectType(5, name: "HE-AAC (SBR)"))
        }
    }

    /// The fuzzer's seeds and findings, replayed in a debug build (bounds and overflow
    /// checked): each parses or is a clear error.
    func testTheFuzzersFindingsAreClearErrors() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/mpeg4-fuzz")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        XCTAssertGreaterThanOrEqual(names.count, 3)
        for name in names {
            let bytes = [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
            if name.hasPrefix("crash-") {
                // An stts whose sample count times delta overflowed Int (found in 1 s of fuzzing).
                XCTAssertThrowsError(try MPEG4Demuxer.parse(bytes), name) { XCTAssertFalse("\($0)".isEmpty) }
            } else {
                XCTAssertNoThrow(try MPEG4Demuxer.parse(bytes), name)
            }
        }
    }

    func testHostileBoxesAreClearErrors() throws {
        let (m4a, _) = try ffmpegAAC(try source(rate: 24_000, channels: 1, frames: 24_000))
        let good = [UInt8](try Data(contentsOf: URL(fileURLWithPath: m4a)))
        XCTAssertNoThrow(try MPEG4Demuxer.parse(good))
        // Cut anywhere: an error, never a trap.
        for length in stride(from: 0, to: good.count, by: max(1, good.count / 500)) {
            XCTAssertThrowsError(try MPEG4Demuxer.parse(Array(good[..<length])), "cut at \(length)")
        }
        func patched(_ box: String, at field: Int, _ value: [UInt8]) throws -> [UInt8] {
            var bytes = good
            let start = try XCTUnwrap(bytes.firstRange(of: Array(box.utf8))?.lowerBound, box) - 4
            bytes.replaceSubrange((start + field)..<(start + field + value.count), with: value)
            return bytes
        }
        let cases: [(String, [UInt8])] = [
            ("a box of size 0 inside moov", try patched("mvhd", at: 0, [0, 0, 0, 3])),
            ("a box smaller than its header", try patched("trak", at: 0, [0, 0, 0, 4])),
            ("a box past its parent", try patched("mdia", at: 0, [0x7F, 0xFF, 0xFF, 0xFF])),
            ("a 64-bit size past the file", try patched("moov", at: 0, [0, 0, 0, 1])),
            ("stsz claiming 2^32-1 samples", try patched("stsz", at: 16, [0xFF, 0xFF, 0xFF, 0xFF])),
            ("stco claiming 2^32-1 chunks", try patched("stco", at: 12, [0xFF, 0xFF, 0xFF, 0xFF])),
            ("a chunk past the end of the file", try patched("stco", at: 16, [0x7F, 0xFF, 0xFF, 0x00])),
            ("stsc starting at chunk 0", try patched("stsc", at: 16, [0, 0, 0, 0])),
            ("stts timing more samples than stsz", try patched("stts", at: 16, [0, 0x10, 0, 0])),
            ("esds's descriptor longer than the box", try patched("esds", at: 13, [0x7F])),
            ("no moov", try patched("moov", at: 4, Array("free".utf8))),
            ("not MPEG-4", Array("RIFF\0\0\0\0WAVEfmt ".utf8) + good),
        ]
        for (name, bytes) in cases {
            XCTAssertThrowsError(try MPEG4Demuxer.parse(bytes), name) { error in
                XCTAssertNotNil(error as? MPEG4Error, "\(name): \(error)")
                XCTAssertFalse("\(error)".isEmpty)
            }
        }
        // A FIFO and a directory are refused without a read that would block.
        let fifo = path("fifo.m4a")
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertThrowsError(try MPEG4AudioFile(path: fifo))
        XCTAssertThrowsError(try MPEG4AudioFile(path: directory.path))
        XCTAssertThrowsError(try MPEG4AudioFile(path: "/dev/zero"))
    }
}
