import AudioKernel
import FoundationEssentials
import Glibc
import PracticeControl
import PracticeKit
import PracticeProtocol
import PracticeNet

/// practicectl: the control socket from the shell. Human-readable output by default,
/// `--json` for scripts. Exit codes: 0 done, 1 the daemon answered with an error,
/// 64 usage, 69 the daemon is not running, 75 no answer in time, 77 permission denied.
@main
struct PracticeCtl {
    static let usage = """
        usage: practicectl [--socket PATH] [--json] [--timeout SECONDS] [--wait-for EVENT[,EVENT...]] COMMAND [ARGS]

        commands:
          ping                 is the daemon there?
          status               version, uptime, devices, backend, session, counters
          devices              the ALSA and PulseAudio capture and playback devices
          topics               the backend's conversation topics (cached when offline)
          profile [evaluate | goal [TEXT]]
                               the learner's profile; re-evaluate the level; set or clear the goal
          start TOPIC          start a conversation on a topic (plays the greeting)
          review-mode          start a weak-point review session
          session              the session's stage, id, mode, turns, spool
          talk | done | cancel push-to-talk: start a turn, end it (it is sent), drop it
          listen               hands-free: the turn starts and ends with the learner's speech
          say TEXT...          a typed turn
          end                  end the talk (conversation: review follows; review mode: idle)
          review               the review: segments, marks, corrections, summary
          correct SEGMENT TEXT...
                               ask for a correction of a segment
          finish               finish the review and wait for the summary
          close                leave the session, whatever its stage
          visit [end | touch]  the learner's visit; end it ("I'm done": its learner is
                               forgotten); touch: the learner is there (begins one)
          spool [retry ID | discard ID | discard-answer ID]
                               turns and cue answers waiting for delivery, and what was set aside;
                               send a turn again; drop a turn; drop a cue answer
          play [--mix] PATH    play a WAV file (8-192 kHz, 1-8 channels, 8/16/24/32-bit, float,
                               A-law or mu-law) through the speaker; --mix mixes it over what plays
          stop                 stop playback (barge-in on a reply)
          volume [LEVEL]       the speaker's volume; LEVEL sets it: 0 to 1, 50%, or -6dB
          level                a live input level bar (Ctrl-C to end)
          events [TOPIC ...]   follow events (all topics when none are named)
          config               the daemon's configuration
          metrics              Prometheus metrics
          call COMMAND [JSON]  any command, with its arguments as a JSON object
        \(replayUsage)\n\(cueUsage)

        --wait-for EVENT[,EVENT...] works with every command but level: it subscribes to the
        events' topics, sends the command, then prints the events until one of those arrives
        (`stage:NAME` waits for a stage; after `play`, only that clip's playback events count);
        an unknown event name is a usage error (64). Exit 1 when a failure event of the flow
        waited on comes first (`session.failed` always; `review.finish_failed` for
        session.completed, `review.failed` for review.ready, `turn.failed`, `turn.rejected`,
        `turn.pending` or `reply.incomplete` for a reply, `playback.failed` for a clip,
        `cue.discarded`, `cue.upload_failed` or `cue.results_failed` for a cue answer, ...),
        75 at the timeout (--timeout, default 10 s).

        The socket defaults to $PRACTICED_SOCKET, then $XDG_RUNTIME_DIR/practiced/control.sock,
        then /run/practiced/control.sock.
        """

    enum Exit: Int32 {
        case ok = 0, commandError = 1, usage = 64, notRunning = 69, timedOut = 75, permissionDenied = 77
    }

    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var json = false
        var timeout = 10.0
        var timeoutGiven = false
        var socket = defaultSocket()
        var waitFor: [String] = []
        while let first = arguments.first, first.hasPrefix("-") {
            arguments.removeFirst()
            switch first {
            case "--json": json = true
            case "--socket":
                guard !arguments.isEmpty else { usageError("--socket needs a path") }
                socket = arguments.removeFirst()
            case "--timeout":
                guard let value = arguments.first.flatMap(Double.init), value > 0 else { usageError("--timeout needs a number of seconds") }
                arguments.removeFirst()
                timeout = value
                timeoutGiven = true
            case "--wait-for":
                guard let value = arguments.first, !value.isEmpty else { usageError("--wait-for needs event names") }
                arguments.removeFirst()
                waitFor = value.split(separator: ",").map(String.init)
            case "-h", "--help":
                print(usage)
                exit(Exit.ok.rawValue)
            default: usageError("unknown option \(first)")
            }
        }
        guard let command = arguments.first else { usageError("no command") }
        let rest = Array(arguments.dropFirst())
        // Everything is checked before the daemon is asked anything: a wait that cannot end
        // is a usage error, never a command sent and then a silent no-op.
        for name in waitFor where !Self.waitableEvents.contains(name) {
            usageError("--wait-for: '\(name)' is not an event of practiced/1; the events are: "
                       + Self.waitableEvents.sorted().joined(separator: ", "), showingUsage: false)
        }
        let plan = plan(command, rest)
        if case .level = plan, !waitFor.isEmpty {
            usageError("level follows the input level until it is interrupted; --wait-for does not apply to it")
        }
        if case .cue = plan, !waitFor.isEmpty {
            usageError("\(command) follows what it starts by itself; --wait-for does not apply to it")
        }
        do {
            let client = try ControlClient(path: socket, timeout: timeout)
            switch plan {
            case .request(let name, let args):
                // Subscribed before the command is sent: an event it causes at once is not missed.
                if !waitFor.isEmpty { _ = try client.request(Command.Subscribe.name, ["topics": .array(topics(awaiting: waitFor).map { .string($0) })], timeout: timeout) }
                let result = try client.request(name, args, timeout: timeout)
                output(result, json: json || command == "call", command: command)
                fflush(nil)  // the reply before the events that follow it
                if !waitFor.isEmpty { try follow(client, until: waitFor, of: Sound(result), timeout: timeout, json: json) }
            case .events(let named):
                let topics = named.isEmpty ? [] : Set(named).union(topics(awaiting: waitFor)).sorted()
                _ = try client.request(Command.Subscribe.name, topics.isEmpty ? .object([]) : ["topics": .array(topics.map { .string($0) })], timeout: timeout)
                if !waitFor.isEmpty {
                    try follow(client, until: waitFor, of: nil, timeout: timeout, json: json)
                    break
                }
                while true { printEvent(try client.nextEvent(timeout: 24 * 3600), json: json, numbered: true) }
            case .cue(let script):
                // An answer's evaluation takes the backend tens of seconds.
                if case .answer = script, !timeoutGiven { timeout = 120 }
                try run(script, client: client, timeout: timeout, json: json)
            case .level:
                _ = try client.request(Command.LevelWatch.name, ["enabled": true], timeout: timeout)
                while true {
                    let event = try client.nextEvent(timeout: 24 * 3600)
                    guard event["event"]?.stringValue == "level", let rms = event["data"]?["rms_dbfs"]?.doubleValue else { continue }
                    if json {
                        emit(event.serialized(.compact) + "\n")
                    } else {
                        // -60 dBFS and below: empty; 0 dBFS: full.
                        let filled = max(0, min(40, Int((rms + 60) / 60 * 40)))
                        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 40 - filled)
                        emit("\r[\(bar)] \(String.printf("%6.1f", rms)) dBFS ")
                    }
                }
            }
            exit(Exit.ok.rawValue)
        } catch {
            write(2, "practicectl: \(error)\n")
            switch error {
            case .notRunning: exit(Exit.notRunning.rawValue)
            case .permissionDenied: exit(Exit.permissionDenied.rawValue)
            case .command(let failure) where failure.code == .permissionDenied: exit(Exit.permissionDenied.rawValue)
            case .timedOut: exit(Exit.timedOut.rawValue)
            case .command, .protocolError: exit(Exit.commandError.rawValue)
            }
        }
    }

    /// What a command line asks of the daemon.
    enum Plan {
        /// One command and its arguments.
        case request(String, JSONValue)
        /// Follow events (of these topics; all when none).
        case events([String])
        /// The live input level.
        case level
        /// A cue practice conversation (sign-in with its code, an answer and its results).
        case cue(CueScript)
    }

    /// The daemon's command for a command line (a usage error exits here).
    static func plan(_ command: String, _ rest: [String]) -> Plan {
        if let (name, args) = sessionCommand(command, rest) { return .request(name, args) }
        if let plan = cuePlan(command, rest) ?? replayPlan(command, rest) { return plan }
        switch command {
        case "ping", "status", "devices", "topics", "config", "metrics":
            guard rest.isEmpty else { usageError("\(command) takes no arguments") }
            return .request(command == "config" ? Command.ConfigGet.name : command, .object([]))
        case "play":
            let mix = rest.first == "--mix"
            let paths = mix ? Array(rest.dropFirst()) : rest
            guard paths.count == 1 else { usageError("play needs one path") }
            let path = paths[0].hasPrefix("/") ? paths[0] : FileManager.default.currentDirectoryPath + "/" + paths[0]
            var args: [(String, JSONValue)] = [("path", .string(path))]
            if mix { args.append(("mix", .bool(true))) }
            return .request(Command.Play.name, .object(args))
        case "stop":
            guard rest.isEmpty else { usageError("stop takes no arguments") }
            return .request(Command.PlaybackStop.name, .object([]))
        case "volume":
            guard rest.count <= 1 else { usageError("volume takes one level at most") }
            guard let text = rest.first else { return .request(Command.VolumeGet.name, .object([])) }
            let lowered = text.lowercased().replacing(" ", with: "")
            if lowered.hasSuffix("db"), let decibels = Double(lowered.dropLast(2)) {
                return .request(Command.VolumeSet.name, ["db": .double(decibels)])  // the daemon checks the range and says so
            }
            guard let level = VolumeLevel.parse(text) else {
                usageError("volume LEVEL: a gain from 0 to 1, a percentage such as 50%, or dB from -100 to 0 such as -6dB")
            }
            return .request(Command.VolumeSet.name, ["level": .double(level)])
        case "call":
            guard let name = rest.first else { usageError("call needs a command") }
            guard rest.count > 1 else { return .request(name, .object([])) }
            guard rest.count == 2, let parsed = try? JSONDecoder().decode(JSONValue.self, from: Data(rest[1].utf8)), parsed.isObject else {
                usageError("the arguments of call must be one JSON object")
            }
            return .request(name, parsed)
        case "events":
            for topic in rest where !ProtocolCatalog.subscribableTopicNames.contains(topic) {
                usageError("events: '\(topic)' is not a topic; the topics are: \(ProtocolCatalog.subscribableTopicNames.joined(separator: ", "))")
            }
            return .events(rest)
        case "level":
            guard rest.isEmpty else { usageError("level takes no arguments") }
            return .level
        default:
            usageError("unknown command '\(command)'")
        }
    }

    /// The names `--wait-for` takes: every event of the protocol (but the snapshot a
    /// subscription starts with), and `stage:NAME` for each stage of the session.
    static let waitableEvents: Set<String> = {
        var names = Set(ProtocolCatalog.events.filter { $0.topic != .state }.map { $0.name })
        names.formUnion(SessionStage.allCases.map { "stage:\($0.rawValue)" })
        return names
    }()

    /// The topics to follow for a wait: those of the awaited events and of the failures
    /// that end the wait.
    static func topics(awaiting names: [String]) -> [String] {
        let topicOf = Dictionary(ProtocolCatalog.events.map { ($0.name, $0.topic.rawValue) }, uniquingKeysWith: { first, _ in first })
        let events = Set(names).union(failures(endingTheWaitFor: names)).map { $0.hasPrefix("stage:") ? Event.SessionStage.name : $0 }
        return Set(events.compactMap { topicOf[$0] }).sorted()
    }

    /// The sound a `play` answered with: a wait for `playback.*` follows this sound's
    /// events only, not those of a reply or clip it replaced.
    struct Sound {
        let number: Int
        let mixed: Bool

        init?(_ result: JSONValue) {
            guard let number = result["sound"]?.intValue, let mixed = result["mixed"]?.boolValue else { return nil }
            self.number = number
            self.mixed = mixed
        }

        /// Whether `data` is an event of another sound.
        func isOther(_ data: JSONValue?) -> Bool {
            guard let number = data?["sound"]?.intValue, let mixed = data?["mixed"]?.boolValue else { return false }
            return number != self.number || mixed != self.mixed
        }
    }

    /// The session commands: the daemon's command and its arguments (nil: not one).
    static func sessionCommand(_ command: String, _ rest: [String]) -> (String, JSONValue)? {
        let text = rest.joined(separator: " ")
        func none(_ name: String) -> (String, JSONValue) {
            guard rest.isEmpty else { usageError("\(command) takes no arguments") }
            return (name, .object([]))
        }
        switch command {
        case "start":
            guard rest.count == 1 else { usageError("start needs one topic id (see `practicectl topics`)") }
            return (Command.SessionStart.name, ["mode": "conversation", "topic_id": .string(rest[0])])
        case "review-mode":
            guard rest.isEmpty else { usageError("review-mode takes no arguments") }
            return (Command.SessionStart.name, ["mode": "review"])
        case "session": return none(Command.SessionGet.name)
        case "talk": return none(Command.TurnStart.name)
        case "done": return none(Command.TurnStop.name)
        case "cancel": return none(Command.TurnCancel.name)
        case "listen": return none(Command.Listen.name)
        case "say":
            guard !text.isEmpty else { usageError("say needs text") }
            return (Command.Say.name, ["text": .string(text)])
        case "end": return none(Command.SessionEnd.name)
        case "review": return none(Command.ReviewGet.name)
        case "correct":
            guard rest.count >= 2, let segment = Int(rest[0]) else { usageError("correct needs a segment id and a message") }
            return (Command.CorrectionAsk.name, ["segment_id": .int(segment), "message": .string(rest.dropFirst().joined(separator: " "))])
        case "finish": return none(Command.ReviewFinish.name)
        case "close": return none(Command.SessionClose.name)
        case "visit":
            let name = rest.isEmpty ? Command.Status.name : ["end": Command.VisitEnd.name, "touch": Command.VisitTouch.name][rest[0]]
            guard rest.count <= 1, let name else { usageError("visit takes nothing, end, or touch") }
            return none(name)
        case "profile":
            switch rest.first {
            case nil: return (Command.Profile.name, ["action": "get"])
            case "evaluate": return (Command.Profile.name, ["action": "evaluate"])
            case "goal":
                let goal = rest.dropFirst().joined(separator: " ")
                return (Command.Profile.name, ["action": "learning_goal", "learning_goal": goal.isEmpty ? .null : .string(goal)])
            default: usageError("profile takes nothing, evaluate, or goal TEXT")
            }
        case "spool":
            switch (rest.first, rest.count) {
            case (nil, _), ("list", 1): return (Command.SpoolList.name, .object([]))
            case ("retry", 2): return (Command.SpoolRetry.name, ["turn_id": .string(rest[1])])
            case ("discard", 2): return (Command.SpoolDiscard.name, ["turn_id": .string(rest[1])])
            case ("discard-answer", 2): return (Command.CueDiscard.name, ["answer_id": .string(rest[1])])
            default: usageError("spool takes nothing, retry ID, discard ID or discard-answer ID")
            }
        default: return nil
        }
    }

    /// Prints events until one named in `names` (or `stage:NAME`) arrives; with `sound`, the
    /// events of other sounds are passed over.
    static func follow(_ client: ControlClient, until names: [String], of sound: Sound?, timeout: Double, json: Bool) throws(ControlClient.Failure) {
        let deadline = Date().addingTimeInterval(timeout)
        let failures = failures(endingTheWaitFor: names)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                write(2, "practicectl: no \(names.joined(separator: " or ")) within \(timeout) s\n")
                exit(Exit.timedOut.rawValue)
            }
            let event = try client.nextEvent(timeout: remaining)
            guard let name = event["event"]?.stringValue, name != DaemonSnapshot.name else { continue }
            if sound?.isOther(event["data"]) == true { continue }
            printEvent(event, json: json, numbered: false)
            let stage = name == Event.SessionStage.name ? event["data"]?["stage"]?.stringValue.map { "stage:\($0)" } : nil
            if names.contains(name) || stage.map(names.contains) == true { return }
            if failures.contains(name) { exit(Exit.commandError.rawValue) }
        }
    }

    /// One event: the line as the daemon sent it (`--json`), or its name and data.
    static func printEvent(_ event: JSONValue, json: Bool, numbered: Bool) {
        if json {
            emit(event.serialized(.compact) + "\n")
        } else if numbered {
            emit("\(event["seq"]?.intValue ?? 0) \(event["event"]?.stringValue ?? "?") \(event["data"]?.serialized(.compact) ?? "")\n")
        } else {
            emit("  \(event["event"]?.stringValue ?? "?") \(event["data"]?.serialized(.compact) ?? "")\n")
        }
    }

    /// The failure events that end a wait for `names` with exit 1: those of the flows the
    /// awaited events belong to, and `session.failed` always. A failure of the flow waited
    /// on means the awaited event will not come (a finish that failed never completes).
    static func failures(endingTheWaitFor names: [String]) -> Set<String> {
        // Event names from the protocol's own types: a renamed event cannot leave a stale
        // string here. Stages (`stage:…`) are practicectl's own wait syntax.
        typealias E = Event
        let flows: [(awaited: Set<String>, failures: Set<String>)] = [
            ([E.SessionCompleted.name, "stage:completed", "stage:finishing"], [E.ReviewFinishFailed.name]),
            ([E.ReviewReady.name, "stage:reviewed", "stage:reviewing", E.SessionEnded.name, "stage:ending"],
             [E.ReviewFailed.name, E.SessionEndFailed.name]),
            ([E.SessionCreated.name, "stage:greeting", "stage:starting"], [E.GreetingFailed.name]),
            ([E.ReplyFinished.name, E.ReplyText.name, E.ReplyAudioStarted.name, E.Transcript.name, "stage:ready", "stage:replying",
              "stage:uploading", E.TurnAccepted.name, E.TurnRecorded.name, E.TurnSpooled.name],
             [E.TurnFailed.name, E.TurnRejected.name, E.TurnPending.name, E.ReplyIncomplete.name, E.GreetingFailed.name]),
            ([E.CorrectionAdded.name], [E.CorrectionFailed.name]),
            ([E.PlaybackFinished.name, E.PlaybackStarted.name], [E.PlaybackFailed.name]),
            ([E.CueRecorded.name, E.CueSpooled.name, E.CueUploadStep.name, E.CueUploaded.name, E.CueTranscript.name, E.CueEvaluation.name],
             [E.CueDiscarded.name, E.CueSpoolFailed.name, E.CueUploadFailed.name, E.CueResultsFailed.name]),
        ]
        var failures: Set<String> = [E.SessionFailed.name]
        for flow in flows where !flow.awaited.isDisjoint(with: names) { failures.formUnion(flow.failures) }
        return failures.subtracting(names)
    }

    static func defaultSocket() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let socket = environment["PRACTICED_SOCKET"], !socket.isEmpty { return socket }
        if getuid() != 0, let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return "\(runtime)/practiced/control.sock" }
        return "/run/practiced/control.sock"
    }

    static func output(_ result: JSONValue, json: Bool, command: String) {
        if json {
            print(result.serialized(.compact))
            return
        }
        switch command {
        case "metrics":
            print(result["text"]?.stringValue ?? "", terminator: "")
        case "visit":
            // Plain `visit` asks for the status and shows its visit only.
            printTree(result["visit"] ?? result, indent: "")
        case "ping":
            print("pong (up \(result["uptime_s"]?.doubleValue ?? 0) s)")
        case "volume":
            let level = result["level"]?.doubleValue ?? 0
            let decibels = result["db"]?.doubleValue.map { String.printf("%.1f dB", $0) } ?? "silent"
            print("volume \(String.printf("%.3f", level)) (\(decibels))")
        case "devices":
            for direction in ["capture", "playback"] {
                print("\(direction):")
                for device in result[direction]?.arrayValue ?? [] {
                    print("  \(device["name"]?.stringValue ?? "?")  \(device["description"]?.stringValue ?? "")")
                }
            }
            for error in result["errors"]?.arrayValue ?? [] { print("note: \(error.stringValue ?? "")") }
        default:
            if !cueOutput(result, command: command) { printTree(result, indent: "") }
        }
    }

    /// Objects as indented `key: value` lines.
    static func printTree(_ value: JSONValue, indent: String) {
        switch value {
        case .object(let members):
            for (key, member) in members {
                if member.isObject {
                    print("\(indent)\(key):")
                    printTree(member, indent: indent + "  ")
                } else {
                    print("\(indent)\(key): \(scalar(member))")
                }
            }
        default:
            print("\(indent)\(scalar(value))")
        }
    }

    static func scalar(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): return text
        case .null: return "-"
        default: return value.serialized(.compact)
        }
    }

    /// Followed output goes straight to fd 1 (print's buffer would hold it on a pipe).
    static func emit(_ text: String) { write(1, text) }

    /// All of `text` to `fd`, unbuffered (practicectl links FoundationEssentials only: no
    /// FileHandle). A closed pipe or full disk is not practicectl's to report: ignored.
    static func write(_ fd: Int32, _ text: String) {
        var text = text
        _ = text.withUTF8 { SystemCall.writeAll(fd, UnsafeRawBufferPointer($0)) }
    }

    static func usageError(_ message: String, showingUsage: Bool = true) -> Never {
        write(2, "practicectl: \(message)\n" + (showingUsage ? "\(usage)\n" : ""))
        exit(Exit.usage.rawValue)
    }
}
