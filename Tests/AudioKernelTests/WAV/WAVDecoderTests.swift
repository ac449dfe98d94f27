@testable import AudioKernel
import XCTest

final class WAVDecoderTests: XCTestCase {
    let samples: [Int16] = [0, 1, -1, .max, .min, 1234, -4321, 7]

    func testReadsCanonicalFileWrittenByEncoder() throws {
        let file = try WAVEncoder.encode(samples, format: .speech)
        let decoded = try WAVDecoder.decode(file)
        XCTAssertEqual(decoded.format, .speech)
        XCTAssertEqual(decoded.samples, samples)
        let layout = try file.withUnsafeBytes { try WAVDecoder.parse($0) }
        XCTAssertEqual(layout.dataOffset, 44)
        XCTAssertFalse(layout.isStreamed)
    }

    func testSkipsListFactAndUnknownChunksHonouringPadBytes() throws {
        let file = WAVBuilder.file([
            ("LIST", Array("INFOISFT\u{5}\0\0\0demo\0".utf8)),  // odd-sized: pad byte follows
            ("fmt ", WAVBuilder.pcmFormat()),
            ("fact", WAVBuilder.u32(8)),
            ("junk", [1, 2, 3]),
            ("data", WAVBuilder.samples(samples)),
            ("LIST", Array("INFO".utf8)),
        ])
        let decoded = try WAVDecoder.decode(file)
        XCTAssertEqual(decoded.samples, samples)
        let layout = try file.withUnsafeBytes { try WAVDecoder.parse($0) }
        XCTAssertNotEqual(layout.dataOffset, 44, "the data chunk is found by walking, not assumed at 44")
    }

    func testReadsExtensiblePCM() throws {
        let stereo: [Int16] = [1, 2, 3, 4, 5, 6]
        let file = WAVBuilder.file([("fmt ", WAVBuilder.extensibleFormat(channels: 2, rate: 48_000)),
                                    ("data", WAVBuilder.samples(stereo))])
        let decoded = try WAVDecoder.decode(file)
        XCTAssertEqual(decoded.format, WAVFormat(sampleRate: 48_000, channels: 2))
        XCTAssertEqual(decoded.samples, stereo)
    }

    func testStreamedSizesTakeDataToEndOfFile() throws {
        for (riff, data) in [(UInt32.max, UInt32.max), (0, 0), (100, UInt32.max)] {
            let file = WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat()), ("data", WAVBuilder.samples(samples) + [0x55])],
                                       riffSize: riff, declaredSizes: ["data": data], pad: false)
            let layout = try file.withUnsafeBytes { try WAVDecoder.parse($0) }
            XCTAssertTrue(layout.isStreamed)
            // The stray odd byte at the end is not a whole frame and is dropped.
            XCTAssertEqual(try WAVDecoder.decode(file).samples, samples, "riff \(riff) data \(data)")
        }
    }

    func testFormatAfterDataIsAccepted() throws {
        let file = WAVBuilder.file([("data", WAVBuilder.samples(samples)), ("fmt ", WAVBuilder.pcmFormat())])
        XCTAssertEqual(try WAVDecoder.decode(file).samples, samples)
    }

    func testEmptyDataChunkDecodesToNoSamples() throws {
        let file = WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat()), ("data", [])])
        XCTAssertEqual(try WAVDecoder.decode(file).samples, [])
    }

    func testTypedErrors() {
        let fmt = WAVBuilder.pcmFormat()
        let data = WAVBuilder.samples(samples)
        let cases: [(String, [UInt8], WAVError)] = [
            ("empty", [], .truncatedHeader(byteCount: 0)),
            ("short", Array("RIFF".utf8), .truncatedHeader(byteCount: 4)),
            ("not riff", Array("RIFX\0\0\0\0WAVE".utf8), .notRIFF),
            ("not wave", Array("RIFF\0\0\0\0AVI ".utf8), .notWAVE),
            ("no chunks", Array("RIFF\u{4}\0\0\0WAVE".utf8), .missingDataChunk),
            ("half chunk header", Array("RIFF\u{4}\0\0\0WAVEfmt ".utf8), .truncatedChunkHeader(offset: 12)),
            ("no fmt", WAVBuilder.file([("data", data)]), .missingFormatChunk),
            ("no data", WAVBuilder.file([("fmt ", fmt)]), .missingDataChunk),
            ("data past end", WAVBuilder.file([("fmt ", fmt), ("data", data)], declaredSizes: ["data": 1000]),
             .chunkPastEnd(id: "data", offset: 36, declaredSize: 1000, available: 16)),
            ("list past end", WAVBuilder.file([("LIST", [1, 2])], declaredSizes: ["LIST": 99]),
             .chunkPastEnd(id: "LIST", offset: 12, declaredSize: 99, available: 2)),
            ("short fmt", WAVBuilder.file([("fmt ", Array(fmt[0..<14])), ("data", data)]), .formatChunkTooShort(size: 14)),
            ("zero channels", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(channels: 0, blockAlign: 2)), ("data", data)]), .zeroChannels),
            ("zero rate", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(rate: 0)), ("data", data)]), .zeroSampleRate),
            ("64-bit float", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(bits: 64, tag: 3, blockAlign: 8)), ("data", data)]),
             .unsupportedBitDepth(64)),
            ("16-bit a-law", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(bits: 16, tag: 6)), ("data", data)]), .unsupportedBitDepth(16)),
            ("ima adpcm", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(bits: 4, tag: 0x11, blockAlign: 256)), ("data", data)]),
             .unsupportedEncoding(formatTag: 0x11)),
            ("mp3", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(bits: 0, tag: 0x55)), ("data", data)]), .unsupportedEncoding(formatTag: 0x55)),
            ("12 bit", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(bits: 12)), ("data", data)]), .unsupportedBitDepth(12)),
            ("8 bit, 16-bit block align", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(bits: 8, blockAlign: 2)), ("data", data)]),
             .inconsistentBlockAlign(declared: 2, expected: 1)),
            ("24 bit, 16-bit block align", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(bits: 24, blockAlign: 2)), ("data", data)]),
             .inconsistentBlockAlign(declared: 2, expected: 3)),
            ("extensible adpcm", WAVBuilder.file([("fmt ", WAVBuilder.extensibleFormat(bits: 4, subformat: 2)), ("data", data)]),
             .unsupportedEncoding(formatTag: 2)),
            ("short extensible", WAVBuilder.file([("fmt ", Array(WAVBuilder.extensibleFormat()[0..<24])), ("data", data)]),
             .formatChunkTooShort(size: 24)),
            ("bad block align", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(blockAlign: 3)), ("data", data)]),
             .inconsistentBlockAlign(declared: 3, expected: 2)),
            ("too many channels", WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat(channels: 1000)), ("data", data)]), .tooManyChannels(1000)),
            ("streamed data before fmt", WAVBuilder.file([("data", data)], declaredSizes: ["data": .max]), .dataBeforeFormat),
        ]
        for (name, bytes, expected) in cases {
            XCTAssertThrowsError(try WAVDecoder.decode(bytes), name) { error in
                XCTAssertEqual(error as? WAVError, expected, name)
                XCTAssertFalse("\(error)".isEmpty)
            }
        }
    }

    func testEveryTruncationAndCorruptionFailsCleanly() throws {
        // No prefix or single-byte corruption of a file may trap or read out of bounds; each
        // either decodes consistently or throws a WAVError.
        let file = WAVBuilder.file([("LIST", Array("INFOabc".utf8)), ("fmt ", WAVBuilder.extensibleFormat()),
                                    ("data", WAVBuilder.samples(samples))])
        for end in 0...file.count {
            let prefix = Array(file[..<end])
            if let decoded = try? WAVDecoder.decode(prefix) {
                XCTAssertLessThanOrEqual(decoded.samples.count * 2, end)
            }
        }
        var g = SeededGenerator(seed: 77)
        for _ in 0..<5000 {
            var mutated = file
            for _ in 0..<Int.random(in: 1...4, using: &g) {
                mutated[Int.random(in: 0..<mutated.count, using: &g)] = UInt8.random(in: 0...255, using: &g)
            }
            if let decoded = try? WAVDecoder.decode(mutated) {
                XCTAssertLessThanOrEqual(decoded.samples.count * 2, mutated.count)
            }
        }
    }

    func testMisalignedBufferDecodes() throws {
        // A file image that starts at an odd address still decodes (samples are copied bytewise).
        let file = [0xAA] + (try WAVEncoder.encode(samples))
        let decoded = try file.withUnsafeBytes { raw in
            try WAVDecoder.decode(UnsafeRawBufferPointer(rebasing: raw[1...]))
        }
        XCTAssertEqual(decoded.samples, samples)
    }

    func testFuzzerFindingsStayFixed() throws {
        // Inputs kept from fuzzing runs live in Fixtures/wav-fuzz; each must fail cleanly or decode.
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/wav-fuzz")
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        XCTAssertGreaterThan(files.count, 10, "the kept fuzz inputs are missing")
        var decodedCount = 0
        for url in files {
            let bytes = [UInt8](try Data(contentsOf: url))
            if let decoded = try? WAVDecoder.decode(bytes) {
                XCTAssertLessThanOrEqual(decoded.samples.count * 2, bytes.count, url.lastPathComponent)
                // The speech gate on the file measures what the decoder reads (4e07a775: a
                // 32-bit file was measured as if it held PCM16).
                let gate = SpeechGate()
                XCTAssertEqual(try gate.holdsSpeech(wav: bytes), gate.holdsSpeech(decoded.samples), url.lastPathComponent)
                decodedCount += 1
            }
        }
        // The corpus holds both kinds: inputs that decode and inputs that are rejected.
        XCTAssertGreaterThan(decodedCount, 0)
        XCTAssertLessThan(decodedCount, files.count)
    }
}
