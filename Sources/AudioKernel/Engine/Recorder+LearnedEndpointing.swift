import SpeechModels

/// The learned end-of-turn rule in the recorder (``TurnEndpointer``): Silero VAD on each
/// period, smart-turn's answers from its worker, and what their decisions do to the turn.
extension Recorder {
    /// Models built for this recorder off the capture thread (its Silero stream and
    /// endpointer allocate), installed on it without allocating.
    struct Adoption: @unchecked Sendable {
        let endpointing: LearnedEndpointing
        let stream: VoiceActivityStream
        let endpointer: TurnEndpointer
    }

    /// Learned endpointing for a recorder opened without it (the daemon opens the microphone
    /// at once and loads the models beside it): from its next period outside a turn, hands-free
    /// turns end by the models; a turn being recorded ends by the rule it began with. For a
    /// recorder made without models, once. The caller keeps `endpointing` alive and stops
    /// its worker once the recorder is gone. A recorder whose format the models cannot take
    /// (not mono) keeps the level rule; the answer says whether they were taken.
    @discardableResult
    public func adopt(_ endpointing: LearnedEndpointing) -> Bool {
        guard format.channels == 1,
              let stream = try? VoiceActivityStream(model: endpointing.vad, inputRate: format.sampleRate) else { return false }
        post(Adoption(endpointing: endpointing, stream: stream,
                      endpointer: TurnEndpointer(configuration: endpointing.configuration, sampleRate: format.sampleRate)))
        return true
    }

    /// On the capture thread: the adopted models take over between turns (a turn being
    /// recorded ends by the rule it began with) and, while listening, outside speech (the
    /// speech the level rule is hearing may still become the turn, and ends by that rule).
    func installAdoptedModels() {
        guard let adoption = pendingAdoption else { return }
        switch mode {
        case .recording: return
        case .listening: if detector.inSpeech { return }
        case .idle: break
        }
        pendingAdoption = nil
        endpointing = adoption.endpointing
        // Its positions are the recorder's: a stream counting from 0 here put every onset
        // the models heard seconds before the speech, and each turn began at the oldest
        // audio the pre-roll ring held (up to 2.3 s before the learner's first word).
        adoption.stream.start(at: preRollEnd)
        vadStream = adoption.stream
        endpointer = adoption.endpointer
    }

    /// The learned rule: smart-turn's answer if one came, then Silero on the period's frames.
    /// While the kiosk speaks half-duplex no speech may start (its frames count as quiet);
    /// over an echo-cancelled input only speech above the barge-in level may, which is set
    /// against `kioskLevel` (``SpeechDetectorConfiguration/bargeInLevel(kioskLevel:)``).
    func processLearned(_ period: UnsafeBufferPointer<Int16>, stream: VoiceActivityStream, playing: Bool, kioskLevel: Double) {
        if let answer = endpointing?.worker.takeAnswer(), answer.token == question {
            lastFinishedProbability = answer.probability
            lastAnswerSeconds = Double(answer.nanoseconds) / 1e9
            // Asked ahead, the answer may wait for the pause to reach its question point: the
            // endpointer then decides on a later frame (`apply` tells the client either way).
            apply(endpointer.answer(answer.probability))
        }
        var minimumSpeech: Int?
        let bargeInLevel = configuration.detector.bargeInLevel(kioskLevel: kioskLevel)
        if playing && inputIsEchoCancelled {
            // Barge-in: above its level, for as long as the level rule asks (300 ms).
            minimumSpeech = max(configuration.detector.bargeInMinimumSpeechMilliseconds, endpointer.configuration.minimumSpeechMilliseconds)
        }
        let frameSamples = 768 * format.sampleRate / 24_000
        stream.process(period) { probability, end, rms in
            if case .recording = mode, probability >= endpointer.configuration.speechProbability {
                turnVADSpeechSamples += frameSamples
            }
            // While the kiosk speaks half-duplex no speech may start (its frames count as
            // masked, level 0); over an echo-cancelled input only speech above the barge-in
            // level and above the kiosk's residue predicted in the frame (the residue is the
            // tutor's voice, speech to Silero: a frame of it began the start's window and
            // the turn opened with the tutor).
            let frameLevel = !playing ? rms
                : inputIsEchoCancelled ? (rms >= bargeInLevel && !echoTrack.isResidue(positions: (end - frameSamples)..<end) ? rms : 0)
                : endpointer.inSpeech ? rms : 0
            apply(endpointer.frame(probability: probability, end: end, level: frameLevel, minimumSpeechMilliseconds: minimumSpeech))
        }
    }

    /// The learned rule's decision (``TurnEndpointer``).
    func apply(_ decision: TurnEndpointer.Decision) {
        switch decision {
        case .none:
            break
        case .resumed:
            // A question asked ahead of this pause's point is not needed any more.
            endpointing?.worker.withdraw(token: question)
        case .stillListening(let p):
            // Told of the turn being recorded only: a pause going on after the turn ended
            // (done pressed in it) is still followed, and asked about, for a listen that may
            // take it up; its "more to come" told then kept "still listening" on the page
            // over the upload and the reply.
            guard case .recording = mode else { break }
            onEvent(.speechPaused(probability: p, waiting: true, after: lastAnswerSeconds))
        case .speechStarted(let onset):
            lastFinishedProbability = nil
            speechBegan(at: onset)
        case .askModel(_, let continuing):
            question += 1
            if let stream = vadStream {
                endpointer.omittedSpans(into: &omittedSpans)
                endpointing?.worker.ask(stream, token: question, omitting: omittedSpans, continuing: continuing)
            }
        case .ended(let end, let ending):
            if case .finished(let p) = ending {
                onEvent(.speechPaused(probability: p, waiting: false, after: lastAnswerSeconds))
            }
            speechEnded(at: end)
            if case .recording(let handsFree) = mode, handsFree {
                switch ending {
                case .finished: finishTurn(.finished)
                case .pauseCeiling: finishTurn(.pauseCeiling)
                case .maximumLength: finishTurn(.maximumLength)
                case .backgroundSpeech: finishTurn(.backgroundSpeech)
                }
            }
        }
    }
}
