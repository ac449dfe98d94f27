extension Recorder {
    /// The turn in progress ends for `reason` (on the capture thread): its WAV header is
    /// written, it is copied out at its own size, judged by the gates, and handed over.
    func finishTurn(_ reason: RecordedTurn.EndReason) {
        if let onset = turnSpeechOnset {
            turnSpeechSamples += detector.position - max(onset, turnStartPosition)
            turnSpeechOnset = nil
        }
        let dataBytes = turn.count - WAVEncoder.headerSize
        turn.withUnsafeMutableBytes { bytes in
            WAVEncoder.writeHeader(format: format, dataByteCount: dataBytes, into: bytes)
        }
        // A copy at the turn's size, handed to the caller; the buffer's pages go back below.
        let wav = [UInt8](unsafeUninitializedCapacity: turn.count) { copy, count in
            count = turn.withUnsafeBytes { copy.initialize(fromContentsOf: $0) }
        }
        // The seed's gate (RMS above 300) and, with the learned rule, Silero's: noise or music
        // loud enough for the gate but with no speech in it is not an answer.
        let gate = SpeechGate(threshold: configuration.detector.gateThreshold).holdsSpeech(turnLevel)
        let vadHeardSpeech = vadStream == nil
            || turnVADSpeechSamples >= endpointer.configuration.minimumSpeechMilliseconds * format.sampleRate / 1000
        var result = RecordedTurn(
            wav: wav, format: format, endReason: reason, level: turnLevel,
            speechDuration: Double(turnSpeechSamples) / Double(format.sampleRate * format.channels),
            holdsSpeech: gate && vadHeardSpeech && reason != .backgroundSpeech,
            recording: recordingNumber
        )
        result.finishedProbability = lastFinishedProbability
        switch reason {
        case .finished, .pauseCeiling, .endOfSpeech: result.endWait = lastSpeechEndWait
        case .released, .maximumLength, .backgroundSpeech: break
        }
        lastSpeechEndWait = nil
        turn.removeAll()
        lastTurnEnd = preRollEnd
        mode = .idle
        onEvent(.turn(result))
    }
}
