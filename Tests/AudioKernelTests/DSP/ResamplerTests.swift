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

    /// The images and aliases of every tone up to 0.8 × Nyquist fall 1.2 × Nyquist or
    /// further out, where the half-band filter was designed for 121 dB (`.medium`) and
    /// 144 dB (`.high`): not one tone's luck (libsoxr gives 120 and 137 dB over the same sweep).
    func testTonesUpTo0Point8OfNyquistLeaveNoImageAbove121Or144DB() throws {
        for (input, output) in [(24_000, 48_000), (24_000, 44_100), (48_000, 24_000)] {
            for (quality, floor) in [(Resampler.Quality.medium, 120.0), (.high, 143.0)] {
                var worst = -Double.infinity
                for fraction in stride(from: 0.5, through: 0.8001, by: 0.03) {
                    let tone = fraction * Double(min(input, output)) / 2
                    let (_, out) = try resampleTone(tone, from: input, to: output, quality: quality)
                    worst = max(worst, Spectrum(out[0], rate: Double(output)).worstSpur(excluding: tone).level)
                }
                print("figures: resampler \(input) → \(output) (\(quality)), tones 0.5 to 0.8 × Nyquist: worst spur \(String(format: "%.1f", worst)) dB")
                XCTAssertLessThanOrEqual(worst, -floor, "\(input) → \(output) \(quality)")
            }
        }
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

/// The stages the resampler is built from, and the chain's bookkeeping, on every kind of
/// ratio: a factor of two alone (up and down), a factor of two and a polyphase stage on
/// either side, the single polyphase stage (equal rates, ratios without an exact stage).
final class ResamplerChainTests: XCTestCase {
    private let ratios = [(24_000, 48_000), (48_000, 24_000), (44_100, 24_000), (24_000, 44_100), (44_100, 48_000), (48_000, 44_100),
                          (8_000, 192_000), (192_000, 8_000), (24_000, 24_000), (44_100, 47_999), (96_000, 24_000), (16_000, 48_000),
                          // What a file may carry: an odd rate whose polyphase stage has 4,000 phases, and
                          // one with none exact (the single interpolated stage), both ways.
                          (8_001, 24_000), (191_999, 24_000), (24_000, 191_999), (11_025, 24_000)]

    /// Runs `frames` of a deterministic noise through `resampler` in blocks of `sizes`
    /// (cycled), checking each call against the promised bounds; returns the output.
    private func run(_ resampler: Resampler, frames: Int, sizes: [Int], file: StaticString = #filePath, line: UInt = #line) -> [Float] {
        let channels = resampler.channels
        var generator = UInt32(12_345)
        let input = (0..<(frames * channels)).map { _ -> Float in
            generator = generator &* 1_664_525 &+ 1_013_904_223
            return Float(Int32(bitPattern: generator)) / Float(Int32.max) * 0.5
        }
        var output: [Float] = []
        var out = [Float](repeating: 0, count: resampler.maximumOutputFrames(forInputFrames: sizes.max()!) * channels)
        var offset = 0, index = 0
        while offset < frames {
            let n = min(sizes[index % sizes.count], frames - offset)
            index += 1
            let made = input[(offset * channels)..<((offset + n) * channels)].withUnsafeBufferPointer { source in
                out.withUnsafeMutableBufferPointer { resampler.process(source, into: $0) }
            }
            XCTAssertGreaterThanOrEqual(made, resampler.minimumOutputFrames(forInputFrames: n), "\(resampler.inputRate) → \(resampler.outputRate), \(n) frames", file: file, line: line)
            XCTAssertLessThanOrEqual(made, resampler.maximumOutputFrames(forInputFrames: n), "\(resampler.inputRate) → \(resampler.outputRate), \(n) frames", file: file, line: line)
            output += out[0..<(made * channels)]
            offset += n
        }
        return output
    }

    /// Any block sizes, odd ones too (a factor-of-two stage keeps an unpaired frame), give
    /// the same output, and every call stays within the promised bounds.
    func testBlockSizesDoNotMatterOnAnyChain() throws {
        for (input, output) in ratios {
            for quality in [Resampler.Quality.medium, .high] {
                let large = run(try Resampler(inputRate: input, outputRate: output, quality: quality, maximumInputFrames: 4_096), frames: 10_000, sizes: [4_096])
                let odd = run(try Resampler(inputRate: input, outputRate: output, quality: quality, maximumInputFrames: 4_096), frames: 10_000, sizes: [1, 7, 480, 3, 1_001, 64, 2])
                XCTAssertEqual(large.count, odd.count, "\(input) → \(output) \(quality)")
                let worst = zip(large, odd).map { abs($0 - $1) }.max() ?? 0
                XCTAssertLessThanOrEqual(worst, 1e-6, "\(input) → \(output) \(quality)")
            }
        }
    }

    /// Three channels keep to themselves through every chain: each comes out as the same
    /// stream resampled alone would.
    func testEveryChannelCountKeepsItsChannelsApart() throws {
        for (input, output) in [(48_000, 24_000), (44_100, 24_000), (24_000, 44_100), (24_000, 48_000)] {
            for channels in [2, 3, 8] {
                let many = try Resampler(inputRate: input, outputRate: output, channels: channels, maximumInputFrames: 480)
                var frames = [Float](repeating: 0, count: 4_800 * channels)
                for frame in 0..<4_800 { for channel in 0..<channels { frames[frame * channels + channel] = Float(sin(Double(frame) * 0.01 * Double(channel + 1))) * 0.5 } }
                var outputs = [[Float]](repeating: [], count: channels)
                var mixed = [Float](repeating: 0, count: many.maximumOutputFrames(forInputFrames: 480) * channels)
                for block in 0..<10 {
                    let n = frames[(block * 480 * channels)..<((block + 1) * 480 * channels)].withUnsafeBufferPointer { source in
                        mixed.withUnsafeMutableBufferPointer { many.process(source, into: $0) }
                    }
                    for frame in 0..<n { for channel in 0..<channels { outputs[channel].append(mixed[frame * channels + channel]) } }
                }
                for channel in 0..<channels {
                    let alone = try Resampler(inputRate: input, outputRate: output, maximumInputFrames: 480)
                    let mono = (0..<4_800).map { frames[$0 * channels + channel] }
                    var single: [Float] = []
                    var out = [Float](repeating: 0, count: alone.maximumOutputFrames(forInputFrames: 480))
                    for block in 0..<10 {
                        let n = mono[(block * 480)..<((block + 1) * 480)].withUnsafeBufferPointer { source in
                            out.withUnsafeMutableBufferPointer { alone.process(source, into: $0) }
                        }
                        single += out[0..<n]
                    }
                    XCTAssertEqual(single.count, outputs[channel].count)
                    let worst = zip(single, outputs[channel]).map { abs($0 - $1) }.max() ?? 0
                    XCTAssertLessThanOrEqual(worst, 1e-6, "\(input) → \(output), \(channels) channels, channel \(channel)")
                }
            }
        }
    }

    /// An impulse comes out where ``Resampler/delay`` says, through every chain.
    func testTheReportedDelayHoldsOnEveryChain() throws {
        for (input, output) in ratios {
            let resampler = try Resampler(inputRate: input, outputRate: output, maximumInputFrames: 8_192)
            var impulse = [Float](repeating: 0, count: 8_192)
            impulse[0] = 1
            var out = [Float](repeating: 0, count: resampler.maximumOutputFrames(forInputFrames: 8_192))
            let n = impulse.withUnsafeBufferPointer { source in out.withUnsafeMutableBufferPointer { resampler.process(source, into: $0) } }
            let peak = (0..<n).max { abs(out[$0]) < abs(out[$1]) }!
            // The peak sample is within one output frame of the true (fractional) delay.
            XCTAssertEqual(Double(peak), resampler.delay, accuracy: 1, "\(input) → \(output)")
        }
    }

    /// A NaN spoils only the outputs whose filters reach it, on every chain.
    func testANaNIsForgottenOnEveryChain() throws {
        for (input, output) in ratios {
            let resampler = try Resampler(inputRate: input, outputRate: output, maximumInputFrames: 1_024)
            var out = [Float](repeating: 0, count: resampler.maximumOutputFrames(forInputFrames: 1_024))
            var spoiled = [Float](repeating: 0, count: 1_024)
            spoiled[500] = .nan
            spoiled[501] = -.infinity
            _ = spoiled.withUnsafeBufferPointer { source in out.withUnsafeMutableBufferPointer { resampler.process(source, into: $0) } }
            let silence = [Float](repeating: 0, count: 1_024)
            var clean = false
            for _ in 0..<8 {
                let n = silence.withUnsafeBufferPointer { source in out.withUnsafeMutableBufferPointer { resampler.process(source, into: $0) } }
                clean = n > 0 && out[0..<n].allSatisfy { $0 == 0 }
                if clean { break }
            }
            XCTAssertTrue(clean, "\(input) → \(output): the spoiled samples left the filter")
        }
    }

    /// The fast FIR algorithm computes the correlation the direct sum does, for any count
    /// and tap count, symmetric or not, over a contiguous input and over every other
    /// float of a line, and finishes it both ways.
    func testTheFastFIRMatchesTheDirectSum() {
        var generator = UInt32(7)
        func next() -> Float {
            generator = generator &* 1_664_525 &+ 1_013_904_223
            return Float(Int32(bitPattern: generator)) / Float(Int32.max)
        }
        // Symmetric taps too, as the half-band filters' are.
        for (length, symmetric) in [(4, false), (9, false), (72, false), (92, false), (93, false), (40, true), (76, true), (92, true)] {
            var taps = (0..<length).map { _ in next() * 0.1 }
            if symmetric { taps = Array(taps[0..<(length / 2)] + taps[0..<(length / 2)].reversed()) }
            let fir = FastFIR(taps: taps, maximumCount: 600)
            for count in [1, 5, 16, 17, 63, 480, 600] {
                let inputs = count + fir.length + FastFIR.slack
                // Every other float of `line` is the input; the floats between are noise
                // the filter must not read.
                let line = (0..<(2 * inputs)).map { _ in next() }
                let centre = (0..<(2 * count)).map { _ in next() }
                func direct(_ j: Int, _ step: Int) -> Double {
                    (0..<length).reduce(0.0) { $0 + Double(taps[$1]) * Double(line[step * (j + $1)]) }
                }
                for step in [1, 2] {
                    var halves = [Float](repeating: .nan, count: count)
                    var pairs = [Float](repeating: .nan, count: 2 * count)
                    line.withUnsafeBufferPointer { u in
                        centre.withUnsafeBufferPointer { c in
                            halves.withUnsafeMutableBufferPointer { y in
                                fir.run(u.baseAddress!, everyOther: step == 2, count: count, finish: .plusHalf(everyOther: c.baseAddress!, into: y.baseAddress!))
                            }
                            pairs.withUnsafeMutableBufferPointer { y in
                                fir.run(u.baseAddress!, everyOther: step == 2, count: count, finish: .after(c.baseAddress!, into: y.baseAddress!))
                            }
                        }
                    }
                    for j in 0..<count {
                        let sum = direct(j, step)
                        XCTAssertEqual(Double(halves[j]), sum + 0.5 * Double(centre[2 * j]), accuracy: 1e-5, "length \(length), count \(count), step \(step), output \(j)")
                        XCTAssertEqual(pairs[2 * j], centre[j], "length \(length), count \(count), step \(step), output \(j)")
                        XCTAssertEqual(Double(pairs[2 * j + 1]), sum, accuracy: 1e-5, "length \(length), count \(count), step \(step), output \(j)")
                    }
                }
            }
        }
    }
}
