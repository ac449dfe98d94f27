/// Settings of the ``TurnEndpointer``, in milliseconds, probabilities and PCM16 RMS units.
public struct TurnEndpointerConfiguration: Hashable, Sendable {
    /// A frame is speech at or above this VAD probability (Silero's own default)...
    public var speechProbability: Float = 0.5
    /// ...and silence below this one (hysteresis: Silero's default, 0.15 under).
    public var silenceProbability: Float = 0.35
    /// Speech starts after this much of it (VAD frames above the threshold, not back to back:
    /// a short word's syllables may straddle a quiet frame).
    public var minimumSpeechMilliseconds: Int = 96
    /// ...and only louder than this RMS: Silero hears speech in babble far below the
    /// learner, which must not start a turn. The 300-RMS gate's start factor by default.
    public var minimumLevel: Double = 360
    /// At a pause this long, smart-turn is asked whether the turn sounds finished.
    public var pauseMilliseconds: Int = 200
    /// A pause this long ends the turn whatever the model said.
    public var maximumPauseMilliseconds: Int = 3_000
    /// smart-turn's probability at or above which the turn is finished. pipecat's 0.5 cuts
    /// more than half of learners' mid-phrase hesitations on recorded voices; 0.9 about a
    /// quarter, at the cost of more finished turns waiting for the pause ceiling
    /// (docs/performance.md, the turn-taking proof).
    public var finishedProbability: Float = 0.9
    /// The longest turn.
    public var maximumTurnMilliseconds: Int = 60_000

    public init() {}
}

/// Where a turn starts and ends, decided by learned models instead of levels: Silero VAD says
/// which 32 ms frames hold speech; at each pause of ``TurnEndpointerConfiguration/pauseMilliseconds``
/// the caller asks smart-turn about the last 8 s and hands its answer to ``answer(_:)``. A
/// finished-sounding pause ends the turn at once; an unfinished one keeps listening until
/// speech resumes (and the next pause is asked about) or the pause reaches its ceiling.
///
/// Positions are sample counts of the caller's stream (the recorder's 24 kHz), so decisions
/// are exact and repeatable. It allocates nothing.
public struct TurnEndpointer: Sendable {
    /// Why a turn ended.
    public enum Ending: Equatable, Sendable {
        /// smart-turn heard a finished turn, with its probability.
        case finished(probability: Float)
        /// The pause reached its ceiling (the model said unfinished, or was not asked in time).
        case pauseCeiling
        /// The turn reached its maximum length.
        case maximumLength
    }

    /// What a frame or an answer changed.
    public enum Decision: Equatable, Sendable {
        case none
        /// Speech started at `onset` (the first speech frame's start).
        case speechStarted(onset: Int)
        /// A pause reached ``TurnEndpointerConfiguration/pauseMilliseconds``: ask smart-turn
        /// about the audio up to now. The pause began at `pauseStart`.
        case askModel(pauseStart: Int)
        /// smart-turn said unfinished: still listening.
        case stillListening(probability: Float)
        /// Speech resumed after a pause.
        case resumed
        /// The turn is over; its speech ended at `end`.
        case ended(end: Int, ending: Ending)
    }

    public let configuration: TurnEndpointerConfiguration
    public let sampleRate: Int
    public private(set) var inSpeech = false
    /// VAD speech heard in the turn, in samples.
    public private(set) var speechSamples = 0
    /// Where the speech in progress began, nil when none is.
    public var onsetOfSpeechInProgress: Int? { inSpeech ? onset : nil }

    private var candidateOnset: Int?
    private var candidateSpeech = 0
    private var onset = 0
    private var pauseStart: Int?
    private var asked = false
    private var lastSpeechEnd = 0
    private let frameSamples: Int

    public init(configuration: TurnEndpointerConfiguration = TurnEndpointerConfiguration(), sampleRate: Int = 24_000) {
        self.configuration = configuration
        self.sampleRate = sampleRate
        frameSamples = 512 * sampleRate / 16_000
    }

    private func samples(_ milliseconds: Int) -> Int { milliseconds * sampleRate / 1000 }

    /// Forgets the turn in progress.
    public mutating func reset() {
        inSpeech = false
        candidateOnset = nil
        pauseStart = nil
        asked = false
        speechSamples = 0
    }

    /// One VAD frame: its speech probability, the stream position where it ends, its RMS.
    /// `minimumSpeechMilliseconds` overrides the configuration's for a start (voice barge-in
    /// over an echo-cancelled input asks for longer speech: the canceller's residue of the
    /// kiosk's own voice comes in short bursts that Silero hears as speech).
    public mutating func frame(probability: Float, end: Int, level: Double, minimumSpeechMilliseconds: Int? = nil) -> Decision {
        let start = end - frameSamples
        let speech = probability >= configuration.speechProbability
        guard inSpeech else {
            if speech && level >= configuration.minimumLevel {
                if candidateOnset == nil { candidateOnset = start; candidateSpeech = 0 }
                candidateSpeech += frameSamples
                if candidateSpeech >= samples(minimumSpeechMilliseconds ?? configuration.minimumSpeechMilliseconds) {
                    inSpeech = true
                    onset = candidateOnset!
                    candidateOnset = nil
                    lastSpeechEnd = end
                    speechSamples = candidateSpeech
                    pauseStart = nil
                    asked = false
                    return .speechStarted(onset: onset)
                }
            } else if probability < configuration.silenceProbability, let c = candidateOnset, end - c > samples(500) {
                candidateOnset = nil  // a click or a cough, not speech
            }
            return .none
        }
        if end - onset >= samples(configuration.maximumTurnMilliseconds) {
            inSpeech = false
            return .ended(end: end, ending: .maximumLength)
        }
        if speech {
            speechSamples += frameSamples
            lastSpeechEnd = end
            if pauseStart != nil {
                pauseStart = nil
                asked = false
                return .resumed
            }
            return .none
        }
        if probability < configuration.silenceProbability, pauseStart == nil {
            pauseStart = lastSpeechEnd
        }
        guard let pause = pauseStart else { return .none }
        if end - pause >= samples(configuration.maximumPauseMilliseconds) {
            inSpeech = false
            return .ended(end: lastSpeechEnd, ending: .pauseCeiling)
        }
        if !asked, end - pause >= samples(configuration.pauseMilliseconds) {
            asked = true
            return .askModel(pauseStart: pause)
        }
        return .none
    }

    /// smart-turn's answer to the last ``Decision/askModel(pauseStart:)``. An answer that comes
    /// after speech resumed is stale and ignored.
    public mutating func answer(_ probability: Float) -> Decision {
        guard inSpeech, pauseStart != nil, asked else { return .none }
        if probability >= configuration.finishedProbability {
            inSpeech = false
            return .ended(end: lastSpeechEnd, ending: .finished(probability: probability))
        }
        return .stillListening(probability: probability)
    }
}
