/// Gain and linear gain ramps, in place, on Float32 or PCM16 samples.
///
/// A ramp is what makes `stop` click-free: the player fades the last few milliseconds out
/// instead of cutting the waveform. Ramps are continuous across calls (see ``GainRamp``), so
/// a fade may span several device periods.
public enum Gain {
    /// Multiplies every sample by `gain`.
    @inlinable
    public static func apply(_ gain: Float, to samples: UnsafeMutableBufferPointer<Float>) {
        ramp(samples, from: gain, step: 0)
    }

    /// Multiplies every sample by `gain`, rounding to nearest and saturating at the Int16 range.
    @inlinable
    public static func apply(_ gain: Float, to samples: UnsafeMutableBufferPointer<Int16>) {
        ramp(samples, from: gain, step: 0)
    }

    /// Applies a linear ramp: sample `i` is multiplied by `start + step * i`.
    ///
    /// - Returns: the gain the sample after the last one would get, so that the next block
    ///   continues the ramp without a seam.
    @inlinable @discardableResult
    public static func ramp(
        _ samples: UnsafeMutableBufferPointer<Float>, from start: Float, step: Float
    ) -> Float {
        let count = samples.count
        guard count > 0, let base = samples.baseAddress else { return start }
        var i = 0
        while i < count {
            base[i] *= start + step * Float(i)
            i &+= 1
        }
        return start + step * Float(count)
    }

    /// Applies a linear ramp to PCM16 samples: sample `i` is multiplied by `start + step * i`,
    /// rounded to nearest (ties to even) and saturated at the Int16 range.
    ///
    /// - Returns: the gain of the sample after the last one.
    @inlinable @discardableResult
    public static func ramp(
        _ samples: UnsafeMutableBufferPointer<Int16>, from start: Float, step: Float
    ) -> Float {
        let count = samples.count
        guard count > 0, let base = samples.baseAddress else { return start }
        var i = 0
        while i < count {
            let gained = Float(base[i]) * (start + step * Float(i))
            base[i] = SampleConverter.roundToInt16(gained, lowerBound: -32768, upperBound: 32767)
            i &+= 1
        }
        return start + step * Float(count)
    }

    /// A linear fade from silence to full level over all of `samples`: the first sample is
    /// silenced and the sample after the last would be at unity.
    @inlinable
    public static func fadeIn(_ samples: UnsafeMutableBufferPointer<Int16>) {
        guard !samples.isEmpty else { return }
        ramp(samples, from: 0, step: 1 / Float(samples.count))
    }

    /// A linear fade from full level to silence over all of `samples`: the first sample is
    /// unchanged and the sample after the last would be silent.
    @inlinable
    public static func fadeOut(_ samples: UnsafeMutableBufferPointer<Int16>) {
        guard !samples.isEmpty else { return }
        ramp(samples, from: 1, step: -1 / Float(samples.count))
    }

    /// A linear fade-in over all of `samples` (Float32).
    @inlinable
    public static func fadeIn(_ samples: UnsafeMutableBufferPointer<Float>) {
        guard !samples.isEmpty else { return }
        ramp(samples, from: 0, step: 1 / Float(samples.count))
    }

    /// A linear fade-out over all of `samples` (Float32).
    @inlinable
    public static func fadeOut(_ samples: UnsafeMutableBufferPointer<Float>) {
        guard !samples.isEmpty else { return }
        ramp(samples, from: 1, step: -1 / Float(samples.count))
    }
}

/// A gain ramp that continues across blocks: the player's fade-out on `stop` spans as many
/// device periods as it needs.
public struct GainRamp: Sendable, Equatable {
    /// The gain of the next sample.
    public private(set) var gain: Float
    /// The gain the ramp ends at.
    public let target: Float
    /// The change of gain per sample.
    public let step: Float
    /// Samples left before the ramp reaches its target.
    public private(set) var remaining: Int

    /// A ramp from `start` to `target` over `length` samples (at least 1).
    public init(from start: Float, to target: Float, length: Int) {
        let length = max(1, length)
        self.gain = start
        self.target = target
        self.step = (target - start) / Float(length)
        self.remaining = length
    }

    /// Whether every sample of the ramp has been applied.
    public var isFinished: Bool { remaining == 0 }

    /// Applies the next part of the ramp to `samples`; samples beyond the ramp's end get
    /// the target gain.
    public mutating func apply(to samples: UnsafeMutableBufferPointer<Int16>) {
        let inRamp = min(remaining, samples.count)
        Gain.ramp(UnsafeMutableBufferPointer(rebasing: samples[0..<inRamp]), from: gain, step: step)
        remaining -= inRamp
        gain = remaining == 0 ? target : gain + step * Float(inRamp)
        if inRamp < samples.count, target != 1 {
            Gain.apply(target, to: UnsafeMutableBufferPointer(rebasing: samples[inRamp...]))
        }
    }

    /// Applies the next part of the ramp to Float32 `samples`.
    public mutating func apply(to samples: UnsafeMutableBufferPointer<Float>) {
        let inRamp = min(remaining, samples.count)
        Gain.ramp(UnsafeMutableBufferPointer(rebasing: samples[0..<inRamp]), from: gain, step: step)
        remaining -= inRamp
        gain = remaining == 0 ? target : gain + step * Float(inRamp)
        if inRamp < samples.count, target != 1 {
            Gain.apply(target, to: UnsafeMutableBufferPointer(rebasing: samples[inRamp...]))
        }
    }
}
