@testable import AudioKernel
import TestSupport
import XCTest

/// The streaming WSOLA: exact at 1.0, the length the rate says, the same output however the
/// input is chunked, the pitch of recorded voices kept, and every bad rate refused.
final class TimeStretcherTests: XCTestCase {
    /// `input` through a stretcher at `rate` in chunks of `chunk`, flushed.
    private func stretched(_ input: [Float], rate: Double, chunk: Int = 240, rates: [(at: Int, rate: Double)] = []) throws -> [Float] {
        let stretcher = try TimeStretcher(sampleRate: 24_000, rate: rate, maximumInputFrames: chunk)
        var out = [Float](repeating: 0, count: stretcher.maximumOutputFrames(forInputFrames: chunk))
        var result: [Float] = []
        var changes = rates
        try input.withUnsafeBufferPointer { all in
            var next = 0
            while next < all.count {
                if let change = changes.first, change.at <= next {
                    try stretcher.setRate(change.rate)
                    changes.removeFirst()
                }
                let n = min(chunk, all.count - next)
                let count = out.withUnsafeMutableBufferPointer { stretcher.process(UnsafeBufferPointer(rebasing: all[next..<next + n]), into: $0) }
                result += out[0..<count]
                next += n
            }
        }
        result += out[0..<out.withUnsafeMutableBufferPointer { stretcher.flush(into: $0) }]
        return result
    }

    private func speech(_ reader: String = "en_US_f_Allison", seconds: Double = 6) throws -> [Float] {
        let x = try HumanSpeech.prompt(reader, "demo-congrats", sampleRate: 24_000)
        return Array(x.prefix(Int(seconds * 24_000)))
    }

    /// The pitch period (in samples, 60–400 Hz) of the most periodic 40 ms windows' median:
    /// a plain autocorrelation, enough to tell a kept pitch from one moved by a semitone.
    private func medianPeriod(_ x: [Float]) -> Double {
        var periods: [Double] = []
        let window = 960
        var start = 0
        while start + window + 400 < x.count {
            var best = (score: Float(0), lag: 0)
            let energy = x[start..<start + window].reduce(0) { $0 + $1 * $1 }
            if energy > 1e-3 {
                for lag in 60...400 {
                    var c: Float = 0, e: Float = 0
                    for k in 0..<window { c += x[start + k] * x[start + k + lag]; e += x[start + k + lag] * x[start + k + lag] }
                    let score = c / (energy * e).squareRoot()
                    if score > best.score { best = (score, lag) }
                }
                if best.score > 0.8 { periods.append(Double(best.lag)) }
            }
            start += window
        }
        return periods.sorted()[periods.count / 2]
    }

    func testRateOneIsABitExactPassthroughWithNoDelay() throws {
        let x = try speech()
        let y = try stretched(x, rate: 1.0, chunk: 333)
        XCTAssertEqual(y.count, x.count)
        XCTAssertTrue(y == x, "rate 1.0 changed the samples")
    }

    func testTheOutputLastsTheInputOverTheRate() throws {
        let x = try speech()
        for rate in [0.5, 0.6, 0.75, 0.85, 1.25, 2.0] {
            let y = try stretched(x, rate: rate)
            XCTAssertEqual(Double(y.count), Double(x.count) / rate, accuracy: 2, "rate \(rate)")
        }
    }

    /// A player feeds what the device asks for: the output must not depend on the chunks.
    func testTheOutputDoesNotDependOnHowTheInputIsChunked() throws {
        let x = try speech(seconds: 3)
        let whole = try stretched(x, rate: 0.75, chunk: 4_096)
        for chunk in [1, 17, 240, 1_000] {
            XCTAssertTrue(try stretched(x, rate: 0.75, chunk: chunk) == whole, "chunks of \(chunk)")
        }
    }

    /// Recorded voices, a woman's and a man's, keep their pitch at the learners' rates (the
    /// proof measures it with Praat's tracker; this is the suite's own check).
    func testRecordedVoicesKeepTheirPitch() throws {
        for reader in ["en_US_f_Allison", "it_IT_m_Carlo"] {
            let x = try speech(reader, seconds: 4)
            let original = medianPeriod(x)
            for rate in [0.5, 0.75] {
                let period = medianPeriod(try stretched(x, rate: rate))
                XCTAssertEqual(period / original, 1, accuracy: 0.03, "\(reader) at \(rate): period \(period) against \(original)")
            }
        }
    }

    /// Joins on the waveform leave no click: no sample-to-sample step larger than the input's
    /// own largest.
    func testJoinsMakeNoStepLargerThanTheInputHas() throws {
        let x = try speech(seconds: 4)
        func largestStep(_ y: [Float]) -> Float { zip(y, y.dropFirst()).map { abs($1 - $0) }.max() ?? 0 }
        let own = largestStep(x)
        for rate in [0.5, 0.75, 1.5] {
            XCTAssertLessThanOrEqual(largestStep(try stretched(x, rate: rate)), own * 1.05, "rate \(rate)")
        }
    }

    /// Slowed down, then back to 1.0 mid-stream: the rest is the input again, sample for
    /// sample, from the next frame on.
    func testBackToRateOneTheRestIsTheInputExactly() throws {
        let x = try speech(seconds: 4)
        let y = try stretched(x, rate: 1.0, chunk: 240, rates: [(24_000, 0.75), (48_000, 1.0)])
        // The last 1.5 s of the output are the input's last 1.5 s, bit for bit.
        let n = 36_000
        XCTAssertTrue(Array(y.suffix(n)) == Array(x.suffix(n)), "the copy after rate 1.0 is not exact")
        XCTAssertEqual(Double(y.count), Double(x.count) + 24_000 / 0.75 - 24_000, accuracy: 200)
    }

    func testSilenceAndFullScaleStayFinite() throws {
        let quiet = [Float](repeating: 0, count: 24_000)
        XCTAssertTrue(try stretched(quiet, rate: 0.5).allSatisfy { $0 == 0 })
        let square = (0..<24_000).map { $0 / 60 % 2 == 0 ? Float(1) : -1 }
        let y = try stretched(square, rate: 0.6)
        XCTAssertTrue(y.allSatisfy { $0.isFinite && abs($0) <= 1.0001 })
    }

    func testBadRatesAndSampleRatesAreRefused() throws {
        let stretcher = try TimeStretcher(sampleRate: 24_000)
        for rate in [0, -1, .nan, .infinity, 10, 0.49, 2.01] as [Double] {
            XCTAssertThrowsError(try stretcher.setRate(rate), "rate \(rate)") { error in
                XCTAssertTrue("\(error)".contains("outside 0.5 to 2.0"), "\(error)")
            }
        }
        XCTAssertEqual(stretcher.rate, 1.0, "a refused rate changed it")
        XCTAssertThrowsError(try TimeStretcher(sampleRate: 0))
        XCTAssertThrowsError(try TimeStretcher(sampleRate: 24_000, rate: .nan))
    }
}
