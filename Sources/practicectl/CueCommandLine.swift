import FoundationEssentials
import Glibc
import PracticeControl
import PracticeKit
import PracticeProtocol
import PracticeNet

/// practicectl's commands for cue practice (a daemon with `backend.kind = chatterbox`), in
/// the style of the conversation's: what a person types at a kiosk's shell to sign a learner
/// in, pick a card, answer it aloud and read the results.
extension PracticeCtl {
    static let cueUsage = """
        cue practice (backend.kind = chatterbox):
          signin EMAIL [CODE]  sign in: mails a code and asks for it (on a terminal; else one
                               line of stdin); with CODE, signs in with a code already mailed;
                               `signin --link TOKEN` signs in with a magic link's token
          signout              forget the learner (spooled answers stay)
          learner [LANGUAGE]   who is signed in, in which language; LANGUAGE switches it
          cards [shuffle]      the learner's cue cards (cached when offline); shuffle: others
          card ID              one card with its recordings
          answer ID [--hands-free]
                               answer a card aloud: speak, then Enter (or hands-free: the answer
                               ends when the learner stops); then follows its upload, transcript
                               and evaluation (--timeout, default 120 s here)
          results RECORDING    a recording's transcript and evaluation (asked again if needed)
          history [LIMIT]      the learner's recordings, newest first (20 by default)
          hear RECORDING [RATE]
                               play a recording through the speaker (at RATE: 0.5 to 2.0)
        """

    /// What a cue command line asks for: one request, or a conversation with the daemon.
    enum CueScript {
        case signIn(email: String, code: String?)
        case answer(cue: Int, handsFree: Bool)
    }

    /// The cue commands: a plan, or nil when `command` is not one of them.
    static func cuePlan(_ command: String, _ rest: [String]) -> Plan? {
        func none(_ name: String) -> Plan {
            guard rest.isEmpty else { usageError("\(command) takes no arguments") }
            return .request(name, .object([]))
        }
        func number(_ text: String, _ what: String) -> Int {
            guard let value = Int(text), value > 0 else { usageError("\(command): \(what) is a positive number, not '\(text)'") }
            return value
        }
        switch command {
        case "signin":
            if rest.first == "--link" {
                guard rest.count == 2 else { usageError("signin --link needs the link's token") }
                return .request(Command.SignInLink.name, ["token": .string(rest[1])])
            }
            guard (1...2).contains(rest.count), rest[0].contains("@") else { usageError("signin needs the learner's email address (and the mailed code)") }
            return .cue(.signIn(email: rest[0], code: rest.count == 2 ? rest[1] : nil))
        case "signout": return none(Command.SignOut.name)
        case "learner":
            guard rest.count <= 1 else { usageError("learner takes one language code at most") }
            return rest.first.map { .request(Command.LearnerLanguage.name, ["language": .string($0)]) } ?? .request(Command.LearnerGet.name, .object([]))
        case "cards":
            guard rest.isEmpty || rest == ["shuffle"] else { usageError("cards takes nothing or shuffle") }
            return .request(Command.CuesGet.name, rest.isEmpty ? .object([]) : ["shuffle": true])
        case "card":
            guard rest.count == 1 else { usageError("card needs a card's id (see `practicectl cards`)") }
            return .request(Command.CueGet.name, ["cue_id": .int(number(rest[0], "a card's id"))])
        case "answer":
            let handsFree = rest.contains("--hands-free")
            let ids = rest.filter { $0 != "--hands-free" }
            guard ids.count == 1 else { usageError("answer needs a card's id (and --hands-free)") }
            return .cue(.answer(cue: number(ids[0], "a card's id"), handsFree: handsFree))
        case "results":
            guard rest.count == 1 else { usageError("results needs a recording's id (see `practicectl history`)") }
            return .request(Command.CueResults.name, ["recording_id": .int(number(rest[0], "a recording's id"))])
        case "history":
            guard rest.count <= 1 else { usageError("history takes a limit at most") }
            return .request(Command.CueHistory.name, rest.first.map { ["limit": .int(number($0, "the limit"))] } ?? .object([]))
        case "hear":
            guard (1...2).contains(rest.count) else { usageError("hear needs a recording's id (see `practicectl history`), and a rate at most") }
            guard rest.count == 2 else { return .request(Command.CuePlay.name, ["recording_id": .int(number(rest[0], "a recording's id"))]) }
            guard let rate = parseRate(rest[1]) else { usageError("hear ID RATE: a rate such as 0.75, 0.75x or 75%, not '\(rest[1])'") }
            return .request(Command.CuePlay.name, ["recording_id": .int(number(rest[0], "a recording's id")), "rate": .double(rate)])
        default:
            return nil
        }
    }

    /// Runs a cue conversation with the daemon.
    static func run(_ script: CueScript, client: ControlClient, timeout: Double, json: Bool) throws(ControlClient.Failure) {
        switch script {
        case .signIn(let email, let code):
            var code = code
            if code == nil {
                _ = try client.request(Command.SignInRequestCode.name, ["email": .string(email)], timeout: timeout)
                code = ask("A code was mailed to \(email). The code: ")
            }
            guard let code, !code.isEmpty else { usageError("no code was given", showingUsage: false) }
            let learner = try client.request(Command.SignInCode.name, ["email": .string(email), "code": .string(code)], timeout: timeout)
            output(learner, json: json, command: "learner")
        case .answer(let cue, let handsFree):
            // Subscribed first: no event of this answer is missed.
            _ = try client.request(Command.Subscribe.name, ["topics": ["cue"]], timeout: timeout)
            _ = try client.request(Command.CueRecord.name, ["cue_id": .int(cue), "hands_free": .bool(handsFree)], timeout: timeout)
            if handsFree {
                note("listening: speak your answer; it ends when you stop")
            } else {
                _ = ask("recording: speak your answer, then press Enter ")
                _ = try client.request(Command.CueStop.name, timeout: timeout)
            }
            try followAnswer(client, timeout: timeout, json: json)
        }
    }

    /// The answer's events until its evaluation is ready, or a failure (exit 1).
    static func followAnswer(_ client: ControlClient, timeout: Double, json: Bool) throws(ControlClient.Failure) {
        let deadline = Date().addingTimeInterval(timeout)
        var recording: Int?
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                write(2, "practicectl: the answer's evaluation did not come within \(Int(timeout)) s (`practicectl results ID` asks again)\n")
                exit(Exit.timedOut.rawValue)
            }
            let event = try client.nextEvent(timeout: remaining)
            guard let name = event["event"]?.stringValue, name != DaemonSnapshot.name else { continue }
            let data = event["data"]
            // Only this answer's recording, once it is known.
            if let id = data?["recording_id"]?.intValue, let recording, id != recording { continue }
            if json {
                printEvent(event, json: true, numbered: false)
            } else {
                describe(name, data)
            }
            switch name {
            case Event.CueUploaded.name: recording = data?["recording_id"]?.intValue
            case Event.CueEvaluation.name where data?["status"] == "ready": return
            case Event.CueDiscarded.name, Event.CueSpoolFailed.name, Event.CueUploadFailed.name, Event.CueResultsFailed.name:
                exit(Exit.commandError.rawValue)
            default: break
            }
        }
    }

    /// One cue event as a line a person reads.
    private static func describe(_ name: String, _ data: JSONValue?) {
        let value = { (key: String) in data?[key].map(scalar) ?? "-" }
        switch name {
        case Event.CueRecordingStarted.name: emit("recording card \(value("cue_id"))\(data?["hands_free"] == true ? ", hands-free" : "")\n")
        case Event.CueRecorded.name: emit("recorded: \(value("duration_s")) s, \(value("speech_s")) s of speech\n")
        case Event.CueDiscarded.name:
            let why = data?["reason"] == "no_speech" ? "no speech was heard (RMS \(value("rms")), under the gate)" : value("reason") + (data?["message"]?.stringValue.map { ": \($0)" } ?? "")
            emit("not kept: \(why)\n")
        case Event.CueSpoolFailed.name: emit("not kept: \(value("message"))\n")
        case Event.CueUploadFailed.name: emit("upload failed: \(value("reason")) (\(value("error"))); the answer stays in the spool\n")
        case Event.CueResultsFailed.name: emit("no \(value("step")) (\(value("error"))): `practicectl results \(value("recording_id"))` asks again\n")
        case Event.CueSpooled.name: emit("kept: answer \(value("answer_id")) (\(value("bytes")) bytes of AAC-LC)\n")
        case Event.CueUploadStep.name: emit("  upload: \(value("step"))\n")
        case Event.CueUploaded.name: emit("uploaded: recording \(value("recording_id"))\n")
        case Event.CueUploadRetrying.name: emit("  upload failed for now (\(value("error"))); again in \(value("delay_s")) s\n")
        case Event.CueTranscript.name where data?["status"] == "ready": emit("transcript: \(value("transcript"))\n")
        case Event.CueEvaluation.name where data?["status"] == "ready":
            let evaluation = data?["evaluation"] ?? .null
            emit("evaluation: CEFR \(evaluation["cefr_level"].map(scalar) ?? "-")\n")
            if let summary = evaluation["summary"]?.stringValue { emit("  \(summary)\n") }
            for mistake in evaluation["grammar_mistakes"]?.arrayValue ?? [] {
                emit("  \(mistake["original"].map(scalar) ?? "") -> \(mistake["correction"].map(scalar) ?? "")\n")
            }
            if let improved = evaluation["improved_version"]?.stringValue { emit("  improved: \(improved)\n") }
        case Event.CueTranscript.name, Event.CueEvaluation.name: emit("  \(name == Event.CueTranscript.name ? "transcript" : "evaluation"): \(value("status"))\n")
        default: emit("  \(name) \(data?.serialized(.compact) ?? "")\n")
        }
    }

    /// A line from the person at the terminal (prompted), or from stdin when it is not one
    /// (a script); nil at end of input.
    static func ask(_ prompt: String) -> String? {
        if isatty(0) == 1 { write(2, prompt) }
        return readLine(strippingNewline: true).map { String($0.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()) }
    }

    /// A line for the person, not the output: stderr.
    static func note(_ text: String) { write(2, text + "\n") }

    /// Cue results as lines a person reads; nil when `command` has no such form.
    static func cueOutput(_ result: JSONValue, command: String) -> Bool {
        switch command {
        case "cards":
            if result["stale"] == true { print("(offline: kept \(result["age_s"].map(scalar) ?? "?") s ago)") }
            for card in result["cues"]?.arrayValue ?? [] {
                print("\(card["cue_id"].map(scalar) ?? "?")  \(card["title"]?.stringValue ?? "")")
            }
        case "card":
            let card = result["cue"] ?? .null
            print("\(card["cue_id"].map(scalar) ?? "?")  \(card["title"]?.stringValue ?? "")")
            if let details = card["details"]?.stringValue, !details.isEmpty { print(details) }
            for recording in result["recordings"]?.arrayValue ?? [] { printRecording(recording) }
        case "history":
            for recording in result["recordings"]?.arrayValue ?? [] { printRecording(recording) }
            if let more = result["more"]?.intValue, more > 0 { print("(\(more) more)") }
        case "learner", "signout":
            if result["signed_in"] != true { print("not signed in"); return true }
            print("\(result["email"].map(scalar) ?? "-") in \(result["language"].map(scalar) ?? "-") (profile \(result["profile_id"].map(scalar) ?? "-"))")
            if let languages = result["languages"]?.arrayValue, !languages.isEmpty { print("languages: \(languages.map(scalar).joined(separator: " "))") }
        default:
            return false
        }
        return true
    }

    private static func printRecording(_ recording: JSONValue) {
        let cefr = recording["evaluation"]?["cefr_level"].map(scalar) ?? "-"
        print("recording \(recording["recording_id"].map(scalar) ?? "?")  card \(recording["cue_id"].map(scalar) ?? "?")  "
              + "transcript \(recording["transcript_status"].map(scalar) ?? "-")  evaluation \(recording["evaluation_status"].map(scalar) ?? "-") (CEFR \(cefr))")
        if let transcript = recording["transcript"]?.stringValue { print("  \(transcript)") }
    }
}
