import AudioKernel
import Foundation
import TestSupport
import XCTest

/// The AAC-LC decoder against ffmpeg's: files ffmpeg's own encoder makes (long and short
/// windows, TNS, M/S, intensity stereo, PNS, at 8 to 48 kHz, mono and stereo) decode to
/// ffmpeg's PCM16 within one step, to the edit list's exact length.
final class AACDecoderTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory()
        addTeardownBlock { [directory] in try? FileManager.default.removeItem(at: directory!) }
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The repository's recorded speech, resampled by ffmpeg to `rate` and `channels` (the
    /// second channel delayed and filtered, so that the two differ).
    private func speech(rate: Int, channels: Int) throws -> String {
        let hello = AACEncoderTests.hello
        let out = path("speech-\(rate)-\(channels).wav")
        var arguments = ["-v", "error", "-y", "-i", hello]
        if channels == 2 {
            arguments += ["-filter_complex", "[0:a]asplit[a][b];[b]adelay=7,highpass=f=900,volume=1.5[c];[a][c]join=inputs=2:channel_layout=stereo"]
        }
        arguments += ["-ar", "\(rate)", "-ac", "\(channels)", "-c:a", "pcm_s16le", out]
        try runTool("ffmpeg", arguments)
        return out
    }

    /// A click train over quiet noise: transients that make an encoder switch to short windows.
    private func clicks(rate: Int) throws -> String {
        let out = path("clicks-\(rate).wav")
        let format = WAVFormat(sampleRate: rate, channels: 1, sampleFormat: .s16)
        var seed: UInt32 = 1
        let bytes = WAVFixture.file(format, frames: rate * 2) { i, _ in
            seed = seed &* 1_103_515_245 &+ 12_345
            let noise = (Double(seed >> 16) / 32_768 - 1) * 0.01
            let phase = i % (rate / 4)
            return phase < 40 ? 0.8 * sin(Double(phase) * 0.7) + noise : noise
        }
        XCTAssertTrue(FileManager.default.createFile(atPath: out, contents: Data(bytes)))
        return out
    }

    /// Decodes `m4a` with ours and ffmpeg's; asserts the same length (ours: the edit list's;
    /// ffmpeg 5.1's command line keeps the last frame's padding) and at most one step apart.
    /// ffmpeg's files give the edit's length in milliseconds (its movie timescale is 1000):
    /// within `rate / 1000` of the input's.
    @discardableResult
    private func assertMatchesFFmpeg(_ m4a: String, frames expected: Int, channels: Int, _ label: String,
                                     file: StaticString = #filePath, line: UInt = #line) throws -> (samples: [Int16], tools: AACDecoder.Tools) {
        let decoder = try MPEG4AudioDecoder(path: m4a)
        XCTAssertLessThanOrEqual(abs(decoder.frameCount - expected), decoder.sampleRate / 1_000, label, file: file, line: line)
        let frames = decoder.frameCount
        let ours = try decoder.readAll()
        let theirs = try FFmpegReference.pcm(m4a, file: file, line: line)
        XCTAssertEqual(ours.count, frames * channels, label, file: file, line: line)
        XCTAssertGreaterThanOrEqual(theirs.count, ours.count, label, file: file, line: line)
        let (worst, at) = FFmpegReference.largestDifference(ours, theirs)
        XCTAssertLessThanOrEqual(worst, 1, "\(label): \(worst) steps apart at sample \(at) (frame \(at / channels / 1024))", file: file, line: line)
        XCTAssertGreaterThan(ours.map { abs(Int($0)) }.max() ?? 0, 1_000, "\(label): not silence", file: file, line: line)
        return (ours, decoder.toolsSeen)
    }

    private func frames(ofWAV wav: String, channels: Int) throws -> Int {
        try WAVDecoder.decode(contentsOfFile: wav).samples.count / channels
    }

    func testFFmpegsFilesDecodeWithinOneStepOfFFmpeg() throws {
        // ffmpeg's encoder codes noise bands (PNS), intensity stereo, M/S and TNS by default,
        // and switches to short windows on the clicks.
        var tools: AACDecoder.Tools = []
        for (rate, channels, bitRate) in [(24_000, 1, "48k"), (24_000, 1, "16k"), (48_000, 2, "96k"), (44_100, 2, "32k"),
                                          (16_000, 1, "24k"), (32_000, 2, "64k"), (8_000, 1, "16k")] {
            let wav = try speech(rate: rate, channels: channels)
            let m4a = wav + ".\(bitRate).m4a"
            try runTool("ffmpeg", ["-v", "error", "-y", "-i", wav, "-c:a", "aac", "-b:a", bitRate, m4a])
            tools.formUnion(try assertMatchesFFmpeg(m4a, frames: try frames(ofWAV: wav, channels: channels), channels: channels, "speech \(rate) Hz \(channels) ch \(bitRate)").tools)
        }
        for rate in [24_000, 48_000] {
            let wav = try clicks(rate: rate)
            let m4a = wav + ".m4a"
            try runTool("ffmpeg", ["-v", "error", "-y", "-i", wav, "-c:a", "aac", "-b:a", "64k", m4a])
            tools.formUnion(try assertMatchesFFmpeg(m4a, frames: rate * 2, channels: 1, "clicks \(rate) Hz").tools)
        }
        let expected: AACDecoder.Tools = [.shortWindows, .transitionWindows, .temporalNoiseShaping, .perceptualNoise, .midSide, .intensity, .escapes]
        XCTAssertTrue(tools.isSuperset(of: expected), "the files used \(tools); wanted \(expected)")
    }

    /// Pulse data (4.6.3.3), which neither our encoder nor ffmpeg's writes, and which sends a
    /// channel through the decoder's two-pass path (the spectrum dequantized after the pulses
    /// are added, not as it is read): a frame built bit by bit, with one pulse on a non-zero
    /// value and one on a zero, decodes within one step of ffmpeg's decode of the same frames
    /// in ADTS, and differs from the frame without its pulses.
    func testPulsesDecodeAsFFmpegDecodesThem() throws {
        func frame(pulses: Bool) -> [UInt8] {
            var bits = TestBitWriter()
            bits.put(0, 3); bits.put(0, 4)                   // SCE, tag 0
            bits.put(170, 8)                                 // global_gain
            bits.put(0, 1); bits.put(0, 2); bits.put(0, 1)   // ics_info: long, sine window
            bits.put(2, 6); bits.put(0, 1)                   // max_sfb 2, no prediction
            bits.put(3, 4); bits.put(2, 5)                   // one section: book 3 over 2 bands
            bits.put(0, 1); bits.put(0, 1)                   // scalefactor deltas 0 (code "0")
            bits.put(pulses ? 1 : 0, 1)
            if pulses {
                bits.put(1, 2); bits.put(0, 6)               // two pulses from band 0
                bits.put(2, 5); bits.put(5, 4)               // k = 2 (q = 2): +5
                bits.put(4, 5); bits.put(3, 4)               // k = 6 (q = 0): -3
            }
            bits.put(0, 1); bits.put(0, 1)                   // no TNS, no gain control
            bits.put(0b11_1110_1011, 10); bits.put(0b01, 2)  // band 0: (1, 0, 2, 0), signs + -
            bits.put(0b1010, 4); bits.put(1, 1)              // band 1: (0, 1, 0, 0), sign -
            bits.put(7, 3)                                   // END
            return bits.bytes()
        }
        let config = AudioSpecificConfig(sampleRate: 24_000, channelConfiguration: 1)
        func ours(_ payload: [UInt8], count: Int) throws -> (pcm: [Int16], tools: AACDecoder.Tools) {
            let decoder = try AACDecoder(config: config)
            var pcm = [Int16](repeating: 0, count: count * 1_024)
            for i in 0..<count {
                try pcm.withUnsafeMutableBufferPointer { out in
                    try payload.withUnsafeBytes { try decoder.decode($0, into: out.baseAddress! + i * 1_024) }
                }
            }
            return (pcm, decoder.toolsSeen)
        }
        let withPulses = frame(pulses: true), count = 8
        var adts: [UInt8] = []
        for _ in 0..<count {
            let length = withPulses.count + 7
            // ADTS: MPEG-4, no CRC, LC, 24 kHz (index 6), mono, buffer fullness 0x7FF.
            adts += [0xFF, 0xF1, 0x01 << 6 | 6 << 2, 1 << 6 | UInt8(length >> 11),
                     UInt8((length >> 3) & 0xFF), UInt8((length & 7) << 5 | 0x1F), 0xFC]
            adts += withPulses
        }
        let path = directory.appendingPathComponent("pulses.aac").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(adts)))
        let theirs = try FFmpegReference.pcm(path)
        let (decoded, tools) = try ours(withPulses, count: count)
        XCTAssertTrue(tools.contains(.pulses))
        XCTAssertEqual(theirs.count, decoded.count)
        let (worst, at) = FFmpegReference.largestDifference(decoded, theirs)
        XCTAssertLessThanOrEqual(worst, 1, "\(worst) steps apart at sample \(at)")
        XCTAssertGreaterThan(decoded.map { abs(Int($0)) }.max() ?? 0, 1_000, "not silence")
        let without = try ours(frame(pulses: false), count: count).pcm
        XCTAssertGreaterThan(FFmpegReference.largestDifference(decoded, without).steps, 100, "the pulses changed nothing")
    }
}

/// Hostile frames: each a clear ``AACError``, never a read outside the frame, and the next
/// good frame decodes as if nothing had happened.
final class AACDecoderHostileFrameTests: XCTestCase {
    /// A few frames of our own speech at 24 kHz mono 48 kbit/s.
    private func frames() throws -> [[UInt8]] {
        let speech = try WAVDecoder.decode(contentsOfFile: AACEncoderTests.hello).samples
        let encoder = try AACEncoder(sampleRate: 24_000, channels: 1, bitRate: 48_000)
        var frames: [[UInt8]] = []
        speech.withUnsafeBufferPointer { encoder.encode($0.baseAddress!, frames: 24_000) { frames.append(Array($0)) } }
        return frames
    }

    private func decode(_ decoder: AACDecoder, _ frame: [UInt8]) -> (Result<[Int16], AACError>) {
        let pcm = UnsafeMutablePointer<Int16>.allocate(capacity: 1_024 * decoder.channels)
        defer { pcm.deallocate() }
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(frame.count, 1), alignment: 1)
        defer { bytes.deallocate() }
        bytes.copyBytes(from: frame)
        do throws(AACError) {
            try decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<frame.count]), into: pcm)
            return .success(Array(UnsafeBufferPointer(start: pcm, count: 1_024 * decoder.channels)))
        } catch {
            return .failure(error)
        }
    }

    func testEveryHostileFrameIsAClearErrorAndTheNextFrameDecodes() throws {
        let good = try frames()
        XCTAssertGreaterThan(good.count, 10)
        let config = AudioSpecificConfig(sampleRate: 24_000, channelConfiguration: 1)
        var seed: UInt64 = 99
        func random() -> UInt8 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: seed >> 33)
        }
        var hostile: [(String, [UInt8])] = [
            ("empty", []),
            ("too large for the decoder's buffer", [UInt8](repeating: 0xFF, count: 6_144 / 8 + 1)),
            ("a coupling channel element", [0b0100_0000, 0, 0, 0]),
            ("a channel pair in a mono stream", [0b0010_0000] + [UInt8](repeating: 0, count: 8)),
            ("no END element", [0xC0]),  // a fill element (id 6) with a count past the frame
            ("random bytes", (0..<300).map { _ in random() }),
        ]
        // Every cut of a real frame: Huffman codes and escapes running past its end.
        let frame = good[8]
        for cut in stride(from: 1, to: frame.count, by: max(1, frame.count / 40)) {
            hostile.append(("frame 8 cut to \(cut) of \(frame.count) bytes", Array(frame[0..<cut])))
        }
        // Flipped bits: sections past max_sfb, codebook 12, escapes longer than 13 bits, ...
        for bit in stride(from: 3, to: frame.count * 8, by: 7) {
            var flipped = frame
            flipped[bit / 8] ^= 0x80 >> UInt8(bit % 8)
            hostile.append(("frame 8 with bit \(bit) flipped", flipped))
        }
        let reference = try AACDecoder(config: config)
        var expected: [[Int16]] = []
        for frame in good { expected.append(try decode(reference, frame).get()) }

        var errors = 0
        for (index, (name, bytes)) in hostile.enumerated() {
            // A fresh decoder that has decoded the first frames, then the hostile one, then
            // the next good one: the good one decodes as it does in an untouched decoder,
            // but for the overlap the hostile frame may have left (a frame that decodes is
            // legal AAC, whatever it sounds like).
            let decoder = try AACDecoder(config: config)
            for frame in good[0..<3] { _ = decode(decoder, frame) }
            switch decode(decoder, bytes) {
            case .failure(let error):
                errors += 1
                XCTAssertFalse(error.description.isEmpty, name)
                // The failed frame left the overlap as it was: the next frame is exact.
                let next = try decode(decoder, good[3]).get()
                XCTAssertEqual(next, expected[3], "\(name) (#\(index)): the frame after a refused one")
            case .success:
                XCTAssertNoThrow(try decode(decoder, good[3]).get(), name)
            }
        }
        XCTAssertGreaterThan(errors, hostile.count / 2, "most hostile frames are refused")
        if case .failure(let error) = decode(reference, [0b0100_0000, 0, 0, 0]) {
            XCTAssertEqual(error, .unsupported("coupling channel elements"))
        } else {
            XCTFail("a coupling channel element decoded")
        }
    }
}

/// Bits most significant first, for frames built by hand.
private struct TestBitWriter {
    private var bits: [Bool] = []
    mutating func put(_ value: Int, _ count: Int) {
        for i in stride(from: count - 1, through: 0, by: -1) { bits.append(value >> i & 1 == 1) }
    }
    func bytes() -> [UInt8] {
        stride(from: 0, to: bits.count, by: 8).map { start in
            (0..<8).reduce(UInt8(0)) { byte, i in byte << 1 | (start + i < bits.count && bits[start + i] ? 1 : 0) }
        }
    }
}
