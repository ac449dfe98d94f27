import FoundationEssentials
import PracticeNet
import PracticeProtocol

/// practicectl's commands for hearing the tutor again (issue 69): the last reply replayed,
/// slower if asked, the learner's own turn, and the rate every reply plays at.
extension PracticeCtl {
    static let replayUsage = """
          replay [RATE]        play the tutor's last reply again (the greeting included), at
                               RATE (0.5 to 2.0, e.g. 0.75, 0.75x or 75%; the playback rate by
                               default), at the same pitch
          hear-me [TURN] [RATE]
                               play your own last turn of the session (or TURN, an id from
                               `session` or `spool`) as it was sent, at RATE (1.0 by default)
          rate [RATE]          the rate replies play at; RATE sets it (kept for the visit)
        """

    /// The replay commands: a plan, or nil when `command` is not one of them.
    static func replayPlan(_ command: String, _ rest: [String]) -> Plan? {
        if command == "hear-me" { return hearMePlan(rest) }
        let name: String
        switch command {
        case "replay": name = Command.ReplyReplay.name
        case "rate": name = Command.PlaybackRate.name
        default: return nil
        }
        guard rest.count <= 1 else { usageError("\(command) takes one rate at most") }
        guard let text = rest.first else { return .request(name, .object([])) }
        // The daemon checks the range and says so; here only the number's form.
        guard let rate = parseRate(text) else { usageError("\(command) RATE: a number such as 0.75, 0.75x or 75%, not '\(text)'") }
        return .request(name, ["rate": .double(rate)])
    }

    /// `hear-me [TURN] [RATE]`: a word that reads as a rate is the rate, another the turn's id.
    static func hearMePlan(_ rest: [String]) -> Plan {
        guard rest.count <= 2 else { usageError("hear-me takes a turn id and a rate at most") }
        var args: [(String, JSONValue)] = []
        for word in rest {
            if let rate = parseRate(word) {
                guard !args.contains(where: { $0.0 == "rate" }) else { usageError("hear-me takes one rate") }
                args.append(("rate", .double(rate)))
            } else {
                guard !args.contains(where: { $0.0 == "turn_id" }) else { usageError("hear-me takes one turn id") }
                args.append(("turn_id", .string(word)))
            }
        }
        return .request(Command.TurnReplay.name, .object(args))
    }

    /// `0.75`, `0.75x`, `75%`; nil for anything else (NaN and infinities included).
    static func parseRate(_ text: String) -> Double? {
        let lowered = text.lowercased()
        let value: Double?
        if lowered.hasSuffix("%") {
            value = Double(lowered.dropLast()).map { $0 / 100 }
        } else if lowered.hasSuffix("x") || lowered.hasSuffix("×") {
            value = Double(lowered.dropLast())
        } else {
            value = Double(lowered)
        }
        guard let value, value.isFinite else { return nil }
        return value
    }
}
