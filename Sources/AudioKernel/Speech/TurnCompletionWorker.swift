#if canImport(Glibc)
import Glibc
#endif
import SpeechModels

/// smart-turn off the capture thread: the recorder hands it the last 8 s at a pause and
/// picks the answer up at a later period. One thread of its own, made once (named
/// `smart-turn`); the window, the features and the model's buffers are allocated once, so a
/// question allocates nothing. While one question is being answered a new one waits in its
/// place (the newest pause is the one that matters).
public final class TurnCompletionWorker: @unchecked Sendable {
    /// smart-turn's probability for features [80][800], nil when given up (the closure says
    /// stop); a stand-in in the tests, where the debug build's model takes most of a minute.
    private let answering: (UnsafePointer<Float>, () -> Bool) -> Float?
    private let features = WhisperFeatures()
    /// The 8 s asked about, as the stream keeps them (PCM16 at 16 kHz).
    private var window: [Int16]
    /// [80][800] features: the model's own scratch when it lends one (``SmartTurnModel/featureScratch``).
    private let featureBuffer: UnsafeMutablePointer<Float>
    private let ownsFeatureBuffer: Bool
    // Allocated, not stored properties: `&property` of a class is not promised to be the
    // same address each time, and a mutex must not move.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var question: (token: Int, ready: Bool) = (0, false)
    /// The question the capture thread no longer needs (the learner went on), and how many
    /// were given up before their end.
    private var withdrawn = -1
    private var abandonedCount = 0

    /// Questions given up before their end (withdrawn, or a newer one waiting).
    public var abandoned: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return abandonedCount
    }
    private var answer: (token: Int, probability: Float, nanoseconds: Int64)?
    private var stopping = false
    private var thread: IOThread?
    /// A copy of the window taken on the capture thread, handed over under the lock.
    private var pendingWindow: [Int16]

    public convenience init(model: SmartTurnModel) throws(AudioError) {
        try self.init(featureScratch: model.featureScratch) { features, stop in model.probability(features: features, until: stop) }
    }

    /// `featureScratch`: room for the features that `answering` lends (it keeps it alive); nil:
    /// the worker's own.
    init(featureScratch: UnsafeMutablePointer<Float>? = nil, answering: @escaping (UnsafePointer<Float>, () -> Bool) -> Float?) throws(AudioError) {
        self.answering = answering
        window = [Int16](repeating: 0, count: WhisperFeatures.windowSamples)
        pendingWindow = window
        ownsFeatureBuffer = featureScratch == nil
        featureBuffer = featureScratch ?? .allocate(capacity: WhisperFeatures.bins * WhisperFeatures.frames)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
        thread = try IOThread(name: "smart-turn") { [unowned self] in self.loop() }
    }

    /// Ends the thread.
    public func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
        thread?.join()
        thread = nil
    }

    deinit {
        if thread != nil { stop() }
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
        if ownsFeatureBuffer { featureBuffer.deallocate() }
    }

    /// On the capture thread: asks about the stream's last 8 s (without the `omitting` spans:
    /// ``TurnEndpointer/omittedSpans(into:)``; the pause carried on `continuing` samples),
    /// under `token` (its answer carries it, so that a late answer is told from the current one).
    public func ask(_ stream: VoiceActivityStream, token: Int, omitting spans: [(start: Int, end: Int)] = [], continuing: Int = 0) {
        pthread_mutex_lock(mutex)
        pendingWindow.withUnsafeMutableBufferPointer { stream.copyRecent(into: $0, omitting: spans, continuing: continuing) }
        question = (token, true)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// On the capture thread: the question `token` is not needed any more (asked ahead of a
    /// pause's question point, and the learner went on before it): its work stops at the next
    /// layer and no answer comes. Asking ahead asks about pauses that end sooner (measured on
    /// the turn-taking proof's recordings: 65 questions against 38), so this keeps their cost.
    public func withdraw(token: Int) {
        pthread_mutex_lock(mutex)
        withdrawn = token
        pthread_mutex_unlock(mutex)
    }

    /// On the capture thread: the newest answer, once (token, probability, time taken).
    public func takeAnswer() -> (token: Int, probability: Float, nanoseconds: Int64)? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        defer { answer = nil }
        return answer
    }

    private func loop() {
        pthread_mutex_lock(mutex)
        while true {
            while !question.ready && !stopping { pthread_cond_wait(condition, mutex) }
            if stopping { break }
            let token = question.token
            question.ready = false
            swap(&window, &pendingWindow)
            pthread_mutex_unlock(mutex)
            var start = timespec()
            clock_gettime(CLOCK_MONOTONIC, &start)
            window.withUnsafeBufferPointer { features.compute($0, into: featureBuffer) }
            // Given up when withdrawn, or when a newer question waits (the newest pause is the
            // one that matters).
            let p = answering(featureBuffer) { [unowned self] in
                pthread_mutex_lock(mutex)
                defer { pthread_mutex_unlock(mutex) }
                return withdrawn == token || question.ready || stopping
            }
            var end = timespec()
            clock_gettime(CLOCK_MONOTONIC, &end)
            let elapsed = Int64(end.tv_sec - start.tv_sec) * 1_000_000_000 + Int64(end.tv_nsec - start.tv_nsec)
            pthread_mutex_lock(mutex)
            if let p { answer = (token, p, elapsed) } else { abandonedCount += 1 }
        }
        pthread_mutex_unlock(mutex)
    }
}
