@testable import AudioKernel
import TestSupport
import XCTest

final class WAVEncoderTests: XCTestCase {
    func testCanonicalHeaderBytes() throws {
        let file = try WAVEncoder.encode([1, -2], format: .speech)
        let expected: [UInt8] = Array("RIFF".utf8) + [40, 0, 0, 0] + Array("WAVEfmt ".utf8) + [16, 0, 0, 0,
            1, 0, 1, 0, 0xC0, 0x5D, 0, 0, 0x80, 0xBB, 0, 0, 2, 0, 16, 0] + Array("data".utf8) + [4, 0, 0, 0,
            1, 0, 0xFE, 0xFF]
        XCTAssertEqual(file, expected)
    }

    func testEncodeIntoCallerBufferMatchesArrayForm() throws {
        let samples = TestSignals.randomInt16(1001, seed: 1)
        let reference = try WAVEncoder.encode(samples)
        var buffer = [UInt8](repeating: 0, count: WAVEncoder.encodedSize(sampleCount: samples.count))
        let written = try samples.withUnsafeBufferPointer { s in
            try buffer.withUnsafeMutableBytes { try WAVEncoder.encode(s, format: .speech, into: $0) }
        }
        XCTAssertEqual(written, reference.count)
        XCTAssertEqual(buffer, reference)
    }

    func testRoundTripForRatesAndChannels() throws {
        for format in [WAVFormat.speech, WAVFormat(sampleRate: 48_000, channels: 2), WAVFormat(sampleRate: 8_000, channels: 6)] {
            let samples = TestSignals.randomInt16(format.channels * 100, seed: UInt64(format.sampleRate))
            let decoded = try WAVDecoder.decode(try WAVEncoder.encode(samples, format: format))
            XCTAssertEqual(decoded, DecodedWAV(format: format, samples: samples))
        }
    }

    func testSoxReadsWhatTheEncoderWrites() throws {
        let dir = try makeTemporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        for format in [WAVFormat.speech, WAVFormat(sampleRate: 44_100, channels: 2)] {
            let samples = TestSignals.sine(amplitude: 12000, frequency: 440, count: format.channels * 12_345)
            let path = dir.appendingPathComponent("enc-\(format.sampleRate).wav").path
            try Data(WAVEncoder.encode(samples, format: format)).write(to: URL(fileURLWithPath: path))
            XCTAssertEqual(try runTool("soxi", ["-r", path]).trimmingCharacters(in: .whitespacesAndNewlines), "\(format.sampleRate)")
            XCTAssertEqual(try runTool("soxi", ["-c", path]).trimmingCharacters(in: .whitespacesAndNewlines), "\(format.channels)")
            XCTAssertEqual(try runTool("soxi", ["-s", path]).trimmingCharacters(in: .whitespacesAndNewlines), "12345")
            XCTAssertEqual(try runTool("soxi", ["-b", path]).trimmingCharacters(in: .whitespacesAndNewlines), "16")
            // sox converts the file to headerless PCM: the samples must be ours, exactly.
            let raw = dir.appendingPathComponent("enc.raw").path
            try runTool("sox", [path, "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", raw])
            let rawBytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
            XCTAssertEqual(rawBytes, WAVBuilder.samples(samples))
        }
    }

    func testDecoderReadsWhatSoxWrites() throws {
        let dir = try makeTemporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        func rawInput(_ samples: [Int16], channels: Int) throws -> [String] {
            let raw = dir.appendingPathComponent("in-\(channels).raw").path
            try Data(WAVBuilder.samples(samples)).write(to: URL(fileURLWithPath: raw))
            return ["-t", "raw", "-r", "24000", "-c", "\(channels)", "-e", "signed-integer", "-b", "16", "-L", raw]
        }
        let mono = TestSignals.sine(amplitude: 9000, frequency: 300, count: 24_000)

        // Plain PCM: sox writes the canonical layout.
        let plain = dir.appendingPathComponent("plain.wav").path
        try runTool("sox", try rawInput(mono, channels: 1) + [plain])
        XCTAssertEqual(try WAVDecoder.decode(contentsOfFile: plain), DecodedWAV(format: .speech, samples: mono))

        // sox's WAV writer never writes a LIST chunk, so libsndfile adds a LIST/INFO chunk
        // (after the data, where libsndfile puts it) to the file sox wrote.
        let tagged = dir.appendingPathComponent("tagged.wav").path
        try runTool("sndfile-metadata-set", ["--str-comment", "practiced test fixture", "--str-title", "hello", plain, tagged])
        let taggedBytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: tagged)))
        let listAt = taggedBytes.indices.dropLast(8).first { Array(taggedBytes[$0..<($0 + 4)]) == Array("LIST".utf8) }
        XCTAssertNotNil(listAt, "no LIST chunk was written")
        if let listAt { XCTAssertEqual(Array(taggedBytes[(listAt + 8)..<(listAt + 12)]), Array("INFO".utf8)) }
        XCTAssertGreaterThan(taggedBytes.count, WAVEncoder.encodedSize(sampleCount: mono.count))
        XCTAssertEqual(try WAVDecoder.decode(taggedBytes), DecodedWAV(format: .speech, samples: mono))

        // sox writes float with a 'fact' chunk and an 18-byte fmt, 24 and 32 bits as plain PCM
        // (extensible above two channels): each is read as what it is, and PCM16 that went
        // through it comes back exactly.
        for (name, arguments, format) in [("float", ["-e", "floating-point"], SampleFormat.float), ("24bit", ["-b", "24"], .s24_3),
                                          ("32bit", ["-b", "32"], .s32)] {
            let converted = dir.appendingPathComponent("\(name).wav").path
            try runTool("sox", [plain] + arguments + [converted])
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: converted)))
            let layout = try bytes.withUnsafeBytes { try WAVDecoder.parse($0) }
            XCTAssertEqual(layout.format, WAVFormat(sampleRate: 24_000, channels: 1, sampleFormat: format), name)
            XCTAssertEqual(try WAVDecoder.decode(bytes), DecodedWAV(format: .speech, samples: mono), name)
        }

        // 8-bit unsigned PCM, G.711 A-law and µ-law (format tags 1, 6, 7; sox writes the last
        // two with an 18-byte fmt and a 'fact' chunk): each decodes to exactly the PCM16 that
        // sox itself reads from the file. Stereo too, and extensible above two channels.
        for (name, arguments, format) in [("u8", ["-e", "unsigned-integer", "-b", "8"], SampleFormat.u8),
                                          ("alaw", ["-e", "a-law"], .alaw), ("mulaw", ["-e", "mu-law"], .mulaw)] {
            for channels in [1, 2, 3] {
                let source = channels == 1 ? plain : dir.appendingPathComponent("source-\(channels).wav").path
                if channels > 1 { try runTool("sox", try rawInput(TestSignals.randomInt16(channels * 4_001, seed: UInt64(channels)), channels: channels) + [source]) }
                let converted = dir.appendingPathComponent("\(name)-\(channels).wav").path
                try runTool("sox", [source] + arguments + [converted])
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: converted)))
                let layout = try bytes.withUnsafeBytes { try WAVDecoder.parse($0) }
                XCTAssertEqual(layout.format, WAVFormat(sampleRate: 24_000, channels: channels, sampleFormat: format), "\(name) \(channels) ch")
                let soxReads = dir.appendingPathComponent("\(name)-\(channels).raw").path
                try runTool("sox", [converted, "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", soxReads])
                let expected = [UInt8](try Data(contentsOf: URL(fileURLWithPath: soxReads)))
                let decoded = try WAVDecoder.decode(bytes)
                XCTAssertEqual(decoded.format, WAVFormat(sampleRate: 24_000, channels: channels), "\(name) \(channels) ch")
                XCTAssertEqual(decoded.samples.count, layout.frameCount * channels)
                XCTAssertEqual(WAVBuilder.samples(decoded.samples), expected, "\(name) \(channels) ch: not the values sox reads")
                if channels == 1 {
                    // Not silence by accident: the companded tone is near the original.
                    let error = zip(decoded.samples, mono).map { abs(Int($0) - Int($1)) }.max()!
                    // sox dithers on the way down to 8 bits: ±1.5 of its steps at most.
                    XCTAssertLessThan(error, format == .u8 ? 400 : 600, name)
                }
            }
        }

        // More than two channels make sox write WAVE_FORMAT_EXTENSIBLE.
        let three = TestSignals.randomInt16(3 * 5000, seed: 3)
        let extensible = dir.appendingPathComponent("extensible.wav").path
        try runTool("sox", try rawInput(three, channels: 3) + [extensible])
        let extBytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: extensible)))
        XCTAssertEqual(Array(extBytes[20..<22]), [0xFE, 0xFF], "sox did not write an extensible format")
        XCTAssertEqual(try WAVDecoder.decode(extBytes), DecodedWAV(format: WAVFormat(sampleRate: 24_000, channels: 3), samples: three))
    }
}
