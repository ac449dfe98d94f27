import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import SimulatorKit

/// A control client gone wild: connects, sends random requests (valid ones aimed at the
/// session's stage, malformed arguments, garbage lines, pipelined bursts), sometimes hangs
/// up with a request in flight, and reconnects. It checks the daemon's side of the deal:
/// every line gets exactly one reply with its id within its deadline, every error is a
/// known code with a message (never `internal_error`), garbage is refused, and the
/// connection ends only after a line over the limit, with the error first.
final class ChaosClient: @unchecked Sendable {
    private let index: Int
    private let socket: String
    private let ledger: ChaosLedger
    private let paths: ChaosRequest.Paths
    private var random: SeededRandom
    private var nextID = 1
    private var turnIDs: [String] = []

    init(index: Int, seed: UInt64, socket: String, ledger: ChaosLedger, paths: ChaosRequest.Paths) {
        self.index = index
        self.socket = socket
        self.ledger = ledger
        self.paths = paths
        random = SeededRandom(seed: seed &+ UInt64(index) &* 0x1000_0001)
    }

    private struct Pending {
        var request: ChaosRequest
        var sent: Date
    }

    func run(until end: Date) {
        while Date() < end {
            let client: ControlClient
            do {
                client = try ControlClient(path: socket, timeout: 15)
            } catch .command(let error) where error.code == .tooManyClients {
                ledger.count("refused: too_many_clients")
                usleep(100_000)
                continue
            } catch {
                ledger.violation("client \(index): cannot connect: \(error)")
                usleep(500_000)
                continue
            }
            ledger.count("op.connect")
            session(client, operations: 1 + Int(random.next() % 40), until: end)
        }
    }

    /// One connection's worth of operations; returns when it is closed (by either side).
    private func session(_ client: ControlClient, operations: Int, until end: Date) {
        for _ in 0..<operations where Date() < end {
            let shape = random.next() % 25
            var batch: [ChaosRequest] = []
            if shape == 0 {
                // A burst of pipelined requests in one write (the daemon answers four at a
                // time; the rest wait unread in the socket).
                for _ in 0..<(2 + random.next() % 8) {
                    let command = ChaosRequest.element(ChaosRequest.local, &random)
                    let id = takeID()
                    let line: JSONValue = ["id": .int(id), "command": .string(command)]
                    batch.append(ChaosRequest(command: command, bytes: line.bytes(.compact) + [0x0A], expectation: .reply(id: .int(id)),
                                              deadline: ChaosRequest.deadline(of: command), wellFormed: true))
                }
            } else {
                batch.append(ChaosRequest.random(&random, id: takeID(), client: index, stage: ledger.currentStage, turnIDs: turnIDs, paths: paths))
            }
            for request in batch {
                // Well-formed requests' results are checked against their command's schema.
                if request.wellFormed, case .reply(let id) = request.expectation { client.noteSent(id: id, command: request.command) }
            }
            do {
                try client.send(batch.flatMap(\.bytes))
            } catch {
                return ledger.violation("client \(index): send failed (\(error)) though the daemon never ended the connection")
            }
            batch.forEach { ledger.count("op.\($0.command)") }
            if shape == 1 {
                // Gone with the request in flight: the daemon must drop the reply quietly.
                ledger.count("vanished with a request in flight")
                return
            }
            guard awaitReplies(batch, client) else { return }
            usleep(UInt32(random.next() % 100_000))  // pacing: a UI between two taps
        }
    }

    private func takeID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    /// Reads until every request of `batch` has its reply; false when the connection ended.
    private func awaitReplies(_ batch: [ChaosRequest], _ client: ControlClient) -> Bool {
        var pending = batch.map { Pending(request: $0, sent: Date()) }
        while !pending.isEmpty {
            let deadline = pending.map { $0.sent.addingTimeInterval($0.request.deadline) }.min()!
            let message: JSONValue
            do {
                message = try client.readMessage(timeout: max(0.001, deadline.timeIntervalSinceNow))
            } catch .timedOut {
                let late = pending.filter { $0.sent.addingTimeInterval($0.request.deadline) <= Date() }.map(\.request.command)
                ledger.violation("client \(index): no reply within the deadline to \(late) (stage \(ledger.currentStage))")
                return false
            } catch {
                if case .fatal = pending.first?.request.expectation, pending.count == 1 {
                    ledger.violation("client \(index): a line over the limit ended the connection without its error (\(error))")
                } else {
                    ledger.violation("client \(index): the daemon ended the connection with \(pending.map(\.request.command)) unanswered: \(error)")
                }
                return false
            }
            guard message["type"]?.stringValue == "reply" else { continue }  // an event (this client may have subscribed)
            let id = message["id"] ?? .null
            guard let position = pending.firstIndex(where: { matches($0.request, id) }) else {
                ledger.violation("client \(index): a reply to no request of ours: \(message.serialized(.compact).prefix(200))")
                continue
            }
            let answered = pending.remove(at: position)
            ledger.latency(answered.request.command, seconds: Date().timeIntervalSince(answered.sent))
            check(message, to: answered.request)
            if case .fatal = answered.request.expectation {
                // The error came; now the daemon must end the connection in an orderly way.
                do {
                    _ = try client.readLine(timeout: 5)
                    ledger.violation("client \(index): the connection went on after line_too_long")
                } catch .protocolError {
                    ledger.count("closed after line_too_long")
                } catch {
                    ledger.violation("client \(index): no end of the connection after line_too_long: \(error)")
                }
                return false
            }
        }
        return true
    }

    private func matches(_ request: ChaosRequest, _ id: JSONValue) -> Bool {
        switch request.expectation {
        case .reply(let expected): return id == expected || (!request.wellFormed && id == .null)
        case .fatal: return id == .null
        }
    }

    private func check(_ reply: JSONValue, to request: ChaosRequest) {
        let ok = reply["ok"]?.boolValue
        if ok == true {
            if !request.wellFormed { ledger.violation("client \(index): garbage accepted: \(String(decoding: request.bytes.prefix(80), as: UTF8.self))") }
            ledger.count("reply ok")
            if request.command == "spool.list", let turns = reply["result"]?["turns"]?.arrayValue {
                turnIDs = turns.compactMap { $0["turn_id"]?.stringValue ?? $0["id"]?.stringValue }
            }
            return
        }
        guard ok == false, let code = reply["error"]?["code"]?.stringValue, let message = reply["error"]?["message"]?.stringValue else {
            return ledger.violation("client \(index): a reply that is neither a result nor an error: \(reply.serialized(.compact).prefix(200))")
        }
        ledger.count("error \(code)")
        if ControlErrorCode(rawValue: code) == nil || code == ControlErrorCode.internalError.rawValue || message.isEmpty {
            ledger.violation("client \(index): \(request.command) answered \(code): \(message)")
        }
        if case .fatal = request.expectation, code != ControlErrorCode.lineTooLong.rawValue {
            ledger.violation("client \(index): a line over the limit answered \(code)")
        }
    }
}
