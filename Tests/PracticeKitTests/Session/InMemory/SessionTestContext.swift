import AudioKernel
import Dispatch
import Foundation
@testable import PracticeKit
import PracticeNet
import PracticeProtocol
import PracticeSupport
import TestSupport
import XCTest

/// The session's context in memory, for testing one piece of the session alone (as
/// swift-nio's `EmbeddedChannel` tests a handler): it records the events, stage moves and
/// failures the piece causes. Drive the piece on `queue` (``run(_:)``).
final class SessionTestContext: SessionContext, @unchecked Sendable {
    let queue = DispatchQueue(label: "test.session")
    var stage = SessionStage.ready
    var active: ActiveSession? = ActiveSession(id: "s1", mode: .conversation, topicID: "travel")
    var epoch = 0
    var settings = SessionSettings(userID: "learner-1")
    let metrics = Metrics()
    let logger = Logger.disabled
    var stopping = false
    /// The pieces' clock: real unless a test stops it (``TestClock/manual(start:)``).
    let clock = TestClock()
    var scheduler: any PracticeClock { clock }
    let events = Awaitable([(name: String, data: JSONValue)]())
    private(set) var moves: [SessionStage] = []
    private(set) var failures: [String] = []
    private(set) var acceptedTurns = 0

    /// As ``SessionController``'s: a move the table (``SessionStage/canMove(to:)``) does not
    /// allow is refused, and fails the test.
    func move(to next: SessionStage) {
        guard next != stage else { return }
        guard stage.canMove(to: next) else {
            XCTFail("the piece asked for \(stage) → \(next), which the stage table does not allow")
            return
        }
        stage = next
        moves.append(next)
    }

    func publish(_ event: any ProtocolEvent) {
        let data = ProtocolEncoder.encode(event)
        // Every event a piece publishes is one the protocol's schema documents.
        let line: JSONValue = ["type": "event", "seq": 1, "topic": .string(type(of: event).topic.rawValue),
                               "event": .string(type(of: event).name), "mono_ns": 1, "data": data]
        XCTAssertEqual(ProtocolConformance.problems(line, answering: nil), [], "\(type(of: event).name)")
        events.update { $0.append((type(of: event).name, data)) }
    }

    func stateChanged() {}

    func fail(_ reason: Event.SessionFailed.Reason, error: String) {
        failures.append(reason.rawValue)
        move(to: .failed)
    }

    func countAcceptedTurn() { acceptedTurns += 1 }

    func resume(_ session: ActiveSession) { active = session }

    /// Runs `body` on the session's queue, as the controller runs the pieces.
    func run<T>(_ body: () throws -> T) rethrows -> T { try queue.sync(execute: body) }

    var names: [String] { events.value.map(\.name) }

    /// The first event called `name`, waited for at most `timeout` seconds.
    func event(_ name: String, timeout: Double = 5) -> JSONValue? {
        guard events.wait(timeout: timeout, { $0.contains { $0.name == name } }) else { return nil }
        return events.value.first { $0.name == name }?.data
    }

    /// Waits until the queue has run what was posted to it (answers of backend calls).
    func settle() { queue.sync {} }
}

/// A backend in memory: its answers are set by the test, its requests recorded.
final class MemoryBackend: SessionBackend, @unchecked Sendable {
    private let lock = NSLock()
    private var _streams: [MemoryStream] = []
    var reviews: [Result<Review, BackendError>] = []
    var endTalkAnswer: Result<EndedTalk, BackendError> = .failure(.cancelled)
    var endSessionAnswer: Result<EndedSession, BackendError> = .failure(.cancelled)
    var topicsAnswer: Result<[Topic], BackendError> = .failure(.cancelled)
    var profileAnswer: Result<UserProfile, BackendError> = .failure(.cancelled)

    var streams: [MemoryStream] { lock.withLock { _streams } }

    private func stream(_ request: MemoryStream.Request, _ onEvent: @escaping ReplyStream.EventHandler) -> any ReplyStreaming {
        let stream = MemoryStream(request: request, onEvent: onEvent)
        lock.withLock { _streams.append(stream) }
        return stream
    }

    func streamGreeting(sessionID: String, onEvent: @escaping ReplyStream.EventHandler) -> any ReplyStreaming { stream(.greeting, onEvent) }
    func streamTurn(sessionID: String, wav: [UInt8], idempotencyKey: String, onEvent: @escaping ReplyStream.EventHandler) -> any ReplyStreaming {
        stream(.turn(idempotencyKey), onEvent)
    }
    func streamText(sessionID: String, text: String, onEvent: @escaping ReplyStream.EventHandler) -> any ReplyStreaming { stream(.text(text), onEvent) }

    func createSession(_ request: CreateSessionRequest) async throws(BackendError) -> CreatedSession { throw .cancelled }
    func endTalk(sessionID: String) async throws(BackendError) -> EndedTalk { try lock.withLock { endTalkAnswer }.get() }
    func review(sessionID: String) async throws(BackendError) -> Review {
        try lock.withLock { reviews.count > 1 ? reviews.removeFirst() : reviews.first ?? .failure(.cancelled) }.get()
    }
    func requestCorrection(sessionID: String, _ request: CorrectionRequest) async throws(BackendError) -> Correction { throw .cancelled }
    func endSession(sessionID: String) async throws(BackendError) -> EndedSession { try lock.withLock { endSessionAnswer }.get() }
    func topics() async throws(BackendError) -> [Topic] { try lock.withLock { topicsAnswer }.get() }
    func profile(userID: String) async throws(BackendError) -> UserProfile { try lock.withLock { profileAnswer }.get() }
    func evaluate(userID: String) async throws(BackendError) -> UserProfile { try lock.withLock { profileAnswer }.get() }
    func setLearningGoal(userID: String, goal: String?) async throws(BackendError) -> UserProfile { try lock.withLock { profileAnswer }.get() }

    /// A review in the backend's shape.
    static func review(status: String, marks: Int = 0, summary: Bool = false) -> Review {
        let marked: [JSONValue] = (0..<marks).map { .object([("id", .int($0)), ("issue_types", ["grammar"]), ("original", "a"), ("suggestion", "b"),
                                                             ("explanation", "c")]) }
        let json: JSONValue = ["session_id": "s1", "status": .string(status),
                               "segments": [["id": 1, "turn_index": 0, "user_text": "hi", "ai_text": "hello", "ai_marks": .array(marked), "corrections": []]],
                               "summary": summary ? ["strengths": ["x"], "weaknesses": ["grammar": .null, "naturalness": .null, "sentence_structure": .null], "overall": "ok"] : .null]
        return try! ProtocolDecoder.decode(Review.self, from: json)
    }
}

/// A reply stream in memory: the test sends its events and ends it.
final class MemoryStream: ReplyStreaming, @unchecked Sendable {
    enum Request: Equatable { case greeting, turn(String), text(String) }

    let request: Request
    private let onEvent: ReplyStream.EventHandler
    private let lock = NSLock()
    private var finished: (@Sendable (Result<ReplySummary, BackendError>) -> Void)?
    private var result: Result<ReplySummary, BackendError>?
    private(set) var cancelled = false

    init(request: Request, onEvent: @escaping ReplyStream.EventHandler) {
        self.request = request
        self.onEvent = onEvent
    }

    func send(_ event: ReplyEvent) { onEvent(event) }

    func sendAudio(bytes: Int) {
        let chunk = [UInt8](repeating: 1, count: bytes)
        chunk.withUnsafeBytes { onEvent(.audio($0)) }
    }

    /// Ends the stream as the backend would, with `done` and what came.
    func end(transcript: String? = "hello", audioBytes: Int = 4_800, done: Bool = true) {
        var summary = ReplySummary()
        summary.transcript = transcript
        summary.audioBytes = audioBytes
        summary.end = done ? .done : .endedWithoutDone
        finish(.success(summary))
    }

    func finish(_ result: Result<ReplySummary, BackendError>) {
        let body = lock.withLock { () -> (@Sendable (Result<ReplySummary, BackendError>) -> Void)? in
            guard self.result == nil else { return nil }
            self.result = result
            return finished
        }
        body?(result)
    }

    func cancel() {
        lock.withLock { cancelled = true }
        finish(.failure(.cancelled))
    }

    func whenFinished(_ body: @escaping @Sendable (Result<ReplySummary, BackendError>) -> Void) {
        let done = lock.withLock { () -> Result<ReplySummary, BackendError>? in
            finished = body
            return result
        }
        if let done { body(done) }
    }
}

/// A speaker and microphone in memory: what the session asked of them.
final class MemoryAudio: SessionAudio, ReplySpeaker, @unchecked Sendable {
    private let lock = NSLock()
    private var next = 0
    private(set) var begun: [Int] = []
    private(set) var enqueuedBytes = 0
    private(set) var ended: [Int] = []
    private(set) var stopped: [Int] = []
    /// When the first chunk reached the speaker (uptime ns): a speaker without a clock (a
    /// file) may start the sound at that moment, before `enqueue` returns.
    private(set) var firstChunkAt: UInt64?

    func beginReply() -> SpeakerReply? { lock.withLock { next += 1; begun.append(next); return SpeakerReply(speaker: self, number: next) } }
    func enqueue(_ bytes: UnsafeRawBufferPointer, reply: Int) -> Bool? {
        lock.withLock {
            enqueuedBytes += bytes.count
            if firstChunkAt == nil { firstChunkAt = DispatchTime.now().uptimeNanoseconds }
        }
        return true
    }
    func endReply(_ number: Int) { lock.withLock { ended.append(number) } }
    func stop(reply number: Int) { lock.withLock { stopped.append(number) } }
    func stopAll() -> Bool { false }
    func startRecording(handsFree: Bool) -> UInt64? { 1 }
    func record(_ command: RecorderCommand) -> Bool { true }
    var inputIsEchoCancelled: Bool { false }
    /// Replays asked for: the bytes and the rate.
    private(set) var replays: [(bytes: Int, rate: Double)] = []
    var playbackRate = 1.0
    /// Whether there is a speaker to replay on.
    var speakerOpen = true
    func replay(_ pcm: [UInt8], rate: Double) -> Int? {
        lock.withLock {
            guard speakerOpen else { return nil }
            next += 1
            replays.append((pcm.count, rate))
            return next
        }
    }
    func stop(sound number: Int) { lock.withLock { stopped.append(number) } }
    var snapshot: (begun: [Int], bytes: Int, ended: [Int], stopped: [Int]) { lock.withLock { (begun, enqueuedBytes, ended, stopped) } }
}
