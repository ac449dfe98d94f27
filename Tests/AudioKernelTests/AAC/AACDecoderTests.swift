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
        let hello = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../samples/hello.wav").standardized.path
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

    private func ffmpegPCM(_ file: String) throws -> [Int16] {
        let raw = file + ".raw"
        try runTool("ffmpeg", ["-v", "warning", "-y", "-i", file, "-f", "s16le", "-c:a", "pcm_s16le", raw])
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
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
        let theirs = try ffmpegPCM(m4a)
        XCTAssertEqual(ours.count, frames * channels, label, file: file, line: line)
        XCTAssertGreaterThanOrEqual(theirs.count, ours.count, label, file: file, line: line)
        var worst = 0, at = 0
        for i in 0..<min(ours.count, theirs.count) {
            let d = abs(Int(ours[i]) - Int(theirs[i]))
            if d > worst { worst = d; at = i }
        }
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
}
