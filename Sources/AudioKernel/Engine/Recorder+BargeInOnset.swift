extension Recorder {
    /// Where a hands-free turn whose speech began at `onset` starts: its pre-roll before the
    /// onset (moved back over syllables a canceller held down, ``heldDownOnset(_:)``), but
    /// never over the kiosk's own voice. Over the tutor the pre-roll held its residue, and
    /// the backend's transcription heard the tutor's words as the learner's (offline, the
    /// learner's words began 410–600 ms into the turn at 13 dB of echo loss, 1.4 s at 8 dB):
    /// the turn starts after the last block the residual-echo estimate explains
    /// (``EchoResidueTrack``), so the pre-roll keeps only what is not the kiosk's.
    /// A run of residue shorter than a syllable pause is a gap between the learner's
    /// syllables, and is kept; 100 ms of the residue before the words stay, so that a first
    /// syllable that rose out of it is whole (PipeWire's canceller let a learner's first
    /// 25 ms through at the residue's level). Over the kiosk's voice the pre-roll is
    /// ``RecorderConfiguration/bargeInPreRollMilliseconds``.
    func bargeInStart(onset: Int) -> Int {
        let words = heldDownOnset(onset)
        guard kioskIsPlaying, inputIsEchoCancelled else { return words - preRollSamples }
        let perMillisecond = format.sampleRate * format.channels / 1_000
        let start = words - min(preRollSamples, configuration.bargeInPreRollMilliseconds * perMillisecond)
        let blocks = max(1, configuration.detector.syllablePauseMilliseconds / 10)
        guard let residue = echoTrack.residueEnd(in: max(0, start)..<words, minimumBlocks: blocks) else { return start }
        return max(start, residue - 100 * perMillisecond)
    }

    /// Over an echo-cancelled input while the kiosk speaks, the canceller's double-talk
    /// suppression holds the learner's first syllables under the barge-in level, so speech
    /// is heard to start late (on PipeWire in CI: 315 ms after the words began, and the
    /// turn, pre-roll and all, began 15 ms into them). The onset moves back to the earliest
    /// 10 ms block, at most the barge-in's minimum speech before it, that is above the quiet
    /// room's start threshold with no syllable pause of quieter blocks between it and the
    /// onset (the canceller dips the held-down voice to RMS 260 for 80 ms): those blocks are
    /// the learner held down, or the canceller's residue just before them, which a pre-roll
    /// holds anyway. A block the residual-echo estimate explains as the kiosk's voice counts
    /// as quiet: the residue is not the learner held down.
    func heldDownOnset(_ onset: Int) -> Int {
        guard kioskIsPlaying, inputIsEchoCancelled else { return onset }
        let block = format.sampleRate * format.channels / 100
        let rule = configuration.detector
        let farthest = max(onset - rule.bargeInMinimumSpeechMilliseconds * block / 10, oldestHeldPosition)
        let pauseBlocks = max(1, rule.syllablePauseMilliseconds / 10)
        let loud = detector.startThreshold
        var start = onset, end = onset, quiet = 0
        preRoll.withUnsafeBufferPointer { ring in
            while end - block >= farthest, quiet < pauseBlocks {
                var sum = 0.0
                for position in (end - block)..<end {
                    let x = Double(ring[position % ring.count])
                    sum += x * x
                }
                let residue = echoTrack.isResidue(positions: (end - block)..<end)
                end -= block
                if (sum / Double(block)).squareRoot() > loud, !residue {
                    start = end
                    quiet = 0
                } else {
                    quiet += 1
                }
            }
        }
        return start
    }
}
