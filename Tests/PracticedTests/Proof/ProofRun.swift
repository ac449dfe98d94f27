import AudioKernel
import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport
import XCTest

/// What the proof runs (end-to-end benchmark, soak, load, idle) share: their size from the
/// environment (CI runs the short forms, `.ci/proof` the long ones), a report written as
/// lines that start with `figures:`, and hands-free turns spoken into the kiosk.
enum ProofRun {
    /// An integer from the environment, or the short form's value.
    static func size(_ name: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? value
    }

    /// One line of the run's report; `.ci/proof` collects them.
    static func report(_ text: String) {
        print("figures: \(text)")
        ProofReport.append(text)
    }

    /// A short piece of learner speech (all of it above the gate), so that turns are quick.
    static func speech(seconds: Double, variant: Int) -> [Int16] {
        let source = variant % 2 == 0 ? KioskRig.learner : KioskRig.learner2
        return Array(source.prefix(Int(seconds * 24_000)))
    }
}

extension KioskRig {
    /// The daemon's process figures now.
    func statistics() throws -> ProcessStatistics { try ProcessStatistics(pid: daemon.process.pid) }

    /// A hands-free turn: `listen` (cutting off any reply in flight), the speech, and the
    /// silence after it; the recorder ends the turn by itself. The id of the spooled turn.
    func speakHandsFree(_ samples: [Int16], control: ControlClient, watcher: EventWatcher, file: StaticString = #filePath,
                        line: UInt = #line) throws -> String? {
        let mark = watcher.count
        _ = try control.request(Command.Listen.self)
        microphone.say(samples)
        return watcher.wait(for: Event.TurnSpooled.self, after: mark, timeout: 30, file: file, line: line)?["data"]?["turn_id"]?.stringValue
    }
}

/// Where the spooled turns of a run ended: reached the backend (practice-sim's idempotency
/// keys), still listed pending by `spool.list`, or neither (lost); and those the backend
/// made more than one segment of (answered twice).
struct SpoolAccount {
    var delivered: [String] = []
    var pending: Set<String> = []
    var lost: [String] = []
    var twice: [String] = []

    /// `discarded`: turns a client removed from the spool on purpose (not lost).
    init(spooled: [String], discarded: Set<String> = [], rig: KioskRig, control: ControlClient) throws {
        pending = Set(try control.request(Command.SpoolList.self, timeout: 15)["turns"]?.arrayValue?.compactMap { $0["turn_id"]?.stringValue ?? $0["id"]?.stringValue } ?? [])
        guard case .object(let keyList) = rig.sim.simulator.idempotencyKeys else { throw HarnessError(message: "practice-sim has no idempotency keys") }
        let keys = Dictionary(keyList, uniquingKeysWith: { first, _ in first })
        for id in spooled {
            let requests = keys[id]?["requests"]?.intValue ?? 0, segments = keys[id]?["segments"]?.intValue ?? 0
            if segments > 1 { twice.append(id) }
            if requests > 0 { delivered.append(id) } else if !pending.contains(id) && !discarded.contains(id) { lost.append(id) }
        }
    }
}

/// How a turn ended, from the daemon's events after it was spooled.
enum TurnOutcome: Equatable {
    case replied(JSONValue)  // reply.finished
    case soundStarted  // reply.audio_started (when the run cuts replies short)
    case incomplete  // the stream broke after the backend took the turn
    case discarded
    case pending
    case failed

    static let events = ["reply.finished", "reply.audio_started", "reply.incomplete", "turn.discarded", "turn.pending", "turn.failed"]
    /// The events after which the session is ready for the next turn.
    static let final: Set<String> = ["reply.finished", "reply.incomplete", "turn.discarded", "turn.pending", "turn.failed"]

    init?(_ event: JSONValue) {
        switch event["event"]?.stringValue {
        case "reply.finished": self = .replied(event["data"] ?? .null)
        case "reply.audio_started": self = .soundStarted
        case "reply.incomplete": self = .incomplete
        case "turn.discarded": self = .discarded
        case "turn.pending": self = .pending
        case "turn.failed": self = .failed
        default: return nil
        }
    }
}

extension EventWatcher {
    /// The first event after `index` that ends turn `turn` (`accepting` picks which), or nil
    /// at the deadline. (A reply cut off by the turn's `listen` ends with events of its own.)
    func outcome(of turn: String, after index: Int, timeout: Double, accepting: Set<String> = Set(TurnOutcome.events)) -> (TurnOutcome, Int)? {
        var found: (TurnOutcome, Int)?
        _ = events.wait(timeout: timeout) { list in
            for position in list.indices.dropFirst(index) {
                guard let name = list[position]["event"]?.stringValue, accepting.contains(name),
                      list[position]["data"]?["turn_id"]?.stringValue == turn, let outcome = TurnOutcome(list[position]) else { continue }
                found = (outcome, position)
                return true
            }
            return false
        }
        return found
    }
}
