extension Recorder {
    /// Over an echo-cancelled input while the kiosk speaks, the canceller's double-talk
    /// suppression holds the learner's first syllables under the barge-in level, so speech
    /// is heard to start late (on PipeWire in CI: 315 ms after the words began, and the
    /// turn, pre-roll and all, began 15 ms into them). The onset moves back to the earliest
    /// 10 ms block, at most the barge-in's minimum speech before it, that is above the quiet
    /// room's start threshold with no syllable pause of quieter blocks between it and the
    /// onset (the canceller dips the held-down voice to RMS 260 for 80 ms): those blocks are
    /// the learner held down, or the canceller's residue just before them, which a pre-roll
    /// holds anyway.
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
                end -= block
                if (sum / Double(block)).squareRoot() > loud {
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
