import SpeechModels

/// Silero VAD on the recorder's stream: PCM16 at 24 kHz brought to 16 kHz by the project's
/// resampler, cut into Silero's 512-sample frames (32 ms), each frame's speech probability
/// reported with the stream position (in input samples) where the frame ends. It keeps the
/// last 8 s at 16 kHz, which smart-turn is asked about at a pause, as PCM16: what the model
/// is fed elsewhere (pipecat hands it 16 kHz PCM16), half the memory of floats.
///
/// Per period nothing is allocated: the resampler, the frame and the ring are made once.
public final class VoiceActivityStream {
    public let model: any VoiceActivityModel
    public let inputRate: Int
    private let resampler: Resampler?
    private let maximumPeriod = 4_096
    private var input: [Float]
    private var resampled: [Float]
    private var frame: [Float]
    private var frameFill = 0
    /// The last 8 s at 16 kHz, a ring; `recentEnd` counts every 16 kHz sample written.
    private var recent: [Int16]
    private var recentEnd = 0
    /// Input samples consumed so far, counted from ``origin``.
    public private(set) var position = 0
    /// The position of the stream's first sample: 0, or the caller's own count of the
    /// samples it had before this stream joined it (``start(at:)``).
    public private(set) var origin = 0

    public init(model: any VoiceActivityModel, inputRate: Int = 24_000) throws(Resampler.Failure) {
        self.model = model
        self.inputRate = inputRate
        resampler = inputRate == SileroVAD.sampleRate
            ? nil
            : try Resampler(inputRate: inputRate, outputRate: SileroVAD.sampleRate, quality: .medium, maximumInputFrames: maximumPeriod)
        input = [Float](repeating: 0, count: maximumPeriod)
        resampled = [Float](repeating: 0, count: resampler?.maximumOutputFrames(forInputFrames: maximumPeriod) ?? maximumPeriod)
        frame = [Float](repeating: 0, count: SileroVAD.frameLength)
        recent = [Int16](repeating: 0, count: WhisperFeatures.windowSamples)
        model.reset()  // a new stream (a recorder reopened) starts the model afresh
    }

    /// Numbers this stream's samples in the caller's count, from `position` on: a recorder
    /// that adopts its models after it opened (the daemon loads them beside the running
    /// microphone) hears speech start and end at its own positions, where its pre-roll and
    /// its turns are counted. Before the first period only.
    public func start(at position: Int) {
        precondition(self.position == origin, "a stream is placed before it is fed")
        self.position = position
        origin = position
    }

    /// Forgets the stream: the model's state, a partial frame, the recent audio.
    public func reset() {
        model.reset()
        resampler?.reset()
        frameFill = 0
        recentEnd = 0
        for i in recent.indices { recent[i] = 0 }
    }

    /// Feeds a period; `onFrame(probability, position, rms)` for each frame it completes: the
    /// frame's RMS in PCM16 steps (what the endpointer weighs the voice by: the level of the
    /// 32 ms Silero heard, not of whichever period it ended in).
    public func process(_ period: UnsafeBufferPointer<Int16>, onFrame: (Float, Int, Double) -> Void) {
        var start = 0
        while start < period.count {
            let count = min(maximumPeriod, period.count - start)
            for i in 0..<count { input[i] = Float(period[start + i]) / 32_768 }
            position += count
            let made: Int
            if let resampler {
                made = input.withUnsafeBufferPointer { input in
                    resampled.withUnsafeMutableBufferPointer { out in
                        resampler.process(UnsafeBufferPointer(rebasing: input[0..<count]), into: out)
                    }
                }
            } else {
                for i in 0..<count { resampled[i] = input[i] }
                made = count
            }
            for i in 0..<made {
                let sample = resampled[i]
                // Ties away from zero, not `SampleConverter.roundToInt16`'s ties to even: the
                // turn-taking proof was measured with this rounding, and the other one moves a
                // borderline phrase. The sample is finite (resampled PCM16), so this cannot trap.
                recent[recentEnd % recent.count] = Int16(clamping: Int((sample * 32_768).rounded()))
                recentEnd += 1
                frame[frameFill] = sample
                frameFill += 1
                if frameFill == SileroVAD.frameLength {
                    frameFill = 0
                    let p = frame.withUnsafeBufferPointer { model.probability(of: $0) }
                    var energy: Float = 0
                    for x in frame { energy += x * x }
                    // The frame ended (made − 1 − i) resampled samples before this chunk's end.
                    let behind = (made - 1 - i) * inputRate / SileroVAD.sampleRate
                    onFrame(p, position - behind, Double((energy / Float(frame.count)).squareRoot()) * 32_768)
                }
            }
            start += count
        }
    }

    /// The last 8 s at 16 kHz, oldest first, zeros where the stream is shorter (as pipecat
    /// pads a short turn), into `window` (128,000 samples). `dropping` leaves out the newest
    /// samples (to ask about the audio up to an earlier moment).
    public func copyRecent(into window: UnsafeMutableBufferPointer<Int16>, dropping newest: Int = 0) {
        copyRecent(into: window, dropping: newest, omitting: [])
    }

    /// The same with `spans` of the stream (input positions, oldest first, not overlapping)
    /// left out and the audio on either side joined: the window is the newest 8 s of what is
    /// left, zeros before the oldest sample kept (``TurnEndpointer/omittedSpans(into:)``).
    /// `continuing` (input samples) ends the window that much later than the stream: the
    /// newest 32 ms (the VAD frame just heard as a pause) played back and forth over it, the
    /// pause carried on as the room sounded in it (``TurnEndpointer/Decision/askModel(pauseStart:continuing:)``).
    /// Reversed noise has the spectrum of the noise, and turning at the ends leaves no step.
    public func copyRecent(into window: UnsafeMutableBufferPointer<Int16>, dropping newest: Int = 0,
                           omitting spans: [(start: Int, end: Int)], continuing: Int = 0) {
        precondition(window.count == recent.count)
        let added = min(window.count, max(0, continuing) * SileroVAD.sampleRate / inputRate)
        let heard = window.count - added
        copyRecent(into: UnsafeMutableBufferPointer(rebasing: window[0..<heard]), dropping: newest, omittingSpans: spans)
        let source = min(SileroVAD.frameLength, heard)
        guard source > 0 else {
            for i in heard..<window.count { window[i] = 0 }
            return
        }
        for k in 0..<added {
            let r = k % (2 * source)
            window[heard + k] = r < source ? window[heard - 1 - r] : window[heard - source + (r - source)]
        }
    }

    /// Fills `window` (at most 8 s) from the back with the newest audio, `spans` left out.
    private func copyRecent(into window: UnsafeMutableBufferPointer<Int16>, dropping newest: Int, omittingSpans spans: [(start: Int, end: Int)]) {
        let end = max(0, recentEnd - newest)
        let oldest = max(0, recentEnd - recent.count)  // the oldest sample the ring still holds
        var to = window.count  // fills from the back
        var from = end
        var span = spans.count - 1
        while to > 0 && from > oldest {
            // The newest span that starts before `from`, in 16 kHz samples.
            while span >= 0 && resampledPosition(spans[span].start) >= from { span -= 1 }
            var segmentStart = oldest
            var next = from
            if span >= 0 {
                let spanEnd = min(from, resampledPosition(spans[span].end))
                segmentStart = max(oldest, spanEnd)
                next = resampledPosition(spans[span].start)
            }
            let count = min(to, from - segmentStart)
            for i in 0..<count { window[to - count + i] = recent[(from - count + i) % recent.count] }
            to -= count
            if count < from - segmentStart { break }  // the window is full
            from = span >= 0 ? next : oldest
            span -= 1
        }
        for i in 0..<to { window[i] = 0 }
    }

    /// An input position in the 16 kHz ring's count.
    private func resampledPosition(_ inputPosition: Int) -> Int {
        (inputPosition - origin) * SileroVAD.sampleRate / inputRate
    }
}
