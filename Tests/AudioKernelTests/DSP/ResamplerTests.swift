@testable import AudioKernel
import AudioMeasurement
import Foundation
import XCTest

/// The resampler's quality, measured by a DFT of what it makes of sine tones: passband
/// flatness, the level of every image and alias, and THD+N through a round trip.
final class ResamplerTests: XCTestCase {
    /// Resamples `seconds` of a tone at `frequency` Hz (amplitude 0.5), in blocks of
    /// `block` frames, and returns the output after the filter's delay and warm-up.
    private func resampleTone(_ frequency: Double, from inputRate: Int, to outputRate: Int, channels: Int = 1, quality: Resampler.Quality = .medium,
                              frames outputFrames: Int = 16_384, block: Int = 480) throws -> (resampler: Resampler, output: [[Double]]) {
        let resampler = try Resampler(inputRate: inputRate, outputRate: outputRate, channels: channels, quality: quality, maximumInputFrames: block)
        let skip = Int(resampler.delay.rounded(.up)) * 2 + 64
        let wanted = skip + outputFrames
        var output = [[Double]](repeating: [], count: channels)
        var produced = [Float](repeating: 0, count: resampler.maximumOutputFrames(forInputFrames: block) * channels)
        var input = [Float](repeating: 0, count: block * channels)
        var frame = 0
        while output[0].count < wanted {
            for i in 0..<block {
                let value = Float(0.5 * sin(2 * Double.pi * frequency * Double(frame + i) / Double(inputRate)))
                for channel in 0..<channels { input[i * channels + channel] = channel == 0 ? value : -value }
            }
            frame += block
            let n = input.withUnsafeBufferPointer { source in produced.withUnsafeMutableBufferPointer { resampler.process(source, into: $0) } }
            for i in 0..<n { for channel in 0..<channels { output[channel].append(Double(produced[i * channels + channel])) } }
        }
        return (resampler, output.map { Array($0[skip..<(skip + outputFrames)]) })
    }

    func testPassbandIsFlatTo0Point05DBUpTo0Point9OfTheLowerNyquist() throws {
        for (input, output) in [(24_000, 48_000), (48_000, 24_000), (44_100, 24_000), (24_000, 44_100)] {
            let nyquist = Double(min(input, output)) / 2
            var gains: [Double] = []
            for fraction in stride(from: 0.05, through: 0.9, by: 0.05) {
                let (_, out) = try resampleTone(fraction * nyquist, from: input, to: output)
                let spectrum = Spectrum(out[0], rate: Double(output))
                gains.append(20 * log10(spectrum.amplitude(at: fraction * nyquist) / 0.5))
            }
            let ripple = gains.max()! - gains.min()!
            print("figures: resampler \(input) → \(output): passband ripple \(String(format: "%.5f", ripple)) dB to 0.9 × Nyquist")
            XCTAssertLessThanOrEqual(ripple, 0.05, "\(input) → \(output): gains \(gains)")
            XCTAssertLessThanOrEqual(gains.map(abs).max()!, 0.05, "\(input) → \(output)")
        }
    }

    /// A tone in the passband; everything else in the output is an image (upsampling), an
    /// alias (downsampling) or noise, and must stay 100 dB under it (125 dB at `.high`).
    func testEveryImageAndAliasIsAtLeast100DBDown() throws {
        let cases: [(Int, Int, Double, Resampler.Quality, Double)] = [
            (24_000, 48_000, 10_000, .medium, 100), (48_000, 24_000, 1_000, .medium, 100), (44_100, 24_000, 9_000, .medium, 100),
            (24_000, 44_100, 10_500, .medium, 100), (8_000, 192_000, 3_000, .medium, 100), (192_000, 8_000, 3_500, .medium, 100),
            (44_100, 48_000, 19_000, .medium, 100), (24_000, 48_000, 10_000, .high, 125), (44_100, 47_999, 15_000, .medium, 100),
        ]
        for (input, output, tone, quality, floor) in cases {
            let (_, out) = try resampleTone(tone, from: input, to: output, quality: quality)
            let spectrum = Spectrum(out[0], rate: Double(output))
            let worst = spectrum.worstSpur(excluding: tone)
            print("figures: resampler \(input) → \(output) (\(quality)), \(Int(tone)) Hz: worst spur \(String(format: "%.1f", worst.level)) dB at \(Int(worst.frequency)) Hz")
            XCTAssertLessThanOrEqual(worst.level, -floor, "\(input) → \(output), \(tone) Hz: \(worst.level) dB at \(worst.frequency) Hz")
        }
        // Downsampling: a tone above the new Nyquist (past the transition band) is gone.
        let (_, out) = try resampleTone(14_000, from: 48_000, to: 24_000)
        let level = 20 * log10(out[0].map(abs).max()! / 0.5)
        print("figures: resampler 48 → 24 kHz, 14 kHz in: \(String(format: "%.1f", level)) dB out")
        XCTAssertLessThanOrEqual(level, -100, "an alias of 14 kHz at 24 kHz")
    }

    func testARoundTripThrough48KHzKeepsTHDPlusNoiseUnderMinus96DB() throws {
        let up = try Resampler(inputRate: 24_000, outputRate: 48_000, maximumInputFrames: 480)
        let down = try Resampler(inputRate: 48_000, outputRate: 24_000, maximumInputFrames: 2_048)
        var result: [Double] = []
        var middle = [Float](repeating: 0, count: up.maximumOutputFrames(forInputFrames: 480))
        var last = [Float](repeating: 0, count: down.maximumOutputFrames(forInputFrames: middle.count))
        var frame = 0
        let frequency = 1_000.0
        while result.count < 16_384 + 1_000 {
            let block = (0..<480).map { Float(0.5 * sin(2 * Double.pi * frequency * Double(frame + $0) / 24_000)) }
            frame += 480
            let n = block.withUnsafeBufferPointer { source in middle.withUnsafeMutableBufferPointer { up.process(source, into: $0) } }
            let m = middle.withUnsafeBufferPointer { source in
                last.withUnsafeMutableBufferPointer { down.process(UnsafeBufferPointer(rebasing: source[0..<n]), into: $0) }
            }
            result += last[0..<m].map(Double.init)
        }
        let spectrum = Spectrum(Array(result[1_000..<(1_000 + 16_384)]), rate: 24_000)
        let thdn = spectrum.thdPlusNoise(fundamental: frequency)
        print("figures: resampler 24 → 48 → 24 kHz, 1 kHz: THD+N \(String(format: "%.1f", thdn)) dB")
        XCTAssertLessThanOrEqual(thdn, -96, "THD+N \(thdn) dB")
    }

    func testChannelsStayApartAndBlockSizesDoNotMatter() throws {
        let (_, stereo) = try resampleTone(1_000, from: 44_100, to: 48_000, channels: 2, block: 441)
        for i in 0..<stereo[0].count { XCTAssertEqual(stereo[0][i], -stereo[1][i], accuracy: 1e-6) }
        let (_, small) = try resampleTone(1_000, from: 44_100, to: 48_000, channels: 1, block: 7)
        let (_, large) = try resampleTone(1_000, from: 44_100, to: 48_000, channels: 1, block: 4_410)
        XCTAssertEqual(small[0].count, large[0].count)
        for i in 0..<small[0].count { XCTAssertEqual(small[0][i], large[0][i], accuracy: 1e-6, "frame \(i)") }
    }

    func testTheReportedDelayIsWhereAnImpulseComesOut() throws {
        for (input, output) in [(24_000, 48_000), (48_000, 24_000), (24_000, 24_000)] {
            let resampler = try Resampler(inputRate: input, outputRate: output, maximumInputFrames: 4_096)
            var impulse = [Float](repeating: 0, count: 4_096)
            impulse[0] = 1
            var out = [Float](repeating: 0, count: resampler.maximumOutputFrames(forInputFrames: 4_096))
            let n = impulse.withUnsafeBufferPointer { source in out.withUnsafeMutableBufferPointer { resampler.process(source, into: $0) } }
            let peak = (0..<n).max { abs(out[$0]) < abs(out[$1]) }!
            XCTAssertEqual(Double(peak), resampler.delay, accuracy: 1, "\(input) → \(output)")
        }
    }

    /// A NaN or an infinity from a decoder spoils only the outputs whose filter spans it;
    /// nothing traps, and the stream is clean again one filter length later.
    func testANaNOrInfinitySpoilsOnlyTheFilterLength() throws {
        let resampler = try Resampler(inputRate: 44_100, outputRate: 48_000, maximumInputFrames: 441)
        var out = [Float](repeating: 0, count: resampler.maximumOutputFrames(forInputFrames: 441))
        var spoiled = [Float](repeating: 0, count: 441)
        spoiled[100] = .nan
        spoiled[200] = .infinity
        _ = spoiled.withUnsafeBufferPointer { source in out.withUnsafeMutableBufferPointer { resampler.process(source, into: $0) } }
        let silence = [Float](repeating: 0, count: 441)
        var clean = false
        for _ in 0..<20 {
            let n = silence.withUnsafeBufferPointer { source in out.withUnsafeMutableBufferPointer { resampler.process(source, into: $0) } }
            clean = out[0..<n].allSatisfy { $0 == 0 }
            if clean { break }
        }
        XCTAssertTrue(clean, "the spoiled samples left the filter")
    }

    func testRatesOutsideTheRangeAreRefused() {
        XCTAssertThrowsError(try Resampler(inputRate: 7_999, outputRate: 48_000))
        XCTAssertThrowsError(try Resampler(inputRate: 48_000, outputRate: 384_000))
        XCTAssertThrowsError(try Resampler(inputRate: 48_000, outputRate: 24_000, channels: 9))
    }
}
