#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Settings of the ``SpeechDetector``, all in milliseconds or PCM16 RMS units.
public struct SpeechDetectorConfiguration: Hashable, Sendable {
    /// The iOS client's gate: a turn at or below this RMS holds no speech.
    public var gateThreshold: Double = SpeechGate.defaultThreshold
    /// Speech starts above this multiple of the gate (hysteresis: harder to start...).
    public var startFactor: Double = 1.2
    /// ...and ends below this multiple of the gate (...than to keep going).
    public var stopFactor: Double = 0.8
    /// Both thresholds are raised to this multiple of the noise floor in a noisy room.
    public var noiseFactor: Double = 3
    /// Speech shorter than this is a click or a cough, not a turn. Counted in loud blocks,
    /// not back to back: words dip between syllables far below any threshold.
    public var minimumSpeechMilliseconds: Int = 250
    /// A pause this long before the minimum is reached ends the candidate (a click, then
    /// nothing); shorter ones are the gaps between syllables ("Ex-cuse": the "k" is silent).
    public var syllablePauseMilliseconds: Int = 150
    /// Speech must reach its minimum within this long of its first loud block, or that
    /// block was noise; it bounds how far back the recorder's pre-roll has to reach.
    public var onsetWindowMilliseconds: Int = 1_000
    /// Silence after speech that ends the turn.
    public var hangoverMilliseconds: Int = 700
    /// The longest turn; a turn is cut here.
    public var maximumTurnMilliseconds: Int = 60_000
    /// While the kiosk speaks over an echo-cancelled input (voice barge-in), speech must pass
    /// this RMS (in blocks adding up to ``bargeInMinimumSpeechMilliseconds``), not the
    /// gate's: the canceller leaves a residue of the kiosk's own voice (10 ms blocks measured
    /// up to RMS 701 on PulseAudio's WebRTC canceller and 2836 on PipeWire's, with the
    /// speaker 13 dB down at the microphone; PipeWire's loud blocks never added up to more
    /// than 80 ms), and a learner who means to interrupt speaks up.
    public var bargeInThreshold: Double = 1_200
    /// ...for at least this long.
    public var bargeInMinimumSpeechMilliseconds: Int = 300
    /// ...and within this many dB of the kiosk's own level (the loudest 20 ms it played in
    /// the last half second, ``StreamingPlayer/outputLevel``): the least the speaker is
    /// attenuated on its way to the microphone, before the canceller. A canceller's residue is
    /// about that echo at most, also when it has lost track of it (PipeWire's graph stalled on
    /// a loaded two-core CI host, and 300 ms of the tutor's own voice over 1,200 RMS stopped
    /// its reply). The Geigel double-talk rule, with the kiosk's own level as the far end.
    /// 12 dB, in the tests' room (the echo 13 dB down): the learner still interrupts within
    /// 0.5 s at the median, on espeak-ng's phrases and on recorded human voices, and an echo a
    /// few dB over the raw one does not (docs/audio.md has the figures).
    public var bargeInEchoLossDecibels: Double = 12

    /// What speech must pass to interrupt the kiosk while it plays at `kioskLevel` (PCM16
    /// RMS): the barge-in threshold, or the kiosk's level less the echo loss if louder.
    public func bargeInLevel(kioskLevel: Double) -> Double {
        max(bargeInThreshold, kioskLevel * pow(10, -bargeInEchoLossDecibels / 20))
    }

    public init() {}
}

/// Decides where speech starts and ends in a stream of PCM16 blocks, better than a single RMS
/// threshold: separate start and stop thresholds (hysteresis) derived from the 300-RMS gate,
/// an adaptive noise floor that raises them in a noisy room, a minimum speech length, an
/// end-of-turn silence (hangover) and a maximum turn length.
///
/// It works in sample counts, not wall time, so its decisions are exact and repeatable: the
/// end of a turn is decided on the first block that completes the hangover. Feed it blocks
/// of one device period (10 ms by default). It allocates nothing.
public struct SpeechDetector: Sendable {
    /// What a block changed.
    public enum Decision: Equatable, Sendable {
        /// Nothing changed.
        case none
        /// Speech has lasted the minimum length; it began at `onset` (a sample index of the
        /// stream, counted from the detector's first block).
        case speechStarted(onset: Int)
        /// The hangover has passed since speech was last heard at `end`: the turn is over.
        case speechEnded(end: Int)
        /// The turn reached the maximum length at `end`.
        case maximumReached(end: Int)
    }

    public let configuration: SpeechDetectorConfiguration
    public let sampleRate: Int

    /// The running estimate of the room's noise RMS.
    public private(set) var noiseFloor: Double = 0
    /// Samples seen so far.
    public private(set) var position = 0
    /// Whether speech is in progress (confirmed).
    public private(set) var inSpeech = false
    /// Where the speech in progress began (its first loud block), nil when none is.
    public var onsetOfSpeechInProgress: Int? { inSpeech ? speechOnset : nil }

    private var candidateOnset: Int?
    /// The first loud block of the last candidate dropped for a pause (a short first word
    /// before a gap: "Front … Center", or "What" held down by an echo canceller before
    /// "should"); speech confirmed within the onset window of it began there.
    private var droppedOnset: Int?
    /// Loud samples, and the pause since the last loud block, of the candidate.
    private var candidateLoudSamples = 0
    private var candidatePauseSamples = 0
    private var speechOnset = 0
    private var lastSpeechEnd = 0
    private let minimumSpeechSamples: Int
    private let bargeInMinimumSpeechSamples: Int
    private let syllablePauseSamples: Int
    private let onsetWindowSamples: Int
    private let hangoverSamples: Int
    private let maximumSamples: Int

    public init(configuration: SpeechDetectorConfiguration = SpeechDetectorConfiguration(), sampleRate: Int = 24_000) {
        self.configuration = configuration
        self.sampleRate = sampleRate
        minimumSpeechSamples = configuration.minimumSpeechMilliseconds * sampleRate / 1000
        bargeInMinimumSpeechSamples = configuration.bargeInMinimumSpeechMilliseconds * sampleRate / 1000
        syllablePauseSamples = configuration.syllablePauseMilliseconds * sampleRate / 1000
        onsetWindowSamples = max(configuration.onsetWindowMilliseconds * sampleRate / 1000,
                                 max(minimumSpeechSamples, bargeInMinimumSpeechSamples))
        hangoverSamples = configuration.hangoverMilliseconds * sampleRate / 1000
        maximumSamples = configuration.maximumTurnMilliseconds * sampleRate / 1000
    }

    /// The threshold a block must exceed to count as speech when none is in progress.
    public var startThreshold: Double {
        max(configuration.gateThreshold * configuration.startFactor, noiseFloor * configuration.noiseFactor)
    }

    /// The threshold below which a block counts as silence during speech.
    public var stopThreshold: Double {
        max(configuration.gateThreshold * configuration.stopFactor, noiseFloor * configuration.noiseFactor * 0.8)
    }

    /// Forgets the current turn (the noise floor is kept).
    public mutating func reset() {
        inSpeech = false
        candidateOnset = nil
        droppedOnset = nil
    }

    /// How the kiosk's own voice reaches the detector.
    public enum Speaker: Sendable {
        /// The kiosk is silent.
        case silent
        /// The kiosk speaks and the input is not echo-cancelled: its voice is in the input,
        /// so no new speech may start (half-duplex); speech already in progress continues.
        case halfDuplex
        /// The kiosk speaks over an echo-cancelled input, as loud as `kioskLevel` (PCM16 RMS,
        /// ``StreamingPlayer/outputLevel``): speech may start (barge-in), but only above
        /// ``SpeechDetectorConfiguration/bargeInLevel(kioskLevel:)`` for
        /// ``SpeechDetectorConfiguration/bargeInMinimumSpeechMilliseconds``, and the
        /// canceller's residue does not teach the noise floor.
        case overEchoCancelledInput(kioskLevel: Double = 0)
    }

    /// Processes the next block.
    ///
    /// - Parameters:
    ///   - level: the block's level (``SignalLevel``).
    ///   - speaker: whether the kiosk is speaking, and how its voice reaches the input.
    public mutating func process(_ level: SignalLevel, speaker: Speaker = .silent) -> Decision {
        let start = position
        position += level.sampleCount
        let rms = level.rms
        if !inSpeech {
            switch speaker {
            case .silent:
                updateNoiseFloor(rms)
                return candidate(rms, loud: startThreshold, quiet: stopThreshold, minimum: minimumSpeechSamples,
                                 blockStart: start, blockSamples: level.sampleCount)
            case .halfDuplex:
                updateNoiseFloor(rms)
                candidateOnset = nil
                droppedOnset = nil
                return .none
            case .overEchoCancelledInput(let kioskLevel):
                // Over the canceller's residue of the kiosk's own voice, which stays under
                // the barge-in level and does not teach the noise floor.
                let loud = max(startThreshold, configuration.bargeInLevel(kioskLevel: kioskLevel))
                return candidate(rms, loud: loud, quiet: loud * configuration.stopFactor / configuration.startFactor,
                                 minimum: max(minimumSpeechSamples, bargeInMinimumSpeechSamples),
                                 blockStart: start, blockSamples: level.sampleCount)
            }
        }
        if rms > stopThreshold { lastSpeechEnd = position }
        if position - speechOnset >= maximumSamples {
            inSpeech = false
            return .maximumReached(end: position)
        }
        if position - lastSpeechEnd >= hangoverSamples {
            inSpeech = false
            return .speechEnded(end: lastSpeechEnd)
        }
        return .none
    }

    private mutating func confirmSpeech() -> Decision {
        inSpeech = true
        speechOnset = candidateOnset!
        // A word dropped as a click just before belongs to this speech, as long as the
        // recorder's ring (pre-roll plus the onset window) still reaches it.
        if let dropped = droppedOnset, position - dropped <= onsetWindowSamples { speechOnset = dropped }
        droppedOnset = nil
        lastSpeechEnd = position
        candidateOnset = nil
        return .speechStarted(onset: speechOnset)
    }

    /// Speech that may be starting. Spoken words dip between syllables far below any
    /// threshold, so the blocks above `loud` are counted, not required back to back: speech
    /// starts once they add up to `minimum`, with no pause (blocks at or under `quiet`) of
    /// ``SpeechDetectorConfiguration/syllablePauseMilliseconds`` between them and within
    /// ``SpeechDetectorConfiguration/onsetWindowMilliseconds`` of the first. Its onset is
    /// that first loud block: the turn, with its pre-roll, reaches back to the first syllable.
    private mutating func candidate(_ rms: Double, loud: Double, quiet: Double, minimum: Int,
                                    blockStart: Int, blockSamples: Int) -> Decision {
        if let onset = candidateOnset, position - onset > onsetWindowSamples { candidateOnset = nil }
        if rms > loud {
            if candidateOnset == nil {
                candidateOnset = blockStart
                candidateLoudSamples = 0
            }
            candidateLoudSamples += blockSamples
            candidatePauseSamples = 0
            if candidateLoudSamples >= minimum { return confirmSpeech() }
        } else if candidateOnset != nil, rms <= quiet {
            candidatePauseSamples += blockSamples
            if candidatePauseSamples >= syllablePauseSamples {
                // A click, not speech yet; or a short word before a pause, which the speech
                // that follows will claim. Its own claim on an earlier one, still within the
                // onset window, is kept.
                let onset = candidateOnset!
                if droppedOnset.map({ onset - $0 > onsetWindowSamples }) ?? true { droppedOnset = onset }
                candidateOnset = nil
            }
        } else {
            candidatePauseSamples = 0
        }
        return .none
    }

    /// The floor follows quiet blocks quickly down and slowly up, so speech does not drag it
    /// up but a noisier room does, over a few seconds.
    private mutating func updateNoiseFloor(_ rms: Double) {
        if noiseFloor == 0 || rms < noiseFloor {
            noiseFloor = noiseFloor == 0 ? rms : 0.7 * noiseFloor + 0.3 * rms
        } else if rms < startThreshold {
            noiseFloor += (rms - noiseFloor) * 0.01
        }
    }
}
