import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport

/// Follows the daemon's events through a chaos run and checks them as they come: every
/// `session.stage` starts where the last one ended (nothing missed) and is a transition
/// the stage table (``SessionStage/canMove(to:)``) allows. It keeps the turns spooled and
/// discarded for the final account, and it must never be disconnected: it always reads.
final class StageChecker: @unchecked Sendable {
    private let client: ControlClient
    private let ledger: ChaosLedger
    private let lock = NSLock()
    private var running = true
    private var thread: TestThread?
    private var spooled: [String] = []
    private var discarded: Set<String> = []
    private var transitions = 0

    init(socket: String, ledger: ChaosLedger) throws {
        client = try ControlClient(path: socket, timeout: 15)
        self.ledger = ledger
        _ = try client.request(Command.Subscribe.self, ["topics": ["session", "playback", "device", "daemon"]], timeout: 15)
        let stage = try client.request(Command.SessionGet.self, timeout: 15)["stage"]?.stringValue ?? "idle"
        ledger.currentStage = stage
        thread = TestThread(name: "stage-checker") { [self] in follow(from: stage) }
    }

    private var isRunning: Bool { lock.withLock { running } }

    private func follow(from initial: String) {
        var last = initial
        while isRunning {
            let event: JSONValue
            do {
                event = try client.nextEvent(timeout: 0.2)
            } catch .timedOut {
                continue
            } catch {
                ledger.violation("checker: disconnected: \(error)")
                return
            }
            let name = event["event"]?.stringValue ?? "?"
            let data = event["data"] ?? .null
            ledger.count("event \(name)")
            switch name {
            case "session.stage":
                let previous = data["previous"]?.stringValue ?? "?", next = data["stage"]?.stringValue ?? "?"
                if previous != last { ledger.violation("checker: \(previous) → \(next), but the last stage seen was \(last)") }
                if let from = SessionStage(rawValue: previous), let to = SessionStage(rawValue: next) {
                    if !from.canMove(to: to) { ledger.violation("checker: \(previous) → \(next) is not in the stage table") }
                } else {
                    ledger.violation("checker: unknown stage in \(data.serialized(.compact))")
                }
                ledger.count("transition \(previous)→\(next)")
                last = next
                ledger.currentStage = next
                lock.withLock { transitions += 1 }
            case "turn.spooled":
                if let id = data["turn_id"]?.stringValue { lock.withLock { spooled.append(id) } }
            case "spool.discarded":
                if let id = data["turn_id"]?.stringValue { lock.withLock { _ = discarded.insert(id) } }
            default:
                break
            }
        }
    }

    func stop() {
        lock.withLock { running = false }
        if thread?.join(timeout: 10) == false { ledger.violation("checker: its thread did not end") }
    }

    var spooledTurns: [String] { lock.withLock { spooled } }
    var discardedTurns: Set<String> { lock.withLock { discarded } }
    var transitionCount: Int { lock.withLock { transitions } }
}
