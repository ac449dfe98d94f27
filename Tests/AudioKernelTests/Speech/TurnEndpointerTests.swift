import AudioKernel
import XCTest

/// The learned endpointing rule as a state machine, on VAD probabilities and smart-turn
/// answers given by hand (the models' own tests are in SpeechModelsTests).
final class TurnEndpointerTests: XCTestCase {
    /// Frames of 32 ms at 24 kHz (768 samples); speech frames at RMS 3000 and pauses at 30 (a
    /// quiet room, 40 dB below) unless `level` says otherwise.
    func feed(_ endpointer: inout TurnEndpointer, from: inout Int, frames: Int, probability: Float, level: Double? = nil) -> [TurnEndpointer.Decision] {
        var decisions: [TurnEndpointer.Decision] = []
        for _ in 0..<frames {
            from += 768
            let d = endpointer.frame(probability: probability, end: from, level: level ?? (probability >= 0.5 ? 3_000 : 30))
            if d != .none { decisions.append(d) }
        }
        return decisions
    }

    func testSpeechStartsAfterThreeFramesWithItsFirstFrameAsOnset() {
        var e = TurnEndpointer(), at = 24_000
        XCTAssertEqual(feed(&e, from: &at, frames: 2, probability: 0.9), [])
        XCTAssertEqual(feed(&e, from: &at, frames: 1, probability: 0.9), [.speechStarted(onset: 24_000)])
    }

    func testABargeInNeedsTheLongerMinimum() {
        var e = TurnEndpointer(), at = 0
        var decisions: [TurnEndpointer.Decision] = []
        for _ in 0..<9 {  // 288 ms of speech: enough for a turn, not for a barge-in (300 ms)
            at += 768
            let d = e.frame(probability: 0.9, end: at, level: 3_000, minimumSpeechMilliseconds: 300)
            if d != .none { decisions.append(d) }
        }
        XCTAssertEqual(decisions, [])
        at += 768
        XCTAssertEqual(e.frame(probability: 0.9, end: at, level: 3_000, minimumSpeechMilliseconds: 300), .speechStarted(onset: 0))
    }

    func testSpeechQuieterThanTheMinimumLevelNeverStarts() {
        var e = TurnEndpointer(), at = 0
        XCTAssertEqual(feed(&e, from: &at, frames: 100, probability: 0.99, level: 200), [], "babble far below the learner")
        XCTAssertFalse(e.inSpeech)
    }

    func testAFinishedSoundingPauseEndsTheTurnAtTheModelsAnswer() {
        var e = TurnEndpointer(), at = 0
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        let speechEnd = at
        // 150 ms of pause is 5 frames of 32 ms (160 ms): the model is asked once, 96 ms ahead
        // (at 64 ms, about the pause carried on 86 ms: 2,064 samples).
        XCTAssertEqual(feed(&e, from: &at, frames: 7, probability: 0.05), [.askModel(pauseStart: speechEnd, continuing: 2_064)])
        XCTAssertEqual(feed(&e, from: &at, frames: 3, probability: 0.05), [], "asked once a pause")
        XCTAssertEqual(e.answer(0.95), .ended(end: speechEnd, ending: .finished(probability: 0.95)))
        XCTAssertFalse(e.inSpeech)
    }

    func testTheThresholdIsTheConfigurations() {
        var configuration = TurnEndpointerConfiguration()
        XCTAssertEqual(configuration.finishedProbability, 0.93)
        var e = TurnEndpointer(configuration: configuration), at = 0
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        _ = feed(&e, from: &at, frames: 7, probability: 0.05)
        XCTAssertEqual(e.answer(0.92), .stillListening(probability: 0.92), "0.92 is not finished at 0.93")
        configuration.finishedProbability = 0.5
        e = TurnEndpointer(configuration: configuration)
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        let end = at
        _ = feed(&e, from: &at, frames: 7, probability: 0.05)
        XCTAssertEqual(e.answer(0.8), .ended(end: end, ending: .finished(probability: 0.8)), "pipecat's 0.5")
    }

    /// In noise smart-turn hears hesitations as finished more often: every threshold's
    /// distance from 1 shrinks to three quarters once the room's SNR is 12 dB or less.
    func testNoiseRaisesTheThreshold() {
        var atThePoint = TurnEndpointerConfiguration()
        atThePoint.questionLeadMilliseconds = 0  // asked at the question point itself
        var quiet = TurnEndpointer(configuration: atThePoint), at = 0
        _ = feed(&quiet, from: &at, frames: 30, probability: 0.9)
        let quietEnd = at
        XCTAssertEqual(feed(&quiet, from: &at, frames: 5, probability: 0.05), [.askModel(pauseStart: quietEnd, continuing: 0)], "asked at 150 ms")
        XCTAssertEqual(quiet.signalToNoise ?? 0, 40, accuracy: 0.5)
        XCTAssertEqual(quiet.finishedThreshold, 0.93, accuracy: 0.0001)
        XCTAssertEqual(quiet.answer(0.94), .ended(end: quietEnd, ending: .finished(probability: 0.94)))

        var noisy = TurnEndpointer(configuration: atThePoint)
        at = 0
        _ = feed(&noisy, from: &at, frames: 40, probability: 0.05, level: 1_000)  // the room before the learner speaks
        _ = feed(&noisy, from: &at, frames: 30, probability: 0.9)
        let noisyEnd = at
        XCTAssertEqual(noisy.signalToNoise ?? 0, 9.5, accuracy: 0.5)
        XCTAssertEqual(noisy.finishedThreshold, 0.9475, accuracy: 0.0001)
        XCTAssertEqual(feed(&noisy, from: &at, frames: 5, probability: 0.05, level: 1_000), [.askModel(pauseStart: noisyEnd, continuing: 0)], "asked at 150 ms")
        XCTAssertEqual(noisy.answer(0.94), .stillListening(probability: 0.94), "0.94 is not finished in noise")
        XCTAssertEqual(noisy.finishedThreshold, 1 - 0.07 * 4 / 7 * 0.75, accuracy: 0.0001, "the next question's, in noise")
        // The kiosk's reply: the recorder masks its frames (level 0), which say nothing of the
        // room. The next turn is judged by the room's noise still.
        _ = feed(&noisy, from: &at, frames: 200, probability: 0.05, level: 0)
        XCTAssertEqual(noisy.signalToNoise ?? 0, 9.5, accuracy: 0.5, "masked frames are not a quiet room")
    }

    /// An endpointer asked at 150 ms into the pause after 30 frames of speech (asked at the
    /// point itself, no lead), answered `probability`; with where it is and where speech ended.
    private func answeredAtTheFirstQuestion(_ probability: Float) -> (TurnEndpointer, Int, Int) {
        var configuration = TurnEndpointerConfiguration()
        configuration.questionLeadMilliseconds = 0
        var e = TurnEndpointer(configuration: configuration), at = 0
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        let end = at
        XCTAssertEqual(feed(&e, from: &at, frames: 5, probability: 0.05), [.askModel(pauseStart: end, continuing: 0)], "150 ms")
        XCTAssertEqual(e.answer(probability), .stillListening(probability: probability))
        return (e, at, end)
    }

    /// An unfinished answer is not the last word: smart-turn is asked again at 250 ms into
    /// the silence, against a threshold nearer 1 (0.96), because its probability climbs
    /// with the silence for hesitations too; after that only the ceiling ends the pause.
    func testAnUnfinishedAnswerIsAskedAgainAt250Milliseconds() {
        var (e, at, end) = answeredAtTheFirstQuestion(0.9)
        XCTAssertEqual(feed(&e, from: &at, frames: 3, probability: 0.05), [.askModel(pauseStart: end, continuing: 0)], "256 ms: past 250")
        XCTAssertEqual(e.finishedThreshold, 0.96, accuracy: 0.0001)
        XCTAssertEqual(e.answer(0.955), .stillListening(probability: 0.955))
        XCTAssertEqual(feed(&e, from: &at, frames: 54, probability: 0.05), [], "no third question")
        XCTAssertEqual(feed(&e, from: &at, frames: 1, probability: 0.05), [.ended(end: end, ending: .pauseCeiling)], "2 s: the 63rd frame")

        let second: Int
        (e, at, second) = answeredAtTheFirstQuestion(0.92)
        _ = feed(&e, from: &at, frames: 3, probability: 0.05)
        XCTAssertEqual(e.answer(0.97), .ended(end: second, ending: .finished(probability: 0.97)), "finished at the second question")
    }

    /// A pause smart-turn heard as a hesitation at 150 ms (under 0.85) is not asked about
    /// again as its probability climbs with the silence: it waits for the learner or the
    /// ceiling, and smart-turn runs once.
    func testAHesitationHeardAtTheFirstQuestionIsNotAskedAgain() {
        var (e, at, end) = answeredAtTheFirstQuestion(0.84)
        XCTAssertEqual(feed(&e, from: &at, frames: 57, probability: 0.05), [], "asked again")
        XCTAssertEqual(feed(&e, from: &at, frames: 1, probability: 0.05), [.ended(end: end, ending: .pauseCeiling)])
        // In noise (9.5 dB SNR) the first answer says less: the gate is open, and a pause
        // heard at 0.5 is asked about again at 250 ms.
        var configuration = TurnEndpointerConfiguration()
        configuration.questionLeadMilliseconds = 0
        var noisy = TurnEndpointer(configuration: configuration), from = 0
        _ = feed(&noisy, from: &from, frames: 40, probability: 0.05, level: 1_000)
        _ = feed(&noisy, from: &from, frames: 30, probability: 0.9)
        let noisyEnd = from
        XCTAssertEqual(feed(&noisy, from: &from, frames: 5, probability: 0.05, level: 1_000), [.askModel(pauseStart: noisyEnd, continuing: 0)])
        XCTAssertEqual(noisy.answer(0.5), .stillListening(probability: 0.5))
        XCTAssertEqual(feed(&noisy, from: &from, frames: 3, probability: 0.05, level: 1_000), [.askModel(pauseStart: noisyEnd, continuing: 0)], "not asked again in noise")
        // The next pause is asked at its first question again.
        (e, at, _) = answeredAtTheFirstQuestion(0.3)
        XCTAssertEqual(feed(&e, from: &at, frames: 5, probability: 0.9), [.resumed])
        let next = at
        XCTAssertEqual(feed(&e, from: &at, frames: 5, probability: 0.05), [.askModel(pauseStart: next, continuing: 0)], "the next pause")
    }

    /// speech.finished_probability moves every question's threshold: their distances from 1
    /// stay in proportion.
    func testTheLaterThresholdsFollowTheFirst() {
        var configuration = TurnEndpointerConfiguration()
        configuration.finishedProbability = 0.86
        configuration.questionLeadMilliseconds = 0
        var e = TurnEndpointer(configuration: configuration), at = 0
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        _ = feed(&e, from: &at, frames: 5, probability: 0.05)
        XCTAssertEqual(e.answer(0.85), .stillListening(probability: 0.85))
        _ = feed(&e, from: &at, frames: 3, probability: 0.05)
        XCTAssertEqual(e.finishedThreshold, 0.92, accuracy: 0.0001)
    }

    func testAnUnfinishedPauseWaitsAndTheNextPauseIsAskedAgain() {
        var e = TurnEndpointer(), at = 0
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        _ = feed(&e, from: &at, frames: 7, probability: 0.05)
        XCTAssertEqual(e.answer(0.2), .stillListening(probability: 0.2))
        // A hesitation: asked again as it lasts, unfinished each time, still listening.
        for _ in 0..<20 {
            for decision in feed(&e, from: &at, frames: 1, probability: 0.05) {
                switch decision {
                case .askModel: _ = e.answer(0.2)  // asked ahead: held until its point
                case .stillListening(let p): XCTAssertEqual(p, 0.2)
                default: XCTFail("\(decision)")
                }
            }
        }
        XCTAssertEqual(feed(&e, from: &at, frames: 5, probability: 0.9), [.resumed])
        let end = at
        XCTAssertEqual(feed(&e, from: &at, frames: 7, probability: 0.05), [.askModel(pauseStart: end, continuing: 2_064)])
    }

    func testAPauseAtItsCeilingEndsTheTurnWhateverTheModelSaid() {
        var e = TurnEndpointer(), at = 0
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        let end = at
        // Unfinished at every question: 2 s is 62.5 frames, the 63rd frame of pause ends it.
        var decisions: [TurnEndpointer.Decision] = []
        for _ in 0..<63 {
            for decision in feed(&e, from: &at, frames: 1, probability: 0.05) {
                switch decision {
                case .askModel: _ = e.answer(0.1)  // held until its point: then still listening
                case .stillListening: break
                default: decisions.append(decision)
                }
            }
        }
        XCTAssertEqual(decisions, [.ended(end: end, ending: .pauseCeiling)])
    }

    func testALateAnswerAfterSpeechResumedIsIgnored() {
        var e = TurnEndpointer(), at = 0
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        _ = feed(&e, from: &at, frames: 7, probability: 0.05)
        _ = feed(&e, from: &at, frames: 3, probability: 0.9)
        XCTAssertEqual(e.answer(0.99), .none)
        XCTAssertTrue(e.inSpeech)
    }

    func testTheMaximumLengthEndsATurnThatNeverPauses() {
        var configuration = TurnEndpointerConfiguration()
        configuration.maximumTurnMilliseconds = 2_000
        var e = TurnEndpointer(configuration: configuration), at = 0
        let decisions = feed(&e, from: &at, frames: 70, probability: 0.9)
        XCTAssertEqual(decisions.first, .speechStarted(onset: 0))
        // 2 s is 62.5 frames: the 63rd ends the turn (and the speech going on starts the next).
        XCTAssertEqual(decisions.dropFirst().first, .ended(end: 63 * 768, ending: .maximumLength))
    }
}

extension TurnEndpointerTests {
    /// A pause the model heard as unfinished, after which the learner went on, is shortened to
    /// 200 ms in the window of the next question: played whole, the phrase's end sounded
    /// unfinished too (docs/audio.md).
    func testAWaitedPauseIsShortenedInTheNextQuestionsWindow() {
        var e = TurnEndpointer(), at = 0
        var spans: [(start: Int, end: Int)] = []
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        let pause = at
        _ = feed(&e, from: &at, frames: 7, probability: 0.05)
        e.omittedSpans(into: &spans)
        XCTAssertTrue(spans.isEmpty, "the first question hears everything")
        XCTAssertEqual(e.answer(0.2), .stillListening(probability: 0.2))
        _ = feed(&e, from: &at, frames: 30, probability: 0.05)  // 1.2 s of pause in all
        let resumed = at
        XCTAssertEqual(feed(&e, from: &at, frames: 20, probability: 0.9), [.resumed])
        _ = feed(&e, from: &at, frames: 7, probability: 0.05)
        e.omittedSpans(into: &spans)
        XCTAssertEqual(spans.map { [$0.start, $0.end] }, [[pause + 4_800, resumed]])
        // A pause shorter than the question (not asked about) stays; the next turn starts afresh.
        XCTAssertEqual(e.answer(0.99), .ended(end: resumed + 20 * 768, ending: .finished(probability: 0.99)))
        _ = feed(&e, from: &at, frames: 10, probability: 0.9)
        e.omittedSpans(into: &spans)
        XCTAssertTrue(spans.isEmpty)
    }
}

/// The room's own speech (babble, the next kiosk): Silero hears it as speech, so levels decide.
/// Frames at RMS 600 are the room, 2,400 (12 dB louder) a learner over it.
extension TurnEndpointerTests {
    func testSpeechThatNeverPausesWithNoVoiceOverItIsTheRoomsAndIsDiscarded() {
        var e = TurnEndpointer(), at = 0
        var decisions = feed(&e, from: &at, frames: 400, probability: 0.95, level: 600)
        XCTAssertEqual(decisions.first, .speechStarted(onset: 0))
        // 12 s unbroken from its onset (375 frames of 32 ms): no one speaks that long without a breath.
        XCTAssertEqual(decisions.dropFirst().first, .ended(end: 375 * 768, ending: .backgroundSpeech))
        XCTAssertEqual(decisions.count, 2, "the room's speech starts no turn once known: \(decisions)")
        XCTAssertEqual(e.backgroundSpeechLevel ?? 0, 20 * log10(600), accuracy: 0.5)
        // A learner 12 dB over it is heard.
        decisions = feed(&e, from: &at, frames: 4, probability: 0.95, level: 2_400)
        XCTAssertEqual(decisions, [.speechStarted(onset: 400 * 768)])
    }

    func testALongSteadyAnswerWithABreathInItIsKept() {
        // 15 s at one level, but with one 32 ms frame of silence every 5 s (a breath, shorter
        // than any question): a learner, not the room.
        var e = TurnEndpointer(), at = 0
        var decisions: [TurnEndpointer.Decision] = []
        for _ in 0..<3 {
            decisions += feed(&e, from: &at, frames: 155, probability: 0.95, level: 600)
            decisions += feed(&e, from: &at, frames: 1, probability: 0.1, level: 100)
        }
        XCTAssertEqual(decisions.first, .speechStarted(onset: 0))
        XCTAssertFalse(decisions.contains { if case .ended = $0 { return true } else { return false } }, "\(decisions)")
        XCTAssertTrue(e.inSpeech)
        XCTAssertNil(e.backgroundSpeechLevel)
    }

    func testALearnerOverTheRoomsSpeechPausesWhereTheirVoiceStops() {
        var e = TurnEndpointer(), at = 0
        XCTAssertEqual(feed(&e, from: &at, frames: 80, probability: 0.95, level: 600).first, .speechStarted(onset: 0), "the room's speech begins a turn")
        XCTAssertEqual(feed(&e, from: &at, frames: 60, probability: 0.95, level: 2_400), [])
        let voiceEnd = at
        // The room goes on (Silero still hears speech) and its louder moments (RMS 1,000, 4 dB
        // over it) do not break the pause: the learner's pause is asked about once, from where
        // the voice stopped.
        var decisions: [TurnEndpointer.Decision] = []
        for k in 0..<30 { decisions += feed(&e, from: &at, frames: 1, probability: 0.95, level: k % 3 == 2 ? 1_000 : 600) }
        XCTAssertEqual(decisions, [.askModel(pauseStart: voiceEnd, continuing: 2_064)])
        XCTAssertEqual(e.answer(0.97), .ended(end: voiceEnd, ending: .finished(probability: 0.97)))
        // After it, the room's speech starts nothing; the learner again does.
        XCTAssertEqual(feed(&e, from: &at, frames: 300, probability: 0.95, level: 600), [])
        XCTAssertEqual(feed(&e, from: &at, frames: 3, probability: 0.95, level: 2_400).count, 1)
    }

    func testASoftStartThenLouderIsNotTakenForTheRoom() {
        // A learner who begins softly and speaks up within two seconds, with a pause between:
        // no room's speech is learned, and the pause is asked about by Silero alone.
        var e = TurnEndpointer(), at = 0
        _ = feed(&e, from: &at, frames: 20, probability: 0.95, level: 600)
        _ = feed(&e, from: &at, frames: 40, probability: 0.95, level: 2_400)
        XCTAssertNil(e.backgroundSpeechLevel)
        XCTAssertEqual(feed(&e, from: &at, frames: 5, probability: 0.95, level: 600), [], "soft speech, not a pause")
    }

    func testTheRoomsSpeechIsForgottenOnceUnheard() {
        var e = TurnEndpointer(), at = 0
        _ = feed(&e, from: &at, frames: 400, probability: 0.95, level: 600)
        XCTAssertNotNil(e.backgroundSpeechLevel)
        // The kiosk's reply, masked (level 0), says nothing of whether the room stopped talking.
        XCTAssertEqual(feed(&e, from: &at, frames: 400, probability: 0.05, level: 0), [])
        XCTAssertNotNil(e.backgroundSpeechLevel, "forgotten while the kiosk spoke")
        XCTAssertEqual(feed(&e, from: &at, frames: 320, probability: 0.05, level: 30), [], "10 s of quiet")
        XCTAssertEqual(feed(&e, from: &at, frames: 3, probability: 0.95, level: 600).count, 1, "a quiet voice starts a turn again")
    }
}

/// Asked ahead (``TurnEndpointerConfiguration/questionLeadMilliseconds``): the question goes out
/// before the pause reaches its point, and its answer counts only once the pause does.
extension TurnEndpointerTests {
    func testAnAnswerThatComesBeforeTheQuestionPointWaitsForIt() {
        var e = TurnEndpointer(), at = 0
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        let speechEnd = at
        XCTAssertEqual(feed(&e, from: &at, frames: 2, probability: 0.05), [.askModel(pauseStart: speechEnd, continuing: 2_064)], "asked at 64 ms")
        XCTAssertEqual(e.answer(0.99), .none, "a finished answer at 64 ms waits for 150 ms")
        XCTAssertTrue(e.inSpeech)
        XCTAssertEqual(feed(&e, from: &at, frames: 2, probability: 0.05), [], "128 ms")
        XCTAssertEqual(feed(&e, from: &at, frames: 1, probability: 0.05), [.ended(end: speechEnd, ending: .finished(probability: 0.99))], "160 ms")
    }

    func testAnEarlyUnfinishedAnswerIsToldAtTheQuestionPoint() {
        var e = TurnEndpointer(), at = 0
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        _ = feed(&e, from: &at, frames: 2, probability: 0.05)
        XCTAssertEqual(e.answer(0.9), .none)
        XCTAssertEqual(feed(&e, from: &at, frames: 3, probability: 0.05), [.stillListening(probability: 0.9)])
        // Told once; the next question is the 250 ms one, asked 96 ms ahead (at 192 ms, about
        // the pause carried on to 250 ms: 1,392 samples).
        XCTAssertEqual(feed(&e, from: &at, frames: 1, probability: 0.05).map { "\($0)" }, ["askModel(pauseStart: 23040, continuing: 1392)"])
    }

    func testTheLearnerGoingOnBeforeTheQuestionPointDropsTheEarlyAnswer() {
        var e = TurnEndpointer(), at = 0
        var spans: [(start: Int, end: Int)] = []
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        _ = feed(&e, from: &at, frames: 3, probability: 0.05)  // 96 ms: asked, not at its point
        XCTAssertEqual(e.answer(0.99), .none)
        XCTAssertEqual(feed(&e, from: &at, frames: 10, probability: 0.9), [.resumed])
        XCTAssertTrue(e.inSpeech, "a breath is not the end")
        e.omittedSpans(into: &spans)
        XCTAssertTrue(spans.isEmpty, "a pause left before its question point was not waited through")
        let end = at
        XCTAssertEqual(feed(&e, from: &at, frames: 2, probability: 0.05), [.askModel(pauseStart: end, continuing: 2_064)], "the next pause is asked afresh")
    }

    func testAnAnswerAfterTheQuestionPointDecidesAtOnce() {
        var e = TurnEndpointer(), at = 0
        _ = feed(&e, from: &at, frames: 30, probability: 0.9)
        let speechEnd = at
        _ = feed(&e, from: &at, frames: 6, probability: 0.05)  // the model was slow: 192 ms
        XCTAssertEqual(e.answer(0.97), .ended(end: speechEnd, ending: .finished(probability: 0.97)))
    }
}
