/// A band-limited streaming sample-rate converter for Float32 audio, any pair of rates from
/// 8 to 192 kHz, 1 to 8 interleaved channels.
///
/// What it promises: a tone below 0.9 × the lower rate's Nyquist frequency passes flat (well
/// under 0.01 dB of ripple), and everything it makes outside the band from 0.9 to 1.1 ×
/// that Nyquist frequency (SoX's "aliasing allowed in the transition band"), images when
/// upsampling and aliases when downsampling, is at least the quality's attenuation down.
///
/// How, at the least work (the way libsoxr splits a ratio): the factor of two between the
/// lower rate `f` and `2f` is taken by a half-band filter, whose sharp transition (0.45 to
/// 0.55 `f`) costs only its odd taps, folded; what is left of the ratio is a polyphase
/// stage on the far side of it, whose own transition is wide (it only has to keep images
/// and aliases out of what the half-band stage passes: 0.45 to 1.45 `f`), so it is short.
///
///     up   (in < out):  in ──half-band ×2──▶ 2·in ──polyphase──▶ out
///     down (in > out):  in ──polyphase──▶ 2·out ──half-band ÷2──▶ out
///
/// The polyphase stage is left out when the ratio is exactly 2. Equal rates, and ratios whose
/// polyphase stage would need more than ``maximumExactPhases`` phases, take one polyphase
/// stage with the sharp transition instead.
///
/// Positions are counted in integers (no drift over hours); a NaN or an infinity spoils only
/// the outputs whose filters span it. Per call: no allocation, no lock. The delay through
/// the whole chain is reported in output frames (``delay``).
public final class Resampler {
    public enum Quality: Sendable {
        /// At least 100 dB of stopband attenuation (SoX's "medium" rejection).
        case medium
        /// At least 125 dB (SoX's "high").
        case high

        /// The attenuation the polyphase filters are designed for, with a margin over the
        /// promise.
        var designAttenuation: Double {
            switch self {
            case .medium: return 110
            case .high: return 135
            }
        }

        /// The half-band filter: the shortest Kaiser-windowed one (`pairs` odd taps on each
        /// side, window shape `beta`) that keeps more than the promise at the transition
        /// band's edge (1.1 × Nyquist; its passband ripple mirrors that), and more again from
        /// 1.2 × Nyquist on, where the images and aliases of every tone up to 0.8 × Nyquist
        /// fall: 115 and 121 dB at `.medium` (libsoxr's medium recipe gives 120 dB there),
        /// 138 and 144 dB at `.high` (its high recipe, 137 to 143; the window is shaped for
        /// the edge rather than the last dB beyond it, so that the passband ripple, 0.000002
        /// dB, stays under libsoxr HQ's). Kaiser's formula alone would place those sidelobes
        /// by chance; these were searched for.
        var halfBand: HalfBandFilter.Design {
            switch self {
            case .medium: return HalfBandFilter.Design(pairs: 38, beta: 11.96)
            case .high: return HalfBandFilter.Design(pairs: 46, beta: 14.45)
            }
        }
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case unsupportedRate(Int)
        case unsupportedChannels(Int)
        public var description: String {
            switch self {
            case .unsupportedRate(let rate): return "sample rate \(rate) Hz is outside 8,000 to 192,000 Hz"
            case .unsupportedChannels(let count): return "\(count) channels; 1 to 8 are supported"
            }
        }
    }

    /// Polyphase stages with more phases than this interpolate between 512 tabulated ones.
    public static let maximumExactPhases = PolyphaseStage.maximumExactPhases

    public let inputRate: Int
    public let outputRate: Int
    public let channels: Int
    /// The most input frames one ``process(_:into:)`` call takes.
    public let maximumInputFrames: Int

    /// The stages in order (one or two). The first makes its output straight into the
    /// second's input.
    let stages: [any ResamplingStage]
    /// Planar frames after the last stage when there is more than one channel; each
    /// channel `stride` floats from the previous.
    private let last: UnsafeMutablePointer<Float>?
    private let lastStride: Int
    /// The stages' delays, in output frames.
    public let delay: Double

    /// - Parameters:
    ///   - maximumInputFrames: the most frames one call will pass (memory is sized for it).
    public init(inputRate: Int, outputRate: Int, channels: Int = 1, quality: Quality = .medium, maximumInputFrames: Int = 8_192) throws(Failure) {
        for rate in [inputRate, outputRate] where rate < 8_000 || rate > 192_000 { throw .unsupportedRate(rate) }
        guard (1...8).contains(channels) else { throw .unsupportedChannels(channels) }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        let frames = max(1, maximumInputFrames)
        self.maximumInputFrames = frames
        stages = Self.plan(inputRate: inputRate, outputRate: outputRate, channels: channels, quality: quality, maximumInputFrames: frames)

        var delay = 0.0
        var rate = Double(inputRate)
        var most = frames
        for (index, stage) in stages.enumerated() {
            // Each delay is in its stage's output frames; the rest of the chain scales it.
            let stageOut = index == stages.count - 1 ? Double(outputRate) : (outputRate > inputRate ? 2.0 * Double(inputRate) : 2.0 * Double(outputRate))
            delay = delay * stageOut / rate + stage.delay
            rate = stageOut
            most = stage.maximumOutputFrames(forInputFrames: most)
        }
        self.delay = delay
        lastStride = most
        last = channels > 1 ? .allocate(capacity: most * channels) : nil
    }

    deinit {
        last?.deallocate()
    }

    private static func plan(inputRate: Int, outputRate: Int, channels: Int, quality: Quality, maximumInputFrames: Int) -> [any ResamplingStage] {
        let lower = Double(min(inputRate, outputRate))
        let attenuation = quality.designAttenuation
        // The direct stage: the whole transition band, 0.45 to 0.55 of the lower rate.
        func direct() -> [any ResamplingStage] {
            [PolyphaseStage(inputRate: inputRate, outputRate: outputRate, channels: channels, passband: 0.45 * lower, stopband: 0.55 * lower,
                            attenuation: attenuation, maximumInputFrames: maximumInputFrames)]
        }
        // The wide stage beside a half-band one between `from` and `to`.
        func wide(_ from: Int, _ to: Int, frames: Int) -> PolyphaseStage? {
            let reduced = to / PolyphaseStage.gcd(from, to)
            guard reduced <= PolyphaseStage.maximumExactPhases else { return nil }
            return PolyphaseStage(inputRate: from, outputRate: to, channels: channels, passband: 0.45 * lower, stopband: 1.45 * lower,
                                  attenuation: attenuation, maximumInputFrames: frames)
        }
        if inputRate == outputRate { return direct() }
        if outputRate > inputRate {
            let half = HalfBandUpsampler(channels: channels, design: quality.halfBand, maximumInputFrames: maximumInputFrames)
            if outputRate == 2 * inputRate { return [half] }
            guard let rest = wide(2 * inputRate, outputRate, frames: 2 * maximumInputFrames) else { return direct() }
            return [half, rest]
        }
        if inputRate == 2 * outputRate {
            return [HalfBandDownsampler(channels: channels, design: quality.halfBand, maximumInputFrames: maximumInputFrames)]
        }
        guard let first = wide(inputRate, 2 * outputRate, frames: maximumInputFrames) else { return direct() }
        return [first, HalfBandDownsampler(channels: channels, design: quality.halfBand,
                                           maximumInputFrames: first.maximumOutputFrames(forInputFrames: maximumInputFrames))]
    }

    /// The most output frames a call with `inputFrames` frames can give.
    public func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int {
        stages.reduce(inputFrames) { $1.maximumOutputFrames(forInputFrames: $0) }
    }

    /// The fewest output frames a call with `inputFrames` frames gives.
    public func minimumOutputFrames(forInputFrames inputFrames: Int) -> Int {
        stages.reduce(inputFrames) { $1.minimumOutputFrames(forInputFrames: $0) }
    }

    /// Forgets the past: the next call starts from silence.
    public func reset() {
        for stage in stages { stage.reset() }
    }

    /// Resamples `input` (interleaved frames, at most ``maximumInputFrames``) into `output`
    /// (room for ``maximumOutputFrames(forInputFrames:)``); returns the frames written.
    public func process(_ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>) -> Int {
        let frames = input.count / channels
        precondition(frames <= maximumInputFrames, "more input than the resampler was made for")
        precondition(output.count >= maximumOutputFrames(forInputFrames: frames) * channels, "output too small")
        guard let source = input.baseAddress, let destination = output.baseAddress else { return 0 }
        stages[0].write(source, frames: frames, channelStride: 1, frameStride: channels)
        if stages.count == 2 {
            let (slot, stride) = stages[1].inputSlot(frames: stages[0].maximumOutputFrames(forInputFrames: frames))
            stages[1].commit(stages[0].run(into: slot, channelStride: stride))
        }
        // One channel: planar is interleaved, and the last stage writes in place.
        guard channels > 1, let last else { return stages[stages.count - 1].run(into: destination, channelStride: 0) }
        let made = stages[stages.count - 1].run(into: last, channelStride: lastStride)
        Self.interleave(last, stride: lastStride, channels: channels, frames: made, into: destination)
        return made
    }

    private static func interleave(_ planar: UnsafePointer<Float>, stride: Int, channels: Int, frames: Int, into destination: UnsafeMutablePointer<Float>) {
        if channels == 2 {
            let left = planar, right = planar + stride
            var frame = 0
            while frame < frames {
                destination[2 &* frame] = left[frame]
                destination[2 &* frame &+ 1] = right[frame]
                frame &+= 1
            }
            return
        }
        for channel in 0..<channels {
            let line = planar + channel * stride
            var frame = 0
            while frame < frames {
                destination[frame &* channels &+ channel] = line[frame]
                frame &+= 1
            }
        }
    }
}
