#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// At a pause this long, smart-turn is first asked whether the turn sounds finished.
    /// 150 ms: on the recorded hesitations it cuts no more than asking at 200 ms does
    /// (docs/audio.md), and the answer comes 50 ms sooner.
    public var pauseMilliseconds: Int = 150
    /// While the learner stays silent after an unfinished answer, smart-turn is asked again
    /// at these points into the pause, each with its own threshold (``finishedProbability``'s
    /// distance from 1 times `distance`): its answer moves as the silence grows (on the
    /// tuning voices a finished answer's median is 0.93 at 150 ms and 0.97 at 250 ms, its
    /// 25th percentile 0.22 and 0.66), and a hesitation's climbs too (median 0.07, then 0.21,
    /// 0.68 at 500 ms), so the threshold rises with the pause: 0.96 at 250 ms. Chosen on the
    /// tuning voices only (``HesitantSpeech``: smart-turn's answers through each pause of 312
    /// stimuli in quiet and 312 at 10 dB SNR, offline); questions at 350, 500, 700, 1,000 and
    /// 1,400 ms (at 0.99, where hesitations reach too) ended no further answer there and cut
    /// none fewer, so smart-turn runs at most twice a pause. In the proof the second question
    /// ends a finished answer sooner in noise (tuning p50 410 → 290 ms at 10 dB SNR) for more
    /// cut-offs (docs/audio.md has both sets' figures). It is asked only if the first answer
    /// was 0.85 or more: a hesitation smart-turn heard as one at 150 ms waits for the ceiling
    /// instead of being asked again as its probability climbs (offline on the tuning set, the
    /// cut-offs in quiet 15 → 12 % at 0.8 s, at 10 dB SNR 21 → 18 %, no finished answer's end
    /// later at p50 or p90; 0.85 is the least gate that does it there), and smart-turn runs
    /// 1.08 times a pause instead of 1.72 (the daemon's CPU with the models on). The gate
    /// falls to 0 as the room's SNR falls from 25 to 12 dB: at 10 dB SNR it sent the held-out
    /// voices' median finished answer to the ceiling (440 → 2040 ms; the tuning voices' did
    /// not move), a finding of the held-out set, so that set no longer stands apart for it.
    /// Points before ``pauseMilliseconds`` are skipped.
    public var laterQuestions: [Question] = [Question(250, distance: 4.0 / 7, askedAbove: 0.85)]

    /// A later question: its point into the pause, its threshold's distance from 1 as a
    /// fraction of the first question's, and the answer before it below which it is not asked
    /// (the pause then waits for the ceiling).
    public struct Question: Hashable, Sendable {
        public var milliseconds: Int
        public var distance: Float
        public var askedAbove: Float
        public init(_ milliseconds: Int, distance: Float, askedAbove: Float = 0) {
            self.milliseconds = milliseconds
            self.distance = distance
            self.askedAbove = askedAbove
        }
    }
    /// smart-turn is asked this long before the pause reaches that point, about the pause
    /// heard so far played on back and forth to its length (``Decision/askModel(pauseStart:continuing:)``),
    /// and its answer is taken when the pause gets there: the ~100 ms the model takes to answer
    /// no longer comes on top of the pause. 0 asks at the point itself, on the audio as heard.
    public var questionLeadMilliseconds: Int = 96
    /// A pause this long ends the turn whatever the model said. 2 s: the ceiling is what a
    /// finished answer the model hears as unfinished waits (a phrase that ends a clause, not a
    /// sentence), and what a learner may pause for without being cut off (it counts from where
    /// Silero hears the pause begin, so a 2 s hesitation resumes before it); 3 s made those
    /// answers wait a second longer (the proof's p90 3.1 → 2.1 s).
    public var maximumPauseMilliseconds: Int = 2_000
    /// smart-turn's probability at or above which the turn is finished at the first question,
    /// in a quiet room. pipecat's 0.5 cuts more than half of learners' mid-phrase hesitations
    /// on recorded voices; 0.93 at most a sixth (docs/audio.md, the turn-taking proof). The
    /// later questions' thresholds keep their distance from 1 in proportion
    /// (``laterQuestions``), and in noise every threshold rises (``finishedThreshold``).
    public var finishedProbability: Float = 0.93
    /// The longest turn.
    public var maximumTurnMilliseconds: Int = 60_000
    /// How much of a pause the model already heard as unfinished (and the learner then went
    /// on) smart-turn hears when asked again: a two-second search for a word, played to it
    /// whole, makes the end of the phrase sound unfinished too (half the hesitated phrases
    /// waited for the ceiling); kept this short it hears the phrase as said (docs/audio.md).
    public var keptPauseMilliseconds: Int = 200
    /// Speech the room makes besides the learner (the next kiosk, a hall's babble): Silero
    /// hears five-voice babble as speech in 97 % of its frames, so by the VAD alone it starts
    /// turns and fills every pause of a learner speaking over it (the turn ran 60 s). Once the
    /// room's speech level is known, a turn starts only this much louder, and in a turn speech
    /// below it, or this far below the learner's voice, is a pause.
    public var backgroundMarginDecibels: Double = 6
    public var voiceMarginDecibels: Double = 10
    /// The room's speech is learned from speech that does not start a turn, from a turn whose
    /// voice rose this much after this long unbroken at its first level (it began on the
    /// room's speech and the learner came in over it), and from a turn this long unbroken with
    /// no voice rising over it (it is discarded, ``Ending/backgroundSpeech``). Unbroken: not
    /// one 32 ms frame Silero calls silence. Babble has none in 60 s; the proof's readers went
    /// at most 6.2 s without one: a breath is enough. Forgotten after this much of the room heard
    /// without it (frames the recorder masks while the kiosk speaks do not count).
    public var riseDecibels: Double = 8
    public var riseAfterMilliseconds: Int = 2_000
    public var backgroundTurnMilliseconds: Int = 12_000
    public var backgroundMemoryMilliseconds: Int = 10_000

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
        /// Speech that never paused and that no voice rose over: the room's, not an answer.
        case backgroundSpeech
    }

    /// What a frame or an answer changed.
    public enum Decision: Equatable, Sendable {
        case none
        /// Speech started at `onset` (the first speech frame's start).
        case speechStarted(onset: Int)
        /// A pause is ``TurnEndpointerConfiguration/questionLeadMilliseconds`` short of
        /// a question point (``TurnEndpointerConfiguration/pauseMilliseconds``, then its ``TurnEndpointerConfiguration/laterQuestions``): ask smart-turn about the audio up to now with the pause
        /// continued by `continuing` samples (``VoiceActivityStream/copyRecent(into:omitting:continuing:)``),
        /// that is about the moment the pause reaches its question point. The pause began at
        /// `pauseStart`. The answer (``answer(_:)``) counts from that point on.
        case askModel(pauseStart: Int, continuing: Int)
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
    private var candidateLevel = 0.0
    private var onset = 0
    private var pauseStart: Int?
    private var asked = false
    /// Which question of the pause is next or in flight: 0 the first, k the k-th later one.
    private var questionIndex = 0
    /// Where the pause being asked about reaches its question point, and the answer that came
    /// before it did (held until then: the learner may still go on).
    private var questionPoint = 0
    private var earlyAnswer: Float?
    private var lastFrameEnd = 0
    private var lastSpeechEnd = 0
    private let frameSamples: Int
    /// The turn's pauses the model heard as unfinished before the learner went on, oldest
    /// first: (where the pause began, where speech resumed). Room for a few is reserved once.
    public private(set) var waitedPauses: [(start: Int, end: Int)] = []
    private static let waitedPausesKept = 8
    /// The room's levels in dB (RMS re one PCM16 step), slow averages of the frames Silero
    /// calls speech and of those it calls silence; nil until heard. They outlast ``reset()``:
    /// the room does not change between turns.
    public private(set) var speechLevel: Double?
    public private(set) var noiseLevel: Double?
    /// The learner's voice in the turn (dB): rises within a few frames to louder speech, falls
    /// over about three seconds of it; and the level the turn began at.
    public private(set) var voiceLevel: Double?
    private var startLevel = 0.0
    /// The turn's last frame of silence by Silero (its onset before one), and whether a voice
    /// rose over the level it began at.
    private var unbrokenSince = 0
    private var rose = false
    /// Speech the room makes that is not the learner's (dB), and how much of the room was
    /// heard since it last was (frames not masked).
    public private(set) var backgroundSpeechLevel: Double?
    private var unheardSamples = 0

    public init(configuration: TurnEndpointerConfiguration = TurnEndpointerConfiguration(), sampleRate: Int = 24_000) {
        self.configuration = configuration
        self.sampleRate = sampleRate
        frameSamples = 512 * sampleRate / 16_000
        waitedPauses.reserveCapacity(Self.waitedPausesKept)
    }

    private func samples(_ milliseconds: Int) -> Int { milliseconds * sampleRate / 1000 }

    /// Forgets the turn in progress.
    public mutating func reset() {
        inSpeech = false
        candidateOnset = nil
        pauseStart = nil
        asked = false
        questionIndex = 0
        earlyAnswer = nil
        speechSamples = 0
        waitedPauses.removeAll(keepingCapacity: true)
    }

    /// What smart-turn is asked about at a pause: the last 8 s with every pause of the turn it
    /// already heard as unfinished shortened to ``TurnEndpointerConfiguration/keptPauseMilliseconds``.
    /// The spans of the stream (positions in samples) left out of the window, oldest first.
    /// (The audio before the turn stays: cut to zeros from the pre-roll on, the proof's
    /// finished phrases sounded unfinished, p50 end 270 → 3,020 ms.)
    public func omittedSpans(into spans: inout [(start: Int, end: Int)]) {
        spans.removeAll(keepingCapacity: true)
        let kept = samples(configuration.keptPauseMilliseconds)
        for pause in waitedPauses where pause.end - pause.start > kept {
            spans.append((pause.start + kept, pause.end))
        }
    }

    /// One VAD frame: its speech probability, the stream position where it ends, its RMS (0:
    /// not measured, e.g. masked while the kiosk speaks half-duplex).
    /// `minimumSpeechMilliseconds` overrides the configuration's for a start (voice barge-in
    /// over an echo-cancelled input asks for longer speech: the canceller's residue of the
    /// kiosk's own voice comes in short bursts that Silero hears as speech).
    public mutating func frame(probability: Float, end: Int, level: Double, minimumSpeechMilliseconds: Int? = nil) -> Decision {
        let start = end - frameSamples
        lastFrameEnd = end
        let decibels = 20 * log10(max(level, 1))
        // Forgotten after a while of hearing the room without it; frames the recorder masked
        // (while the kiosk speaks, level 0) say nothing of whether it stopped.
        if backgroundSpeechLevel != nil, level > 0 {
            unheardSamples += frameSamples
            if unheardSamples > samples(configuration.backgroundMemoryMilliseconds) { backgroundSpeechLevel = nil }
        }
        // Speech by Silero that is the learner's: loud enough to start a turn, and in a turn
        // not down at the room's own speech (babble goes on under the learner).
        var speech = probability >= configuration.speechProbability
        if speech, level > 0 {
            if inSpeech, let background = backgroundSpeechLevel, let voice = voiceLevel,
               decibels < (pauseStart == nil ? background + configuration.backgroundMarginDecibels / 2
                                              : max(background + configuration.backgroundMarginDecibels, voice - configuration.voiceMarginDecibels)) {
                // With hysteresis: the learner's voice pauses only down at the room's level
                // (its soft syllables are not pauses), and resumes only well above it (the
                // room's louder moments do not break a pause; each break was one more question).
                learnBackground(decibels)
                speech = false
            } else if !inSpeech, decibels < startFloor {
                // Kept up to date while it lasts, never begun here: speech under the minimum
                // level is a quiet voice or the edge of a sound, not the room's talk.
                if backgroundSpeechLevel != nil, level >= configuration.minimumLevel { learnBackground(decibels) }
                speech = false
            }
        }
        // About 1 s of frames each: a word's level or a door's slam moves them little. A level
        // of 0 is a frame the recorder masked (while the kiosk speaks), not a quiet room.
        if speech && level >= configuration.minimumLevel {
            speechLevel = speechLevel.map { $0 + (decibels - $0) / 32 } ?? decibels
        } else if probability < configuration.silenceProbability && level > 0 {
            noiseLevel = noiseLevel.map { $0 + (decibels - $0) / 32 } ?? decibels
        }
        guard inSpeech else {
            if let c = candidateOnset, end - c > samples(500) {
                candidateOnset = nil  // not enough speech within half a second: a click, a cough, the room
            }
            if speech && level >= configuration.minimumLevel {
                if candidateOnset == nil { candidateOnset = start; candidateSpeech = 0; candidateLevel = 0 }
                candidateLevel += decibels
                candidateSpeech += frameSamples
                if candidateSpeech >= samples(minimumSpeechMilliseconds ?? configuration.minimumSpeechMilliseconds) {
                    inSpeech = true
                    onset = candidateOnset!
                    candidateOnset = nil
                    startLevel = candidateLevel / Double(candidateSpeech / frameSamples)
                    voiceLevel = startLevel
                    unbrokenSince = onset
                    rose = false
                    lastSpeechEnd = end
                    speechSamples = candidateSpeech
                    pauseStart = nil
                    asked = false
                    questionIndex = 0
                    earlyAnswer = nil
                    waitedPauses.removeAll(keepingCapacity: true)
                    return .speechStarted(onset: onset)
                }
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
            if level > 0, let voice = voiceLevel {
                // Up to a louder voice within a few frames (not to one bang), down over about
                // three seconds of speech.
                let followed = voice + (decibels - voice) / (decibels > voice ? 4 : 96)
                voiceLevel = followed
                if !rose, followed >= startLevel + configuration.riseDecibels {
                    rose = true
                    // Unbroken at a lower level for a while, then a voice over it: the turn
                    // began on the room's speech, and a learner came in over it.
                    if backgroundSpeechLevel == nil, end - unbrokenSince >= samples(configuration.riseAfterMilliseconds), unbrokenSince == onset {
                        learnBackground(startLevel)
                    }
                }
            }
            if !rose, end - unbrokenSince >= samples(configuration.backgroundTurnMilliseconds) {
                inSpeech = false
                learnBackground(startLevel)
                return .ended(end: end, ending: .backgroundSpeech)
            }
            if let pause = pauseStart {
                // Waited: the pause reached its (first) question point (asked ahead or not,
                // answered or not); one the learner left before it was only a breath.
                if questionIndex > 0 || (asked && start >= questionPoint) {
                    if waitedPauses.count == Self.waitedPausesKept { waitedPauses.removeFirst() }
                    waitedPauses.append((pause, start))
                }
                pauseStart = nil
                asked = false
                questionIndex = 0
                earlyAnswer = nil
                return .resumed
            }
            return .none
        }
        if probability < configuration.silenceProbability { unbrokenSince = end }
        // A pause: Silero hears none, or only the room under where the learner's voice was.
        if probability < configuration.silenceProbability || probability >= configuration.speechProbability, pauseStart == nil {
            pauseStart = lastSpeechEnd
        }
        guard let pause = pauseStart else { return .none }
        if end - pause >= samples(configuration.maximumPauseMilliseconds) {
            inSpeech = false
            return .ended(end: lastSpeechEnd, ending: .pauseCeiling)
        }
        if asked {
            // The pause reached its question point with the answer already in.
            if let early = earlyAnswer, end >= questionPoint {
                earlyAnswer = nil
                return decide(early)
            }
            return .none
        }
        guard let question = question(questionIndex).map({ samples($0.milliseconds) }) else { return .none }  // no more: the ceiling
        if end - pause >= question - samples(configuration.questionLeadMilliseconds) {
            asked = true
            questionPoint = pause + question
            return .askModel(pauseStart: pause, continuing: max(0, questionPoint - end))
        }
        return .none
    }

    /// Question `index` of a pause: where it is asked and its threshold in a quiet room (0:
    /// ``TurnEndpointerConfiguration/pauseMilliseconds`` at ``TurnEndpointerConfiguration/finishedProbability``,
    /// then the ``TurnEndpointerConfiguration/laterQuestions`` after it); nil past the last.
    func question(_ index: Int) -> (milliseconds: Int, quietThreshold: Float, askedAbove: Float)? {
        let first = configuration.finishedProbability
        guard index > 0 else { return (configuration.pauseMilliseconds, first, 0) }
        var k = 0
        for later in configuration.laterQuestions where later.milliseconds > configuration.pauseMilliseconds {
            k += 1
            if k == index { return (later.milliseconds, 1 - (1 - first) * later.distance, later.askedAbove) }
        }
        return nil
    }

    /// How loud speech must be to start a turn, in dB: the configuration's minimum, and
    /// ``TurnEndpointerConfiguration/backgroundMarginDecibels`` above the room's own speech.
    public var startFloor: Double {
        var floor = 20 * log10(max(configuration.minimumLevel, 1))
        if let background = backgroundSpeechLevel {
            floor = max(floor, background + configuration.backgroundMarginDecibels)
        }
        return floor
    }

    /// Speech by Silero that is not the learner's: the room's level of it, about half a
    /// second of frames (babble moves it little, a neighbour's sentence does).
    private mutating func learnBackground(_ decibels: Double) {
        backgroundSpeechLevel = backgroundSpeechLevel.map { $0 + (decibels - $0) / 16 } ?? decibels
        unheardSamples = 0
    }

    /// The probability that ends a turn at the question now due: its quiet threshold
    /// (``TurnEndpointerConfiguration/finishedProbability`` for the first, then
    /// ``TurnEndpointerConfiguration/laterQuestions``), rising as the room's signal-to-noise
    /// ratio falls from 25 dB to 12 dB until its distance from 1 is three quarters of the
    /// quiet one (0.93 → 0.9475 at the first question). In noise smart-turn hears finished
    /// turns in hesitations more often (at 10 dB SNR in pink noise the tuning set's median
    /// hesitation scores 0.39 at 150 ms, in quiet 0.07): offline, the quiet thresholds cut up
    /// to 29 % of its hesitations there, these 24 %; halving the distance cut 18 % but sent
    /// the median finished answer to the ceiling (docs/audio.md).
    public var finishedThreshold: Float {
        let quiet = question(questionIndex)?.quietThreshold ?? configuration.finishedProbability
        return 1 - (1 - quiet) * (1 - 0.25 * Float(noisiness))
    }

    /// The room's signal-to-noise ratio in dB, once both levels are known.
    public var signalToNoise: Double? {
        guard let speechLevel, let noiseLevel else { return nil }
        return speechLevel - noiseLevel
    }

    /// 0 at 25 dB SNR or more, 1 at 12 dB or less, linear between.
    private var noisiness: Double {
        guard let snr = signalToNoise else { return 0 }
        return min(1, max(0, (25 - snr) / 13))
    }

    /// smart-turn's answer to the last ``Decision/askModel(pauseStart:continuing:)``. An answer
    /// that comes after speech resumed is stale and ignored; one that comes before the pause
    /// reaches its question point is held until it does (``frame(probability:end:level:minimumSpeechMilliseconds:)``
    /// then decides with it).
    public mutating func answer(_ probability: Float) -> Decision {
        guard inSpeech, pauseStart != nil, asked else { return .none }
        if lastFrameEnd < questionPoint {
            earlyAnswer = probability
            return .none
        }
        return decide(probability)
    }

    private mutating func decide(_ probability: Float) -> Decision {
        if probability >= finishedThreshold {
            inSpeech = false
            return .ended(end: lastSpeechEnd, ending: .finished(probability: probability))
        }
        // Unfinished for now: the next question of the pause, if there is one and this
        // answer was high enough for it, is asked as the silence reaches it.
        asked = false
        questionIndex += 1
        // In noise smart-turn's first answer says less (finished answers score lower), so
        // the gate opens as the room's SNR falls, as the thresholds move (``finishedThreshold``).
        if let next = question(questionIndex), probability < next.askedAbove * Float(1 - noisiness) {
            questionIndex = configuration.laterQuestions.count + 1  // past the last: the ceiling
        }
        return .stillListening(probability: probability)
    }
}
