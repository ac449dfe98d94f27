/// The adaptive jitter buffer's arithmetic: how much audio a reply waits for before its first
/// sample (the lead), and how that lead follows the network. A value with no clock and no
/// thread of its own: ``StreamingPlayer`` keeps one on its device thread and feeds it what
/// the device played, so its rules are tested as a table (`JitterLeadTests`).
///
/// The shape is NetEQ's target delay (AIMD): an underrun doubles the lead at once and
/// covers the gap plus a step; steady playback takes it back slowly; each reply's worst
/// lateness (RFC 3550's relative transit time) sets the next reply's lead even without an
/// underrun. All figures are in samples (frames × channels) of the player's format.
public struct JitterLead: Equatable, Sendable {
    /// The lead a reply waits for now (and rebuffers to after an underrun).
    public private(set) var target: Int
    /// The configured lead: the floor the lead decays back to.
    public let minimum: Int
    /// The ceiling: a lead never grows past it.
    public let maximum: Int
    /// Taken back per second of steady playback.
    public let decayPerSecond: Int
    /// Added beyond a gap when an underrun grows the lead.
    public let step: Int
    /// 10 ms: the granularity of the device's periods, two of which are added to a measured delay.
    public let margin: Int
    /// Samples in one second.
    public let samplesPerSecond: Int
    /// Samples played without an underrun since the lead last shrank.
    private var steadyPlayed = 0

    /// The lead for `configuration` at `samplesPerMillisecond` (sample rate × channels / 1000).
    public init(configuration: StreamingPlayerConfiguration, samplesPerMillisecond: Int) {
        minimum = configuration.prebufferMilliseconds * samplesPerMillisecond
        target = minimum
        maximum = max(minimum, configuration.maximumLeadMilliseconds * samplesPerMillisecond)
        decayPerSecond = configuration.leadDecayMillisecondsPerSecond * samplesPerMillisecond
        step = configuration.leadStepMilliseconds * samplesPerMillisecond
        margin = 10 * samplesPerMillisecond
        samplesPerSecond = 1000 * samplesPerMillisecond
    }

    /// An underrun's gap is known (`starved` samples of silence so far, and data came
    /// again): the lead doubles and covers at least the gap and the step beyond it, for this
    /// reply and the ones after. A late burst is rarely the latest one: a lead that only
    /// covered this gap underran again at the next.
    public mutating func grow(afterGap starved: Int) {
        set(max(2 * target, starved + step))
        steadyPlayed = 0
    }

    /// The device played `samples` without running dry: every second of it takes
    /// ``decayPerSecond`` back, down to ``minimum``.
    public mutating func playedSteadily(_ samples: Int) {
        steadyPlayed += samples
        while steadyPlayed >= samplesPerSecond {
            steadyPlayed -= samplesPerSecond
            if target > minimum { set(max(minimum, target - decayPerSecond)) }
        }
    }

    /// The device ran dry: steady playback counts again from zero.
    public mutating func underran() { steadyPlayed = 0 }

    /// A reply ended whose latest chunk came `peakDelay` samples after its media time: the
    /// next reply starts with that lead and two periods of margin, even if this one got
    /// away without an underrun.
    public mutating func replyFinished(peakDelay: Int) {
        let needed = peakDelay + 2 * margin
        if needed > target { set(needed) }
    }

    /// `samples` in milliseconds.
    public func milliseconds(_ samples: Int) -> Int { samples * 1000 / samplesPerSecond }

    private mutating func set(_ samples: Int) { target = min(maximum, samples) }
}
