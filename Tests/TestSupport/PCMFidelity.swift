import Foundation
import XCTest

/// How faithfully a sound server carries PCM16, and the measure the tests hold it to.
///
/// PulseAudio runs a 24 kHz null sink or pipe source at 24 kHz, so PCM16 at 24 kHz passes
/// through it unchanged and the tests compare samples exactly. PipeWire runs its graph at
/// `default.clock.rate` (48 kHz) and resamples a 24 kHz device both ways with its own
/// converter, as it would on a kiosk: there the tests measure the signal-to-noise ratio of
/// what came through against what went in, aligned to the sample.
public enum PCMFidelity {
    /// The SNR in dB of `recording` against `reference` (as long as each other); infinity
    /// when they are equal.
    public static func snr<A: Collection<Int16>, B: Collection<Int16>>(reference: A, recording: B) -> Double {
        var signal = 0.0, noise = 0.0
        for (a, b) in zip(reference, recording) {
            signal += Double(a) * Double(a)
            noise += (Double(a) - Double(b)) * (Double(a) - Double(b))
        }
        return noise == 0 ? .infinity : 10 * log10(signal / noise)
    }

    /// The SNR of `recording` from `lag` on against `reference` (at most a second of it at
    /// 24 kHz), both low-passed at `passband` of the Nyquist frequency (127-tap
    /// Blackman-windowed sinc), with the gain that fits best. PipeWire's resampler at its
    /// default quality rolls off from about 0.72 of Nyquist each way (measured: 24 → 48 → 24
    /// kHz keeps -60 to -85 dB of error below 8 kHz and loses the top 3 kHz), so what it
    /// carries is judged in the band it carries: all of speech, up to 7.8 kHz at 24 kHz.
    public static func passbandSNR(reference: [Int16], recording: [Int16], lag: Int, passband: Double = 0.65) -> Double {
        let half = 63
        let taps = (-half...half).map { k -> Double in
            let x = Double(k)
            let sinc = k == 0 ? passband : sin(.pi * passband * x) / (.pi * x)
            let w = 0.42 + 0.5 * cos(.pi * x / Double(half + 1)) + 0.08 * cos(2 * .pi * x / Double(half + 1))
            return sinc * w
        }
        func lowPassed(_ samples: [Int16], from start: Int, count: Int) -> [Double] {
            (0..<count).map { i in
                var v = 0.0
                for (k, tap) in taps.enumerated() { v += tap * Double(samples[start + i + k - half]) }
                return v
            }
        }
        let count = min(24_000, reference.count, recording.count - lag) - 2 * half
        guard count > 0, lag >= 0 else { return -.infinity }
        let r = lowPassed(reference, from: half, count: count)
        let x = lowPassed(recording, from: lag + half, count: count)
        var cross = 0.0, energyX = 0.0, energyR = 0.0
        for i in 0..<count { cross += r[i] * x[i]; energyX += x[i] * x[i]; energyR += r[i] * r[i] }
        let gain = energyX > 0 ? cross / energyX : 0
        var noise = 0.0
        for i in 0..<count { let e = r[i] - gain * x[i]; noise += e * e }
        return noise == 0 ? .infinity : 10 * log10(energyR / noise)
    }

    /// The offset in `haystack` where `needle` matches best, searched within `±window` of
    /// `guess` (the whole haystack when `guess` is nil), by normalised cross-correlation.
    public static func bestMatch(of needle: ArraySlice<Int16>, in haystack: [Int16], near guess: Int? = nil, window: Int = 4_800) -> (offset: Int, snr: Double)? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        let lastStart = haystack.count - needle.count
        let range = guess.map { max(0, $0 - window)...min(lastStart, max(0, $0 + window)) } ?? 0...lastStart
        guard !range.isEmpty else { return nil }
        let n = Array(needle)
        var best: (offset: Int, score: Double)?
        for offset in range {
            var dot = 0.0, energy = 0.0
            for i in 0..<n.count {
                let h = Double(haystack[offset + i])
                dot += Double(n[i]) * h
                energy += h * h
            }
            let score = energy > 0 ? dot / energy.squareRoot() : 0
            if best == nil || score > best!.score { best = (offset, score) }
        }
        guard let best else { return nil }
        return (best.offset, snr(reference: haystack[best.offset..<(best.offset + n.count)], recording: n))
    }

    /// Where `needle` lines up best in `haystack`, and how alike the two are there: the
    /// normalised correlation coefficient over their overlap (1: the same waveform at some
    /// gain; near 0: unrelated sounds). For sound that went through a non-linear stage (an
    /// echo canceller), where an SNR says little. The lag is found on 10 ms envelopes first
    /// (overlaps of at least half the needle), then sample by sample within ±20 ms of it.
    public static func correlation(of needle: [Int16], in haystack: [Int16]) -> (offset: Int, coefficient: Double)? {
        let block = 240
        func envelope(_ samples: [Int16]) -> [Double] {
            stride(from: 0, to: samples.count - block + 1, by: block).map { start in
                (samples[start..<(start + block)].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(block)).squareRoot()
            }
        }
        func coefficient(_ a: ArraySlice<Double>, _ b: ArraySlice<Double>) -> Double {
            let n = Double(a.count), ma = a.reduce(0, +) / n, mb = b.reduce(0, +) / n
            var dot = 0.0, ea = 0.0, eb = 0.0
            for (x, y) in zip(a, b) { dot += (x - ma) * (y - mb); ea += (x - ma) * (x - ma); eb += (y - mb) * (y - mb) }
            return ea > 0 && eb > 0 ? dot / (ea * eb).squareRoot() : 0
        }
        let n = envelope(needle), h = envelope(haystack)
        guard n.count >= 2, h.count >= n.count / 2 else { return nil }
        var best: (lag: Int, score: Double)?
        for lag in (-(n.count / 2))...(h.count - n.count / 2) {
            let from = max(0, -lag), to = min(n.count, h.count - lag)
            guard to - from >= n.count / 2 else { continue }
            let score = coefficient(n[from..<to], h[(from + lag)..<(to + lag)])
            if best == nil || score > best!.score { best = (lag, score) }
        }
        guard let best else { return nil }
        var found: (offset: Int, coefficient: Double)?
        for offset in (best.lag * block - 480)...(best.lag * block + 480) {
            let from = max(0, -offset), to = min(needle.count, haystack.count - offset)
            guard to - from >= needle.count / 2 else { continue }
            var dot = 0.0, en = 0.0, eh = 0.0
            for i in from..<to {
                let x = Double(needle[i]), y = Double(haystack[i + offset])
                dot += x * y; en += x * x; eh += y * y
            }
            let value = en > 0 && eh > 0 ? dot / (en * eh).squareRoot() : 0
            if found == nil || value > found!.coefficient { found = (offset, value) }
        }
        return found
    }

    /// How alike `needle` is to `haystack` from `offset` on, followed piece by piece: each
    /// 100 ms of the needle is matched within ±10 ms of where the previous piece was found,
    /// and the pieces' coefficients are averaged weighted by their energy. A few milliseconds
    /// of zeros can enter a stream that passes through a sound server (a stream that ran late
    /// is filled with silence; seen in the echo-cancelling room on PipeWire, 5 to 19 ms):
    /// every word is still there, a little later, which the one-lag
    /// ``correlation(of:in:)`` reads as a different sound. `slip` is how far
    /// apart the earliest and the latest lag a piece was found at are, in samples.
    public static func followedCorrelation(of needle: [Int16], in haystack: [Int16], from offset: Int) -> (coefficient: Double, slip: Int) {
        let piece = 2_400, reach = 240
        let x = needle.map(Double.init), y = haystack.map(Double.init)
        var lag = offset, weighted = 0.0, energy = 0.0, lags = (low: offset, high: offset)
        x.withUnsafeBufferPointer { x in
            y.withUnsafeBufferPointer { y in
                for start in stride(from: 0, to: x.count - piece + 1, by: piece) {
                    var pieceEnergy = 0.0
                    for i in start..<(start + piece) { pieceEnergy += x[i] * x[i] }
                    guard pieceEnergy > 0 else { continue }
                    var best: (lag: Int, value: Double)?, here = 0.0
                    for candidate in (lag - reach)...(lag + reach) where candidate + start >= 0 && candidate + start + piece <= y.count {
                        var dot = 0.0, eh = 0.0
                        for i in start..<(start + piece) {
                            dot += x[i] * y[i + candidate]; eh += y[i + candidate] * y[i + candidate]
                        }
                        let value = eh > 0 ? dot / (pieceEnergy * eh).squareRoot() : 0
                        if candidate == lag { here = value }
                        if best == nil || value > best!.value { best = (candidate, value) }
                    }
                    // A piece past the haystack's end counts as not found.
                    weighted += pieceEnergy * max(0, best?.value ?? 0)
                    energy += pieceEnergy
                    // A voice is periodic: a piece also matches a pitch period away. The lag
                    // moves only when the piece is lost where it was and clearly found elsewhere.
                    if let best, best.value > 0.5, here < 0.5 {
                        lag = best.lag
                        lags = (min(lags.low, lag), max(lags.high, lag))
                    }
                }
            }
        }
        return (energy > 0 ? weighted / energy : 0, lags.high - lags.low)
    }
}

extension PulseAudioServer {
    /// Whether PCM16 at 24 kHz reaches a client unchanged (see ``PCMFidelity``).
    public var passesPCM16Unchanged: Bool { kind == .pulseaudio }

    /// How much later than a sink plays a sample its monitor hands the sample to a client:
    /// one 10 ms capture period and 2 ms on PulseAudio; on PipeWire also the graph's quantum
    /// (1,024 frames at 48 kHz by default, 21.3 ms), in which the monitor's data moves.
    public var monitorSlack: TimeInterval { kind == .pulseaudio ? 0.012 : 0.012 + 1_024.0 / 48_000 }

    /// The least passband SNR (``PCMFidelity/passbandSNR(reference:recording:lag:passband:)``)
    /// the tests accept through this server where samples cannot be compared exactly.
    public var minimumSNR: Double { kind == .pulseaudio ? .infinity : 50 }
}

extension PulseAudioServer {
    /// Asserts that `recording` from `lag` on carries `signal`: sample for sample on
    /// PulseAudio, with at least ``minimumSNR`` in the passband on PipeWire. Returns the SNR.
    @discardableResult
    public func assertCarried(_ signal: [Int16], in recording: [Int16], at lag: Int, _ what: String,
                              file: StaticString = #filePath, line: UInt = #line) -> Double {
        guard lag >= 0, lag + signal.count <= recording.count else {
            XCTFail("\(what): the recording (\(recording.count)) ends before the signal (\(lag) + \(signal.count))", file: file, line: line)
            return -.infinity
        }
        if passesPCM16Unchanged {
            let got = Array(recording[lag..<(lag + signal.count)])
            let firstDifference = zip(got, signal).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            XCTAssertNil(firstDifference, "\(what): changed from sample \(firstDifference ?? 0) of \(signal.count) on", file: file, line: line)
            return firstDifference == nil ? .infinity : PCMFidelity.snr(reference: signal, recording: got)
        }
        let snr = PCMFidelity.passbandSNR(reference: signal, recording: recording, lag: lag)
        print("\(what) through \(kind): passband SNR \(String(format: "%.1f", snr)) dB")
        XCTAssertGreaterThanOrEqual(snr, minimumSNR, what, file: file, line: line)
        return snr
    }
}
