import AudioKernel
import Foundation
import PracticeKit
import PracticeNet
import PracticeSupport

/// practice-sim's backend: the whole HTTP contract of `shared/docs/backend-contract.md`,
/// including the real server's oddities, plus fault injection and a test-only control API
/// under `/_sim/`. Serve it with ``HTTPServer`` (`handle` is its handler).
///
/// State sits behind one lock; replies are streamed outside it, on the connection's
/// thread, so a paced reply never blocks another client.
public final class PracticeSimulator: @unchecked Sendable {
    let lock = NSLock()
    var configuration: SimulatorConfiguration
    let speech: SpeechLibrary
    var random: SeededRandom
    var sessions: [String: SimulatedSession] = [:]
    var profiles: [String: SimulatedProfile] = [:]
    var loggedRequests: [JSONValue] = []
    var lastUploadedAudio: [UInt8]?
    /// Per `Idempotency-Key`: requests seen and segments (delivered turns) made. A key that
    /// already made a segment makes no second one: a resent turn is answered again but
    /// counted once, the way an idempotent proxy in front of the server would behave.
    var keys: [String: (requests: Int, segments: Int)] = [:]
    /// Segment, mark and correction ids, numbered across all sessions like database rows.
    var segmentCounter = 0
    var markCounter = 0
    var correctionCounter = 0
    let clock: SimulatedClock
    /// Whether the `/_sim/` control routes answer (on by default: practice-sim is a test tool).
    public var controlRoutesEnabled = true
    /// One line per request, for the executable's log; nil to stay quiet.
    public var logLine: (@Sendable (String) -> Void)?

    public convenience init(configuration: SimulatorConfiguration, speech: SpeechLibrary) {
        self.init(configuration: configuration, speech: speech, clock: DispatchClock())
    }

    /// On `clock`: a test's, so that its waits and deadlines run on the test's time.
    package init(configuration: SimulatorConfiguration, speech: SpeechLibrary, clock: any PracticeClock) {
        self.clock = SimulatedClock(time: clock)
        self.configuration = configuration
        self.speech = speech
        self.random = SeededRandom(seed: configuration.seed)
    }

    /// Ends every wait in progress (paced replies, latency, a hanging `/start`): call before
    /// stopping the server, so that its connections close at once.
    public func shutdown() { clock.stop() }

    /// The faults in force now.
    public var faults: SimulatorFaults {
        get { lock.withLock { configuration.faults } }
        set { lock.withLock { configuration.faults = newValue } }
    }

    /// The audio file of the last turn uploaded to `/chat`, as it arrived (tests compare it
    /// with what the microphone heard).
    public var lastTurnAudio: [UInt8]? { lock.withLock { lastUploadedAudio } }

    /// Every request answered so far (method, path, status, sizes, idempotency key), as
    /// `GET /_sim/log` shows it.
    public var requestLog: [JSONValue] { lock.withLock { loggedRequests } }

    /// Who session `id` was created for (its `user_id` and `user_name`), as the backend keeps it.
    public func learner(ofSession id: String) -> (userID: String, userName: String?)? {
        lock.withLock { sessions[id].map { ($0.userID, $0.userName) } }
    }

    /// `GET /_sim/keys`: `{"<key>": {"requests": n, "segments": n}}`.
    public var idempotencyKeys: JSONValue {
        lock.withLock {
            .object(keys.sorted { $0.key < $1.key }.map { ($0.key, ["requests": .int($0.value.requests), "segments": .int($0.value.segments)]) })
        }
    }

    /// A synchronous model call (`/corrections`, `/evaluate`): 0.4 s at real-time pace.
    var modelCallMilliseconds: Int { lock.withLock { configuration.pace > 0 ? 400 : 20 } }

    // MARK: - Routing

    public func handle(_ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        let path = request.target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.target
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map { String($0).removingPercentEncoding ?? String($0) }
        if parts.first == "_sim" {
            guard controlRoutesEnabled else { return respondDetail(writer, 404, "Not Found", request) }
            return handleControl(request, parts: Array(parts.dropFirst()), writer)
        }
        let latency = lock.withLock { configuration.faults.latencyMs }
        if latency > 0 { clock.wait(milliseconds: latency) }
        if let status = takeInjectedFailure() { return respondFailure(writer, status, request) }

        switch (request.method, parts.count, parts.first) {
        case ("GET", 1, "topics"):
            respond(writer, 200, .array(ReviewContent.topics), request)
        case (_, 1, "topics"):
            respondDetail(writer, 405, "Method Not Allowed", request)
        case ("POST", 1, "sessions"):
            createSession(request, writer)
        case (_, 2, "sessions"), (_, 3, "sessions"), (_, 4, "sessions"):
            routeSession(request, parts: parts, writer)
        case (_, 3, "users"):
            routeUser(request, parts: parts, writer)
        default:
            respondDetail(writer, 404, "Not Found", request)
        }
    }

    func routeSession(_ request: HTTPRequest, parts: [String], _ writer: HTTPResponseWriter) {
        let id = parts[1]
        let action = parts.dropFirst(2).joined(separator: "/")
        guard let session = lock.withLock({ sessions[id] }) else {
            // Only a known route gets the session's 404; others are FastAPI's plain 404.
            let known = ["", "start", "chat", "chat/text", "review", "corrections", "end"].contains(action)
            return respondDetail(writer, 404, known ? "Session not found" : "Not Found", request)
        }
        if lock.withLock({ session.dead }) && !(request.method == "GET" && action == "review") {
            // Its upstream never connected: every live call is 404 (traces 50–52).
            return respondDetail(writer, 404, "Session not found", request)
        }
        switch (request.method, action) {
        case ("POST", "start"): start(session, request, writer)
        case ("POST", "chat"): chat(session, request, writer)
        case ("POST", "chat/text"): chatText(session, request, writer)
        case ("DELETE", ""): endTalk(session, request, writer)
        case ("GET", "review"): review(session, request, writer)
        case ("POST", "corrections"): correction(session, request, writer)
        case ("POST", "end"): end(session, request, writer)
        case (_, "start"), (_, "chat"), (_, "chat/text"), (_, ""), (_, "review"), (_, "corrections"), (_, "end"):
            respondDetail(writer, 405, "Method Not Allowed", request)
        default:
            respondDetail(writer, 404, "Not Found", request)
        }
    }

    func routeUser(_ request: HTTPRequest, parts: [String], _ writer: HTTPResponseWriter) {
        let userID = parts[1]
        switch (request.method, parts[2]) {
        case ("GET", "profile"):
            respond(writer, 200, lock.withLock { profile(userID).json }, request)
        case ("POST", "evaluate"):
            clock.wait(milliseconds: modelCallMilliseconds)  // the model call is synchronous
            let json: JSONValue = lock.withLock {
                let turns = sessions.values.filter { $0.userID == userID }.reduce(0) { $0 + $1.segments.count }
                profiles[userID, default: SimulatedProfile(userID: userID)].level = turns >= 6 ? "B2" : turns >= 2 ? "B1" : "A2"
                profiles[userID]!.touch()
                return profiles[userID]!.json
            }
            respond(writer, 200, json, request)
        case ("POST", "learning-goal"):
            struct Body: Decodable { var learning_goal: String? }
            guard let body = decode(Body.self, request, writer, fields: [("learning_goal", .stringOrNull, false)]) else { return }
            // Stored trimmed; a blank goal is no goal (traces 32–33).
            let goal = body.learning_goal?.trimmingCharacters(in: .whitespacesAndNewlines)
            let json: JSONValue = lock.withLock {
                profiles[userID, default: SimulatedProfile(userID: userID)].learningGoal = goal?.isEmpty == false ? goal : nil
                profiles[userID]!.touch()
                return profiles[userID]!.json
            }
            respond(writer, 200, json, request)
        case (_, "profile"), (_, "evaluate"), (_, "learning-goal"):
            respondDetail(writer, 405, "Method Not Allowed", request)
        default:
            respondDetail(writer, 404, "Not Found", request)
        }
    }

    // MARK: - Sessions

    func createSession(_ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        struct Body: Decodable {
            var user_id: String
            var user_name: String?
            var topic_id: String?
            var mode: String?
        }
        guard let body = decode(Body.self, request, writer, fields: [("user_id", .string, true), ("user_name", .stringOrNull, false),
                                                                     ("topic_id", .stringOrNull, false), ("mode", .string, false)]) else { return }
        let mode = body.mode ?? "conversation"
        guard mode == "conversation" || mode == "review" else { return respondDetail(writer, 400, "Invalid mode: \(mode)", request) }
        if mode == "conversation" {
            guard let topic = body.topic_id else { return respondDetail(writer, 400, "topic_id is required for conversation mode", request) }
            guard ReviewContent.topicIDs.contains(topic) else { return respondDetail(writer, 400, "Unknown topic_id: \(topic)", request) }
        }
        let (id, created): (String, String) = lock.withLock {
            let id = uuid()
            let connecting = UInt64(configuration.connectingMs) * 1_000_000
            let session = SimulatedSession(id: id, userID: body.user_id, userName: body.user_name, topicID: body.topic_id, mode: mode,
                                           createdAt: Timestamp.now(), connectedAt: clock.now + connecting)
            sessions[id] = session
            // The name is kept only when this call creates the profile (trace 29's README note).
            if profiles[body.user_id] == nil {
                var profile = SimulatedProfile(userID: body.user_id)
                profile.userName = body.user_name
                profiles[body.user_id] = profile
            }
            return (id, session.createdAt)
        }
        respond(writer, 200, ["session_id": .string(id), "created_at": .string(created)], request)
    }

    func start(_ session: SimulatedSession, _ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        let (faults, config) = lock.withLock { (configuration.faults, configuration) }
        if faults.start504 {
            clock.wait(milliseconds: config.startTimeoutMs)
            lock.withLock { session.dead = true }
            return respondDetail(writer, 504, "Session connection timed out", request)
        }
        // The server waits for its upstream connection before it answers.
        clock.wait(until: session.connectedAt)
        let (again, events): (Bool, [ReplyEvent]) = lock.withLock {
            if session.started { return (true, []) }
            session.started = true
            session.replying = true
            return (false, replyEvents(phrase: speech.greeting, transcript: nil, lateTranscript: false))
        }
        logRequest(request, status: 200)
        if again {
            // A second /start hangs until the server gives up on its upstream.
            writer.beginChunked(contentType: "text/event-stream; charset=utf-8")
            clock.wait(milliseconds: config.upstreamIdleMs)
            let tail = [ReplyEvent(name: "timing", data: ["step": "total", "duration_s": .double(Double(config.upstreamIdleMs) / 1000)]),
                        ReplyEvent(name: "done", data: [:])]
            for event in tail where !writer.peerGone { writer.writeChunk(Array("event: \(event.name)\ndata: \(event.data.serialized(.python))\n\n".utf8)) }
            writer.endChunked()
            return
        }
        finish(session, ReplyStreamer(configuration: config, faults: faults, clock: clock).write(events, to: writer))
    }

    func chat(_ session: SimulatedSession, _ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        guard let boundary = request.header("Content-Type").flatMap(MultipartFormData.boundary(fromContentType:)) else {
            return respondValidation(writer, field: "audio", message: "Field required", request)
        }
        let parts: [MultipartPart]
        do {
            parts = try MultipartFormData.parse(request.body, boundary: boundary)
        } catch {
            return respondDetail(writer, 400, "There was an error parsing the body", request)
        }
        guard let audio = parts.first(where: { $0.name == "audio" }) else {
            return respondValidation(writer, field: "audio", message: "Field required", request)
        }
        guard !audio.body.isEmpty else { return respondDetail(writer, 400, "Empty audio file", request) }
        lock.withLock { lastUploadedAudio = audio.body }
        // The server forwards the bytes as they are: the model hears silence, noise or a
        // broken file as nothing, and audio under 100 ms is not even transcribed.
        let decoded = try? WAVDecoder.decode(audio.body)
        let tooShort = decoded.map { $0.duration < 0.1 } ?? false
        let heard = decoded.map { SpeechGate().holdsSpeech($0.samples) } ?? false
        streamReply(session, request, writer, spoken: true, transcript: { random in
            if tooShort { return nil }
            return heard ? ReviewContent.learnerPhrases[Int(random.next() % UInt64(ReviewContent.learnerPhrases.count))] : ""
        }, uploadBytes: audio.body.count, heardSpeech: heard)
    }

    func chatText(_ session: SimulatedSession, _ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        struct Body: Decodable { var text: String }
        guard let body = decode(Body.self, request, writer, fields: [("text", .string, true)]) else { return }
        let text = body.text.trimmingCharacters(in: .whitespacesAndNewlines)
        // Before the upstream is up the answer is 503, blank text or not (README of the traces).
        if clock.now < session.connectedAt { return respondDetail(writer, 503, "Session still connecting, try again shortly", request) }
        guard !text.isEmpty else { return respondDetail(writer, 400, "Empty text", request) }
        streamReply(session, request, writer, spoken: false, transcript: { _ in text }, uploadBytes: nil, heardSpeech: nil)
    }

    /// A turn's reply, in the shapes the real server gives (traces 04–15): a whole reply
    /// (its transcript late now and then on spoken turns); `transcript timing done` while
    /// upstream is still busy with another reply (overlap or hang-up) or after a function
    /// call (a text mentioning the news); an empty transcript followed by a spoken "didn't
    /// catch that"; `timing done` for under 100 ms of audio. Only a turn with a transcript
    /// and a reply is saved as a segment.
    func streamReply(_ session: SimulatedSession, _ request: HTTPRequest, _ writer: HTTPResponseWriter, spoken: Bool,
                             transcript makeTranscript: (inout SeededRandom) -> String?, uploadBytes: Int?, heardSpeech: Bool?) {
        let notConnected = clock.now < session.connectedAt
        if notConnected { return respondDetail(writer, 503, "Session still connecting, try again shortly", request) }
        let status = lock.withLock { session.status }
        guard status == "active" else {
            return respondDetail(writer, 400, status == "completed" ? "Session already completed" : "Session is not active", request)
        }
        let (events, config, faults, userText, phrase, streaming): ([ReplyEvent], SimulatorConfiguration, SimulatorFaults, String?,
                                                                      SpeechLibrary.Phrase?, Bool) = lock.withLock {
            let transcript = makeTranscript(&random)
            let busy = session.replying || session.hungUp
            session.hungUp = false
            let pool = session.mode == "review" ? speech.reviewReplies : speech.replies
            var events: [ReplyEvent] = []
            var phrase: SpeechLibrary.Phrase?
            func empty(_ seconds: Double) -> [ReplyEvent] {
                [ReplyEvent(name: "timing", data: ["step": "total", "duration_s": .double(seconds)]), ReplyEvent(name: "done", data: [:])]
            }
            if let transcript, busy {
                // Upstream still produces another reply: the transcript is echoed, nothing else.
                events = [ReplyEvent(name: "transcript", data: ["text": .string(transcript)])] + empty(0.005)
            } else if transcript == nil {
                events = empty(0.004)
            } else if transcript == "" {
                events = replyEvents(phrase: speech.didNotCatch, transcript: "", lateTranscript: false)
            } else if let transcript, transcript.lowercased().contains("news") {
                // The model calls a function; the spoken answer after it never reaches the stream.
                events = [ReplyEvent(name: "transcript", data: ["text": .string(transcript)])] + empty(0.162)
            } else if spoken && configuration.faults.lateVoidTranscript {
                // The audio starts, then the transcription says nothing was heard.
                events = replyEvents(phrase: pool[session.replyCount % pool.count], transcript: nil, lateTranscript: false)
                events.insert(ReplyEvent(name: "transcript", data: ["text": ""]), at: min(3, events.count))
            } else if spoken && configuration.faults.noTranscript {
                // The transcription lands after the reply: the turn is answered but not saved.
                events = replyEvents(phrase: pool[session.replyCount % pool.count], transcript: nil, lateTranscript: false)
                session.replyCount += 1
            } else {
                phrase = pool[session.replyCount % pool.count]
                session.replyCount += 1
                events = replyEvents(phrase: phrase!, transcript: transcript, lateTranscript: spoken)
            }
            let streaming = events.contains { $0.name == "audio" }
            if streaming { session.replying = true }
            return (events, configuration, configuration.faults, transcript, phrase, streaming)
        }
        let key = request.header("Idempotency-Key")
        if let key { lock.withLock { keys[key, default: (0, 0)].requests += 1 } }
        logRequest(request, status: 200, extra: [
            ("idempotency_key", .optional(key)),
            ("upload_bytes", uploadBytes.map { .int($0) } ?? .null),
            ("heard_speech", heardSpeech.map { .bool($0) } ?? .null),
        ])
        // The turn is saved when its reply ends (complete, or cut by the fault plan; not when
        // the client hung up), before the client sees that end.
        let end = ReplyStreamer(configuration: config, faults: faults, clock: clock).write(events, to: writer) {
            guard let phrase, let userText else { return }
            lock.withLock {
                let repeated = key.map { (keys[$0]?.segments ?? 0) > 0 } ?? false
                if !repeated {
                    if let key { keys[key, default: (0, 0)].segments += 1 }
                    let index = session.segments.count
                    session.segments.append(.init(id: nextSegmentID(), turnIndex: index, userText: userText, aiText: phrase.text))
                }
            }
        }
        if streaming { finish(session, end) }
    }

    /// Segment ids count across all sessions, as the server's database does (trace 18).
    func nextSegmentID() -> Int {
        segmentCounter += 1
        return segmentCounter
    }

    func finish(_ session: SimulatedSession, _ end: ReplyStreamEnd) {
        lock.withLock {
            session.replying = false
            if end == .clientGone { session.hungUp = true }
        }
    }

    /// The events of a full reply (greeting when `transcript` is nil).
    func replyEvents(phrase: SpeechLibrary.Phrase, transcript: String?, lateTranscript: Bool) -> [ReplyEvent] {
        let streamer = ReplyStreamer(configuration: configuration, faults: configuration.faults, clock: clock)
        var events = streamer.audioChunks(phrase.pcm, random: &random).map(ReplyEvent.audio)
        if let transcript {
            // A spoken turn's transcription lands among the audio now and then (trace 14);
            // a typed turn's transcript is the server's own echo and always comes first.
            let position = lateTranscript && random.next() % 5 == 0 ? min(events.count, 1 + Int(random.next() % 3)) : 0
            events.insert(ReplyEvent(name: "transcript", data: ["text": .string(transcript)]), at: position)
        }
        let firstAudio = Double(configuration.firstAudioMs) / 1000 + Double(random.next() % 50) / 1000
        let total = firstAudio + Double(phrase.pcm.count) / 48_000 / max(configuration.pace, 1)
        events.append(ReplyEvent(name: "response", data: ["text": .string(phrase.text)]))
        events.append(ReplyEvent(name: "timing", data: ["step": "first_audio", "duration_s": .double((firstAudio * 1000).rounded() / 1000)]))
        events.append(ReplyEvent(name: "timing", data: ["step": "total", "duration_s": .double((total * 1000).rounded() / 1000)]))
        events.append(ReplyEvent(name: "done", data: [:]))
        return events
    }
}

/// ISO-8601 timestamps as the server's Python writes them (`isoformat()`, microseconds, UTC).
enum Timestamp {
    static func now() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        var seconds = time.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%06d+00:00", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, time.tv_nsec / 1000)
    }
}
