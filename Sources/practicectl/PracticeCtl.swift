import AudioKernel
import FoundationEssentials
import Glibc
import PracticeKit

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
          spool [retry ID | discard ID]
                               turns waiting for delivery; send one again; drop one
          play [--mix] PATH    play a PCM WAV file (8-192 kHz, 1-8 channels, 16/24/32-bit or
                               float) through the speaker; --mix mixes it over what plays
          stop                 stop playback (barge-in on a reply)
          volume [LEVEL]       the speaker's volume; LEVEL sets it: 0 to 1, 50%, or -6dB
          level                a live input level bar (Ctrl-C to end)
          events [TOPIC ...]   follow events (all topics when none are named)
          config               the daemon's configuration
          metrics              Prometheus metrics
          call COMMAND [JSON]  any command, with its arguments as a JSON object

        --wait-for EVENT[,EVENT...] sends the command, then prints the session's events until
        one of those arrives (`stage:NAME` waits for a stage); exit 1 when a failure event of
        the flow waited on comes first (`session.failed` always; `review.finish_failed` for
        session.completed, `review.failed` for review.ready, `turn.failed`, `turn.rejected`,
        `turn.pending` or `reply.incomplete` for a reply, ...), 75 at the timeout (--timeout,
        default 10 s).

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
        let known = ["ping", "status", "devices", "topics", "config", "metrics", "play", "stop", "volume", "call", "events", "level"]
        let session = sessionCommand(command, rest)
        guard known.contains(command) || session != nil else { usageError("unknown command '\(command)'") }
        do {
            let client = try ControlClient(path: socket, timeout: timeout)
            if let (name, args) = session {
                if !waitFor.isEmpty { _ = try client.request("subscribe", ["topics": ["session", "playback"]], timeout: timeout) }
                let result = try client.request(name, args, timeout: timeout)
                output(result, json: json, command: command)
                fflush(nil)  // the reply before the events that follow it
                if !waitFor.isEmpty { try follow(client, until: waitFor, timeout: timeout, json: json) }
                exit(Exit.ok.rawValue)
            }
            switch command {
            case "ping", "status", "devices", "topics", "config", "metrics":
                guard rest.isEmpty else { usageError("\(command) takes no arguments") }
                let name = ["config": "config.get"][command] ?? command
                let result = try client.request(name, timeout: timeout)
                output(result, json: json, command: command)
            case "play":
                let mix = rest.first == "--mix"
                let paths = mix ? Array(rest.dropFirst()) : rest
                guard paths.count == 1 else { usageError("play needs one path") }
                let path = paths[0].hasPrefix("/") ? paths[0] : FileManager.default.currentDirectoryPath + "/" + paths[0]
                var args: [(String, JSONValue)] = [("path", .string(path))]
                if mix { args.append(("mix", .bool(true))) }
                output(try client.request("play", .object(args), timeout: timeout), json: json, command: command)
            case "stop":
                output(try client.request("playback.stop", timeout: timeout), json: json, command: command)
            case "volume":
                guard rest.count <= 1 else { usageError("volume takes one level at most") }
                guard let text = rest.first else {
                    output(try client.request("volume.get", timeout: timeout), json: json, command: command)
                    break
                }
                let lowered = text.lowercased().replacing(" ", with: "")
                let argument: (String, Double)
                if lowered.hasSuffix("db"), let decibels = Double(lowered.dropLast(2)) {
                    argument = ("db", decibels)  // the daemon checks the range and says so
                } else if let level = VolumeLevel.parse(text) {
                    argument = ("level", level)
                } else {
                    usageError("volume LEVEL: a gain from 0 to 1, a percentage such as 50%, or dB from -100 to 0 such as -6dB")
                }
                output(try client.request("volume.set", .object([(argument.0, .double(argument.1))]), timeout: timeout), json: json, command: command)
            case "call":
                guard let name = rest.first else { usageError("call needs a command") }
                var args = JSONValue.object([])
                if rest.count > 1 {
                    guard let parsed = try? JSONDecoder().decode(JSONValue.self, from: Data(rest[1].utf8)), parsed.isObject else {
                        usageError("the arguments of call must be a JSON object")
                    }
                    args = parsed
                }
                output(try client.request(name, args, timeout: timeout), json: true, command: command)
            case "events":
                let topics: JSONValue = rest.isEmpty ? .object([]) : ["topics": .array(rest.map { .string($0) })]
                _ = try client.request("subscribe", topics, timeout: timeout)
                while true {
                    let event = try client.nextEvent(timeout: 24 * 3600)
                    if json {
                        emit(event.serialized(.compact) + "\n")
                    } else {
                        emit("\(event["seq"]?.intValue ?? 0) \(event["event"]?.stringValue ?? "?") \(event["data"]?.serialized(.compact) ?? "")\n")
                    }
                }
            case "level":
                _ = try client.request("level.watch", ["enabled": true], timeout: timeout)
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
            default:
                usageError("unknown command '\(command)'")
            }
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
            return ("session.start", ["mode": "conversation", "topic_id": .string(rest[0])])
        case "review-mode":
            guard rest.isEmpty else { usageError("review-mode takes no arguments") }
            return ("session.start", ["mode": "review"])
        case "session": return none("session.get")
        case "talk": return none("turn.start")
        case "done": return none("turn.stop")
        case "cancel": return none("turn.cancel")
        case "listen": return none("listen")
        case "say":
            guard !text.isEmpty else { usageError("say needs text") }
            return ("say", ["text": .string(text)])
        case "end": return none("session.end")
        case "review": return none("review.get")
        case "correct":
            guard rest.count >= 2, let segment = Int(rest[0]) else { usageError("correct needs a segment id and a message") }
            return ("correction.ask", ["segment_id": .int(segment), "message": .string(rest.dropFirst().joined(separator: " "))])
        case "finish": return none("review.finish")
        case "close": return none("session.close")
        case "profile":
            switch rest.first {
            case nil: return ("profile", ["action": "get"])
            case "evaluate": return ("profile", ["action": "evaluate"])
            case "goal":
                let goal = rest.dropFirst().joined(separator: " ")
                return ("profile", ["action": "learning_goal", "learning_goal": goal.isEmpty ? .null : .string(goal)])
            default: usageError("profile takes nothing, evaluate, or goal TEXT")
            }
        case "spool":
            switch (rest.first, rest.count) {
            case (nil, _), ("list", 1): return ("spool.list", .object([]))
            case ("retry", 2): return ("spool.retry", ["turn_id": .string(rest[1])])
            case ("discard", 2): return ("spool.discard", ["turn_id": .string(rest[1])])
            default: usageError("spool takes nothing, retry ID or discard ID")
            }
        default: return nil
        }
    }

    /// Prints session events until one named in `names` (or `stage:NAME`) arrives.
    static func follow(_ client: ControlClient, until names: [String], timeout: Double, json: Bool) throws(ControlClient.Failure) {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                write(2, "practicectl: no \(names.joined(separator: " or ")) within \(timeout) s\n")
                exit(Exit.timedOut.rawValue)
            }
            let event = try client.nextEvent(timeout: remaining)
            guard let name = event["event"]?.stringValue else { continue }
            if name == "snapshot" { continue }
            if json {
                emit(event.serialized(.compact) + "\n")
            } else {
                emit("  \(name) \(event["data"]?.serialized(.compact) ?? "")\n")
            }
            let stage = name == "session.stage" ? event["data"]?["stage"]?.stringValue.map { "stage:\($0)" } : nil
            if names.contains(name) || stage.map(names.contains) == true { return }
            if failures(endingTheWaitFor: names).contains(name) { exit(Exit.commandError.rawValue) }
        }
    }

    /// The failure events that end a wait for `names` with exit 1: those of the flows the
    /// awaited events belong to, and `session.failed` always. A failure of the flow waited
    /// on means the awaited event will not come (a finish that failed never completes).
    static func failures(endingTheWaitFor names: [String]) -> Set<String> {
        let flows: [(awaited: Set<String>, failures: Set<String>)] = [
            (["session.completed", "stage:completed", "stage:finishing"], ["review.finish_failed"]),
            (["review.ready", "stage:reviewed", "stage:reviewing", "session.ended", "stage:ending"], ["review.failed", "session.end_failed"]),
            (["session.created", "stage:greeting", "stage:starting"], ["greeting.failed"]),
            (["reply.finished", "reply.text", "reply.audio_started", "transcript", "stage:ready", "stage:replying", "stage:uploading",
              "turn.accepted", "turn.recorded", "turn.spooled"],
             ["turn.failed", "turn.rejected", "turn.pending", "reply.incomplete", "greeting.failed"]),
            (["correction.added"], ["correction.failed"]),
        ]
        var failures: Set<String> = ["session.failed"]
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
            printTree(result, indent: "")
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

    static func usageError(_ message: String) -> Never {
        write(2, "practicectl: \(message)\n\(usage)\n")
        exit(Exit.usage.rawValue)
    }
}
