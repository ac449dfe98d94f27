import AudioKernel
import Dispatch
import FoundationEssentials
import PracticeNet
import PracticeSupport

/// One reply stream in flight: `/start`, `/chat` or `/chat/text`.
///
/// Its events go to the handler as they are parsed (see ``ReplyEvent``); its outcome is a
/// ``ReplySummary`` once the stream has started, or a ``BackendError`` when it never did
/// (an error status, no connection, the deadline before the headers). 503 answers and
/// refused connections are retried with backoff first, sending the same body (and the same
/// `Idempotency-Key`) again. Cancel at any moment: the connection is closed at once.
///
/// Everything runs on the transport's serial queue: callbacks, timers, cancellation.
public final class ReplyStream: TaskHandler, @unchecked Sendable {
    public typealias EventHandler = @Sendable (ReplyEvent) -> Void

    private let transport: any StreamTransport
    private let request: HTTPRequest
    private let body: HTTPBody?
    private let configuration: BackendConfiguration
    private let logger: Logger
    /// Released when the stream ends: a handler that holds its caller's reply object (which
    /// holds this stream) must not keep both alive.
    private var handler: EventHandler?
    private let label: String
    private var queue: DispatchQueue { transport.queue }

    // Touched only on the queue.
    private var parser = SSEParser()
    private var payload = AudioPayloadDecoder()
    private var summary = ReplySummary()
    private var attempt = 0
    private var task: TransportTask?
    private var response: HTTPResponse?
    private var errorBody = Data()
    private var started = false
    private var abortReason: BackendError?
    /// The stream's deadlines, as timer sources on the queue, cancelled when it ends: a
    /// block scheduled with `asyncAfter` would keep the finished stream (its upload, its
    /// parser's buffers) alive until it fired, minutes later.
    private var totalTimer: (any PracticeTimer)?
    private var idleTimer: (any PracticeTimer)?
    /// The pause before the next attempt.
    private var retryTimer: (any PracticeTimer)?
    /// The deadlines' clock (Dispatch's, or a test's).
    private let clock: any PracticeClock
    private var startTime: UInt64 = 0
    private var receivedBytes = 0
    private var sawDone = false
    /// The client, kept alive while the stream runs (its deinit closes the URLSession).
    private var owner: AnyObject?

    // Read from any thread.
    private let resultLock = Condition()
    private var result: Result<ReplySummary, BackendError>?
    private var waiters: [@Sendable (Result<ReplySummary, BackendError>) -> Void] = []

    init(owner: AnyObject, transport: any StreamTransport, request: HTTPRequest, body: HTTPBody?, configuration: BackendConfiguration,
         logger: Logger, clock: any PracticeClock, onEvent: @escaping EventHandler) {
        self.owner = owner
        self.clock = clock
        self.transport = transport
        self.request = request
        self.body = body
        self.configuration = configuration
        self.logger = logger
        self.handler = onEvent
        self.label = "\(request.httpMethod) \(request.url.path)"
    }

    func begin() {
        queue.async { [self] in
            startTime = clock.now
            // The whole stream's deadline, over all attempts.
            let timer = clock.makeTimer(on: queue) { [weak self] in
                guard let self else { return }
                abort(.timedOut(seconds: configuration.streamTotalTimeout))
            }
            timer.schedule(after: configuration.streamTotalTimeout)
            totalTimer = timer
            nextAttempt()
        }
    }

    /// Stops the stream now (barge-in, stop): the connection is closed; the outcome is
    /// `.cancelled` (or the error `.cancelled` before the stream started).
    public func cancel() {
        queue.async { [self] in abort(.cancelled) }
    }

    /// Whether the outcome is known.
    public var isFinished: Bool { resultLock.withLock { result != nil } }

    /// Waits for the outcome.
    public func outcome() async throws(BackendError) -> ReplySummary {
        let result: Result<ReplySummary, BackendError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                whenFinished { continuation.resume(returning: $0) }
            }
        } onCancel: {
            cancel()
        }
        return try result.get()
    }

    /// Waits for the outcome from a thread that may block, at most `timeout` seconds; nil
    /// when the deadline passed first.
    public func wait(timeout: Double) -> Result<ReplySummary, BackendError>? {
        let deadline = Monotonic.now() + Int64(max(0, min(timeout, 1e9)) * 1e9)
        resultLock.lock()
        defer { resultLock.unlock() }
        while result == nil {
            if !resultLock.wait(untilMonotonic: deadline) { break }
        }
        return result
    }

    /// Calls `body` with the outcome once known (at once if it is).
    public func whenFinished(_ body: @escaping @Sendable (Result<ReplySummary, BackendError>) -> Void) {
        resultLock.lock()
        if let result {
            resultLock.unlock()
            body(result)
            return
        }
        waiters.append(body)
        resultLock.unlock()
    }

    // MARK: - Attempts

    private func nextAttempt() {
        guard abortReason == nil else { return finish(.failure(abortReason!)) }
        attempt += 1
        summary.attempts = attempt
        response = nil
        errorBody.removeAll()
        logger.debug("→ \(label) attempt \(attempt)\(body.map { ", \($0.count) bytes" } ?? "")")
        guard let task = transport.start(request, body: body, handler: self) else { return finish(.failure(.cancelled)) }
        self.task = task
        armIdleTimer()
    }

    /// Cancels the task for a reason; its completion reports it.
    private func abort(_ reason: BackendError) {
        guard !isFinished, abortReason == nil else { return }
        abortReason = reason
        if let task { task.cancel() } else { finish(.failure(reason)) }  // between attempts
    }

    /// Pushes the idle deadline back (every chunk: a reschedule, no allocation).
    private func armIdleTimer() {
        guard !isFinished else { return }
        if let idleTimer { return idleTimer.schedule(after: configuration.streamIdleTimeout) }
        let timer = clock.makeTimer(on: queue) { [weak self] in
            guard let self, task != nil else { return }
            logger.warning("\(label): nothing received for \(configuration.streamIdleTimeout) s")
            abort(.timedOut(seconds: configuration.streamIdleTimeout))
        }
        timer.schedule(after: configuration.streamIdleTimeout)
        idleTimer = timer
    }

    // MARK: - Task callbacks (on the queue)

    package func taskDidReceive(response: HTTPResponse) {
        self.response = response
        armIdleTimer()
        let elapsed = elapsedMilliseconds
        logger.debug("← \(label) \(response.statusCode) \(response.value(forHTTPHeaderField: "Content-Type") ?? "") after \(elapsed) ms")
        guard response.statusCode == 200 else { return }
        started = true
        onEvent(.accepted)
    }

    package func taskDidReceive(data: Data) {
        armIdleTimer()
        receivedBytes += data.count
        guard started else {
            // An error answer: keep the first bytes for its detail.
            if errorBody.count < 4096 { errorBody.append(data.prefix(4096 - errorBody.count)) }
            return
        }
        data.withUnsafeBytes { bytes in
            parser.feed(bytes) { event in handle(event) }
        }
    }

    package func taskDidSend(totalBytesSent: Int64, totalBytesExpected: Int64) {
        onEvent(.uploadProgress(sent: totalBytesSent, total: totalBytesExpected))
    }

    package func taskDidComplete(error: Error?) {
        task = nil
        if started {
            parser.finish()  // an event without its blank line is dropped, as the standard says
            if let abortReason {
                summary.end = abortReason == .cancelled ? .cancelled : .interrupted(abortReason)
            } else if let error {
                summary.end = .interrupted(BackendError.from(transportError: error))
            } else {
                summary.end = sawDone ? .done : .endedWithoutDone
            }
            logger.debug("\(label): \(Self.describe(summary)), \(receivedBytes) bytes in \(elapsedMilliseconds) ms")
            return finish(.success(summary))
        }
        let failure: BackendError
        if let abortReason {
            failure = abortReason
        } else if let error {
            failure = BackendError.from(transportError: error)
        } else if let response {
            failure = BackendError.from(status: response.statusCode, contentType: response.value(forHTTPHeaderField: "Content-Type"), body: errorBody)
        } else {
            failure = .invalidResponse("no HTTP response")
        }
        let method = request.httpMethod
        if configuration.retry.shouldRetry(failure, method: method, attempt: attempt) {
            let delay = configuration.retry.delay(afterAttempt: attempt)
            logger.info("\(label): \(failure); retrying in \(Int(delay * 1000)) ms (attempt \(attempt + 1))")
            onEvent(.retrying(attempt: attempt, delay: delay, reason: failure))
            if retryTimer == nil { retryTimer = clock.makeTimer(on: queue) { [weak self] in self?.nextAttempt() } }
            retryTimer?.schedule(after: delay)
            return
        }
        logger.warning("\(label): \(failure)")
        finish(.failure(failure))
    }

    // MARK: - Events

    private func handle(_ event: SSEEventView) {
        if event.isType("audio") {
            do {
                let count = try payload.decode(event.data)
                if summary.firstAudioDelay == nil { summary.firstAudioDelay = Double(elapsedMilliseconds) / 1000 }
                summary.audioEvents += 1
                summary.audioBytes += count
                payload.pcm.withUnsafeBytes { onEvent(.audio(UnsafeRawBufferPointer(rebasing: $0[0..<count]))) }
            } catch {
                malformed("audio", error.description)
            }
        } else if event.isType("transcript") || event.isType("response") {
            let isTranscript = event.isType("transcript")
            guard let text = Self.decodeText(event.data) else {
                return malformed(isTranscript ? "transcript" : "response", "data is not a JSON object with a string \"text\"")
            }
            if isTranscript {
                summary.transcript = text
                onEvent(.transcript(text))
            } else {
                summary.responseText = text
                onEvent(.response(text))
            }
        } else if event.isType("timing") {
            struct Timing: Decodable {
                var step: String
                var duration_s: Double
            }
            guard let timing = try? JSONDecoder().decode(Timing.self, from: Data(event.data)) else {
                return malformed("timing", "data is not {\"step\", \"duration_s\"}")
            }
            summary.timings[timing.step] = timing.duration_s
            onEvent(.timing(step: timing.step, seconds: timing.duration_s))
        } else if event.isType("done") {
            sawDone = true
            onEvent(.done)
        } else {
            // Unknown types are skipped: the contract may grow.
            logger.debug("\(label): skipped an event of type '\(String(decoding: event.type, as: UTF8.self))' (\(event.data.count) bytes)")
        }
    }

    private func malformed(_ type: String, _ reason: String) {
        summary.malformedEvents += 1
        logger.warning("\(label): bad \(type) event: \(reason)")
        onEvent(.malformedEvent(type: type, reason: reason))
    }

    /// `{"text": "..."}` with JSON escapes decoded (the server escapes all non-ASCII).
    static func decodeText(_ data: UnsafeRawBufferPointer) -> String? {
        struct Text: Decodable { var text: String }
        return try? JSONDecoder().decode(Text.self, from: Data(data)).text
    }

    private func onEvent(_ event: ReplyEvent) { handler?(event) }

    private func finish(_ outcome: Result<ReplySummary, BackendError>) {
        owner = nil
        handler = nil
        totalTimer?.cancel()
        idleTimer?.cancel()
        retryTimer?.cancel()
        resultLock.lock()
        guard result == nil else {
            resultLock.unlock()
            return
        }
        result = outcome
        let waiting = waiters
        waiters = []
        resultLock.broadcast()
        resultLock.unlock()
        for waiter in waiting { waiter(outcome) }
    }

    /// Since the stream began, by its clock.
    private var elapsedMilliseconds: Int { Int((clock.now &- startTime) / 1_000_000) }

    static func describe(_ summary: ReplySummary) -> String {
        let transcript = summary.transcript.map { $0.isEmpty ? "empty transcript" : "transcript \($0.count) chars" } ?? "no transcript"
        return "\(summary.end), \(transcript), \(summary.audioEvents) audio events (\(summary.audioBytes) PCM bytes), "
            + "response \(summary.responseText.map { "\($0.count) chars" } ?? "none"), \(summary.malformedEvents) malformed"
    }
}
