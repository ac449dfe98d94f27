import Foundation
import PracticeKit

/// practicectl: the control socket from the shell. Human-readable output by default,
/// `--json` for scripts. Exit codes: 0 done, 1 the daemon answered with an error,
/// 64 usage, 69 the daemon is not running, 75 no answer in time, 77 permission denied.
@main
struct PracticeCtl {
    static let usage = """
        usage: practicectl [--socket PATH] [--json] [--timeout SECONDS] COMMAND [ARGS]

        commands:
          ping                 is the daemon there?
          status               version, uptime, devices, backend, spool, counters
          devices              the ALSA and PulseAudio capture and playback devices
          topics               the backend's conversation topics (cached when offline)
          play PATH            play a WAV file (PCM16, 24 kHz, mono) through the speaker
          stop                 stop playback
          level                a live input level bar (Ctrl-C to end)
          events [TOPIC ...]   follow events (all topics when none are named)
          config               the daemon's configuration
          metrics              Prometheus metrics
          call COMMAND [JSON]  any command, with its arguments as a JSON object

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
            case "-h", "--help":
                print(usage)
                exit(Exit.ok.rawValue)
            default: usageError("unknown option \(first)")
            }
        }
        guard let command = arguments.first else { usageError("no command") }
        let rest = Array(arguments.dropFirst())
        let known = ["ping", "status", "devices", "topics", "config", "metrics", "play", "stop", "call", "events", "level"]
        guard known.contains(command) else { usageError("unknown command '\(command)'") }
        do {
            let client = try ControlClient(path: socket, timeout: timeout)
            switch command {
            case "ping", "status", "devices", "topics", "config", "metrics":
                guard rest.isEmpty else { usageError("\(command) takes no arguments") }
                let name = ["config": "config.get"][command] ?? command
                let result = try client.request(name, timeout: timeout)
                output(result, json: json, command: command)
            case "play":
                guard rest.count == 1 else { usageError("play needs one path") }
                let path = rest[0].hasPrefix("/") ? rest[0] : FileManager.default.currentDirectoryPath + "/" + rest[0]
                output(try client.request("play", ["path": .string(path)], timeout: timeout), json: json, command: command)
            case "stop":
                output(try client.request("playback.stop", timeout: timeout), json: json, command: command)
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
                        emit(String(format: "\r[%@] %6.1f dBFS ", bar, rms))
                    }
                }
            default:
                usageError("unknown command '\(command)'")
            }
        } catch {
            FileHandle.standardError.write(Data("practicectl: \(error)\n".utf8))
            switch error {
            case .notRunning: exit(Exit.notRunning.rawValue)
            case .permissionDenied: exit(Exit.permissionDenied.rawValue)
            case .command(let failure) where failure.code == .permissionDenied: exit(Exit.permissionDenied.rawValue)
            case .timedOut: exit(Exit.timedOut.rawValue)
            case .command, .protocolError: exit(Exit.commandError.rawValue)
            }
        }
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
    static func emit(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }

    static func usageError(_ message: String) -> Never {
        FileHandle.standardError.write(Data("practicectl: \(message)\n\(usage)\n".utf8))
        exit(Exit.usage.rawValue)
    }
}
