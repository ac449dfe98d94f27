import Glibc

/// Plays speech slower or faster at the same pitch: a streaming WSOLA (waveform-similarity
/// overlap-add, Verhelst and Roelands 1993, the family of sox's `tempo` and ffmpeg's
/// `atempo`) for mono Float32 audio at any rate the engine runs, speeds 0.5 to 2.0.
///
/// How: the output is built of Hann-windowed frames of the input, `frame` long, laid every
/// `hop` (half a frame, so the windows sum to one). Each frame is taken about `rate × hop`
/// further into the input than the last, so the output lasts `1 / rate` as long; but not at
/// that nominal place exactly: within ``reach`` of it, where the input most resembles the
/// natural continuation of the previous frame (the samples that followed it in the input),
/// by normalized cross-correlation over the half the two frames overlap. The frames then join
/// in phase, a pitch period on a pitch period, which keeps the pitch and the timbre: no
/// phase vocoder's phasiness, because no phase is ever computed. Why WSOLA rather than a phase
/// vocoder for speech is in docs/audio.md ("Slower replay").
///
/// Rate 1.0 is an exact passthrough: a stretcher that starts at 1.0 copies its input out
/// bit for bit with no delay, and one set back to 1.0 joins its frames to a copy of the input
/// at the next frame and copies from there (delayed by what it held). At other rates the
/// output lags the input by at most ``latency`` frames. Per call: no allocation, no lock.
public final class TimeStretcher {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case unsupportedRate(Double)
        case unsupportedSampleRate(Int)
        public var description: String {
            switch self {
            case .unsupportedRate(let rate): return "playback rate \(rate) is outside \(TimeStretcher.rates.lowerBound) to \(TimeStretcher.rates.upperBound)"
            case .unsupportedSampleRate(let rate): return "sample rate \(rate) Hz is outside 8,000 to 192,000 Hz"
            }
        }
    }

    /// The speeds it plays at: 0.5 (twice as long) to 2.0 (half as long).
    public static let rates: ClosedRange<Double> = 0.5...2.0

    public let sampleRate: Int
    /// The most input frames one ``process(_:into:)`` call takes.
    public let maximumInputFrames: Int
    /// Frames between the starts of two output frames: 8 ms, a frame being 16 ms (a low
    /// voice's period and more; short frames keep a syllable's changing formants sharp and
    /// scored best on the tuning voices from 8 to 15 ms, docs/audio.md).
    public let hop: Int
    public var frame: Int { 2 * hop }
    /// How far from its nominal place a frame may be taken: 6 ms each way, so that the span
    /// (12 ms) holds a whole pitch period of any voice down to 83 Hz.
    public let reach: Int
    /// The penalty for a join at the reach's edge, against the similarity's 1 (chosen on the
    /// tuning voices, docs/audio.md).
    static let straying: Float = 0.2
    /// Under this similarity the input is not periodic (a fricative, a breath, the room):
    /// there is no period to join on, and joining on the best match anyway repeats a stretch
    /// of noise at a fixed lag, which sounds as a buzz and which a pitch tracker hears as a
    /// voice (16 % more voiced frames at rate 0.5, their pitch pulling the median 3 % low).
    /// The frame goes near its nominal place instead, at a pseudo-random offset within
    /// ``scatter`` of the reach, so that no two repeats share a lag.
    static let periodic: Float = 0.5
    static let scatter: Float = 0.3
    private static let seed: UInt64 = 0x9E37_79B9_7F4A_7C15
    private var noise = TimeStretcher.seed
    /// The most frames the output lags its input while stretching.
    public var latency: Int { frame + reach + hop }

    public private(set) var rate: Double = 1.0

    private enum Mode {
        /// Rate 1.0, joined: the input from `read` on goes straight out.
        case copying
        /// Frames overlap-added; `previous` is where the last frame began in the input.
        case stretching
    }
    private var mode = Mode.copying

    // The input kept: absolute input positions `base ..< base + held` in `history`.
    private let history: UnsafeMutablePointer<Float>
    private let capacity: Int
    private var base = 0, held = 0
    /// Copying: the next input position to copy out.
    private var read = 0
    /// Stretching: the last frame's start, and where the next one would begin nominally.
    private var previous = 0
    private var nominal = 0.0
    /// Stretching: the second half of the last frame, windowed, waiting for the next frame's
    /// first half.
    private let tail: UnsafeMutablePointer<Float>
    /// The rising half of the Hann window (the falling half is one minus it).
    private let rise: UnsafeMutablePointer<Float>

    public init(sampleRate: Int, rate: Double = 1.0, maximumInputFrames: Int = 8_192) throws(Failure) {
        guard (8_000...192_000).contains(sampleRate) else { throw .unsupportedSampleRate(sampleRate) }
        self.sampleRate = sampleRate
        self.maximumInputFrames = max(1, maximumInputFrames)
        hop = sampleRate * 8 / 1_000
        reach = sampleRate * 6 / 1_000
        capacity = self.maximumInputFrames + 4 * (2 * hop + reach + hop)
        history = .allocate(capacity: capacity)
        history.initialize(repeating: 0, count: capacity)
        tail = .allocate(capacity: hop)
        tail.initialize(repeating: 0, count: hop)
        rise = .allocate(capacity: hop)
        for n in 0..<hop {
            let s = Float(sin(Double.pi * Double(n) / Double(2 * hop)))
            rise[n] = s * s
        }
        try setRate(rate)
    }

    deinit {
        history.deallocate()
        tail.deallocate()
        rise.deallocate()
    }

    /// The speed from the next frame on. Rejects NaN, infinities and anything outside ``rates``.
    public func setRate(_ newRate: Double) throws(Failure) {
        guard newRate.isFinite, Self.rates.contains(newRate) else { throw .unsupportedRate(newRate) }
        if newRate != 1.0, case .copying = mode { beginStretching() }
        rate = newRate
    }

    /// The most frames one call can write for `inputFrames` in (what it held comes out too).
    public func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int {
        let pending = capacity - maximumInputFrames
        return Int((Double(inputFrames + pending) / Self.rates.lowerBound).rounded(.up)) + 2 * hop
    }

    /// Forgets the stream: the next input starts a new one, at the current rate.
    public func reset() {
        base = 0; held = 0; read = 0; previous = 0; nominal = 0
        noise = Self.seed
        tail.update(repeating: 0, count: hop)
        mode = .copying
        if rate != 1.0 { beginStretching() }
    }

    /// Takes `input` (at most ``maximumInputFrames``), writes what is ready into `output`
    /// (room for ``maximumOutputFrames(forInputFrames:)``) and returns how many frames.
    public func process(_ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>) -> Int {
        precondition(input.count <= maximumInputFrames, "at most maximumInputFrames a call")
        precondition(output.count >= maximumOutputFrames(forInputFrames: input.count), "room for maximumOutputFrames")
        append(input)
        return emit(into: output, end: nil)
    }

    /// Ends the stream: what is held comes out, as long as it lasts at the rate (the output
    /// of the whole stream lasts its input over the rate), and the stretcher is reset.
    public func flush(into output: UnsafeMutableBufferPointer<Float>) -> Int {
        precondition(output.count >= maximumOutputFrames(forInputFrames: 0), "room for maximumOutputFrames")
        let end = base + held
        let written = emit(into: output, end: end)
        reset()
        return written
    }

    // MARK: - Steps

    private func beginStretching() {
        // The copied output ended at `read`: as if a frame had begun a hop before it, whose
        // second half (still to come) is the input from `read` on.
        previous = read - hop
        nominal = Double(previous)
        mode = .stretching
        tailPending = true
    }
    /// The tail of the frame ``beginStretching()`` pretends is yet to be read from the input.
    private var tailPending = false

    private func emit(into output: UnsafeMutableBufferPointer<Float>, end: Int?) -> Int {
        var written = 0
        while true {
            switch mode {
            case .copying:
                let n = (end ?? base + held) - read
                if n > 0 {
                    (output.baseAddress! + written).update(from: history + (read - base), count: n)
                    written += n
                    read += n
                }
                return written
            case .stretching:
                // The output this hop begins where the input at `next` plays: the first frame
                // after copying at the copy's end.
                let next = tailPending ? Double(previous + hop) : nominal + rate * Double(hop)
                let centre = Int(next.rounded())
                var count = hop
                if let end {
                    // The end of the stream: the zeros past it stand in for input, and the
                    // last hop goes only as far as the input lasts at the rate.
                    guard next < Double(end) else { return written }
                    count = min(hop, Int(((Double(end) - next) / rate).rounded(.up)))
                    padZeros(through: centre + reach + frame)
                } else {
                    guard centre + reach + frame <= base + held else { return written }
                }
                written += step(to: next, centre: centre, into: output.baseAddress! + written, count: count)
            }
        }
    }

    /// One output hop: the frame best joined to the last near `centre`, its first half added
    /// to the last one's second; writes `count` (at most a hop) of it.
    private func step(to next: Double, centre: Int, into output: UnsafeMutablePointer<Float>, count: Int) -> Int {
        if tailPending {
            let start = previous + hop - base
            for n in 0..<hop { tail[n] = history[start + n] * (1 - rise[n]) }
            tailPending = false
        }
        let natural = previous + hop
        let low = max(base, centre - reach), high = centre + reach
        let chosen: Int
        if rate == 1.0, (low...high).contains(natural) {
            chosen = natural
        } else {
            chosen = bestJoin(to: natural, from: low, through: high, centre: centre)
        }
        if rate == 1.0, chosen == natural {
            // Joined: the last frame's second half and this one's first are the same input,
            // and the window's halves sum to one: copy it exactly from here.
            mode = .copying
            read = natural
            let n = min(count, base + held - read)
            output.update(from: history + (read - base), count: n)
            read += n
            return n
        }
        let x = history + (chosen - base)
        for n in 0..<count { output[n] = tail[n] + x[n] * rise[n] }
        for n in 0..<hop { tail[n] = x[hop + n] * (1 - rise[n]) }
        previous = chosen
        nominal = next
        return count
    }

    /// The start in `low...high` whose first hop correlates best (normalized) with the input
    /// from `natural` on: every second start, then the neighbours of the best.
    private func bestJoin(to natural: Int, from low: Int, through high: Int, centre: Int) -> Int {
        let target = history + (natural - base)
        let targetNorm = (PolyphaseStage.dot(target, target, hop) + 1e-9).squareRoot()
        func similarity(_ start: Int) -> Float {
            let x = history + (start - base)
            return PolyphaseStage.dot(target, x, hop) / ((PolyphaseStage.dot(x, x, hop) + 1e-9).squareRoot() * targetNorm)
        }
        // Which pitch period to join on: the most similar, less a penalty for straying from
        // the nominal place (so the drift stays small and is corrected a little at a time,
        // not in one audible jump at the reach's edge; SoundTouch weighs its search the same way).
        func score(_ start: Int) -> Float {
            let d = Float(start - centre) / Float(reach)
            return similarity(start) - Self.straying * d * d
        }
        var best = low, bestScore = -Float.infinity
        var start = low
        while start <= high {
            let s = score(start)
            if s > bestScore { bestScore = s; best = start }
            start += 2
        }
        // Where on that period: the peak of the similarity itself. The penalty would pull the
        // join towards the nominal place, off the peak, the same way at every join (towards
        // earlier input when slowing down): each join's period a little longer, the pitch 3 %
        // low at rate 0.5.
        var peak = similarity(best)
        while true {
            let left = best > low ? similarity(best - 1) : -Float.infinity
            let right = best < high ? similarity(best + 1) : -Float.infinity
            if left > peak, left >= right { best -= 1; peak = left } else if right > peak { best += 1; peak = right } else { break }
        }
        if peak < Self.periodic {
            noise = noise &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let spread = Int(Float(reach) * Self.scatter)
            if spread == 0 { return max(low, min(high, centre)) }
            return max(low, min(high, centre + Int((noise >> 33) % UInt64(2 * spread + 1)) - spread))
        }
        return best
    }

    // MARK: - The input kept

    private func append(_ input: UnsafeBufferPointer<Float>) {
        compact()
        precondition(held + input.count <= capacity, "the stretcher's history overflowed")
        if let from = input.baseAddress, !input.isEmpty { (history + held).update(from: from, count: input.count) }
        held += input.count
    }

    private func padZeros(through position: Int) {
        compact()
        let n = position - (base + held)
        guard n > 0 else { return }
        precondition(held + n <= capacity, "the stretcher's history overflowed")
        (history + held).update(repeating: 0, count: n)
        held += n
    }

    /// Drops the input no later frame can reach.
    private func compact() {
        let keep: Int
        switch mode {
        case .copying: keep = read - (2 * hop + reach)
        case .stretching: keep = min(previous + hop, Int(nominal) - reach)
        }
        let drop = min(held, max(0, keep - base))
        guard drop > 0 else { return }
        history.update(from: history + drop, count: held - drop)
        base += drop
        held -= drop
    }
}
