import Foundation
import PracticeControl
import PracticeKit
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// Weeks on a kiosk, compressed: thousands of hands-free turns while practice-sim fails at
/// random (drops, 5xx, slow drips, malformed SSE, void transcripts), clients come and go,
/// and one client sends garbage. Afterwards no turn is lost and nothing has leaked.
///
/// CI runs 120 turns; `bash .ci/proof soak 2000` the long form (`PRACTICED_SOAK_TURNS`).
final class SoakTests: XCTestCase {
    var rig: KioskRig!

    override func tearDown() {
        rig?.stop()
        rig = nil
    }

    /// The faults a turn may meet, drawn at random (seeded, so a run can be repeated).
    static func faults(_ draw: UInt64) -> (String, SimulatorFaults) {
        var faults = SimulatorFaults()
        switch draw % 20 {
        case 0, 1: faults.dropAfterEvents = Int(draw / 20 % 6); return ("drop", faults)
        case 2: faults.failCount = 1; faults.failStatus = 503; return ("503", faults)
        case 3: faults.failCount = 2; faults.failStatus = 500; return ("500", faults)
        case 4, 5: faults.dripBytes = 97; faults.dripMs = 1; return ("drip", faults)
        case 6, 7: faults.malformedSSE = true; return ("malformed", faults)
        case 8: faults.lateVoidTranscript = true; return ("void", faults)
        case 9: faults.oddChunks = true; faults.omitDone = true; return ("odd/no-done", faults)
        default: return ("none", faults)
        }
    }

    /// Background clients: one connects, subscribes, asks and leaves, over and over
    /// (sometimes hanging up mid-line); another sends garbage and reconnects when dropped.
    final class Crowd: @unchecked Sendable {
        let running = Awaitable(true)
        let visits = Awaitable(0)
        let garbageErrors = Awaitable(0)
        private var threads: [TestThread] = []

        init(socket: String) {
            let running = running, visits = visits, garbageErrors = garbageErrors
            threads.append(TestThread {
                var n: UInt64 = 0
                while running.value {
                    n &+= 1
                    guard let client = try? ControlClient(path: socket, timeout: 5) else { continue }
                    _ = try? client.request(Command.Subscribe.self, ["topics": n % 3 == 0 ? ["level", "session"] : ["session", "playback", "device"]])
                    if n % 2 == 0 { _ = try? client.request(Command.Status.self) }
                    if n % 5 == 0 { try? client.send(Array("{\"id\":9,\"command\":\"pi".utf8)) }  // hangs up mid-line
                    _ = try? client.nextEvent(timeout: 0.05)
                    visits.update { $0 += 1 }
                    usleep(50_000)  // pacing: a busy kiosk's other clients, not a flood
                }
            })
            threads.append(TestThread {
                var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
                var client: ControlClient?
                while running.value {
                    if client == nil { client = try? ControlClient(path: socket, timeout: 5) }
                    guard let current = client else { continue }
                    seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    var junk: [UInt8]
                    switch seed >> 60 {
                    case 0: junk = [UInt8](repeating: 0x41, count: 70_000) + [0x0A]  // over the line limit
                    case 1: junk = Array("{\"id\":1,\"command\":\"session.explode\"}\n".utf8)
                    case 2: junk = Array("{\"id\":2,\"command\":\"subscribe\",\"args\":{\"topics\":42}}\n".utf8)
                    case 3: junk = [0xFF, 0xFE, 0x00, 0x0A]
                    default: junk = (0..<64).map { i in UInt8(truncatingIfNeeded: seed >> (i % 56)) } + [0x0A]
                    }
                    do {
                        try current.send(junk)
                        if let reply = try? current.readMessage(timeout: 0.5), reply["ok"] == false { garbageErrors.update { $0 += 1 } }
                    } catch {
                        client = nil  // dropped for its garbage: come back
                    }
                    usleep(20_000)
                }
            })
        }

        func stop() {
            running.update { $0 = false }
            for thread in threads where !thread.join(timeout: 10) { XCTFail("a crowd's thread did not end") }
        }
    }

    func testThousandsOfTurnsUnderFaultsLoseNoTurnAndLeakNothing() throws {
        let total = ProofRun.size("PRACTICED_SOAK_TURNS", default: 120)
        // Warm-up: the player's ring has been written through (its 174.8 s: about 60 turns'
        // replies), the allocator's arenas have grown to what the threads use; growth after
        // that would be a leak. (CI's 120 turns, down from 160 to pay for the AAC suites:
        // 80 to warm up, 40 measured.)
        let warmUp = max(80, total / 10)
        let perSession = 25
        rig = try KioskRig(arguments: ["--speech-hangover-ms", "300", "--turn-retry-s", "3", "--log-level", "info"]) {
            $0.pace = 0  // replies arrive at once; the speaker still plays in real time
            $0.firstAudioMs = 20
            $0.seed = 7
        }
        let watcher = try rig.watcher()
        let control = try rig.daemon.client()
        var crowd = Crowd(socket: rig.daemon.socketPath)
        var random = SeededRandom(seed: 11)
        var spooled: [String] = []
        var outcomes: [String: Int] = [:]
        var faultsMet: [String: Int] = [:]
        var baseline: ProcessStatistics?

        func startSession() throws {
            let mark = watcher.count
            rig.sim.simulator.faults = SimulatorFaults()
            _ = try control.request(Command.SessionStart.self, ["topic_id": "travel"])
            // The greeting is cut short by the first turn's `listen`.
            XCTAssertNotNil(watcher.wait(for: Event.ReplyAudioStarted.self, after: mark, timeout: 30))
        }

        /// Quiet for a snapshot: the crowd gone, only the watcher and this client left.
        func settle() {
            crowd.stop()
            XCTAssertTrue(Poll.until(timeout: 10) { (try? control.request(Command.Status.self)["clients"]?.intValue) == 2 })
            _ = try? control.request(Command.PlaybackStop.self)
            XCTAssertTrue(Poll.until(timeout: 30) { (try? control.request(Command.SessionGet.self)["stage"]?.stringValue) == "ready" })
        }

        let started = Date()
        try startSession()
        for turn in 0..<total {
            if turn > 0, turn % perSession == 0 {
                _ = try control.request(Command.SessionClose.self)
                try startSession()
            }
            if turn == warmUp {
                settle()
                baseline = try rig.statistics()
                ProofRun.report("soak baseline after \(warmUp) turns: \(baseline!)")
                crowd = Crowd(socket: rig.daemon.socketPath)
            }
            let (name, faults) = Self.faults(random.next())
            faultsMet[name, default: 0] += 1
            rig.sim.simulator.faults = faults
            let mark = watcher.count
            guard let id = try rig.speakHandsFree(ProofRun.speech(seconds: 0.8, variant: turn), control: control, watcher: watcher) else {
                XCTFail("turn \(turn) was not spooled")
                break
            }
            spooled.append(id)
            // Most replies are cut off by the next turn once they sound; every tenth plays out.
            let accepting = turn % 10 == 0 ? TurnOutcome.final : Set(TurnOutcome.events)
            guard let (outcome, _) = watcher.outcome(of: id, after: mark, timeout: 60, accepting: accepting) else {
                XCTFail("turn \(turn) (\(id), faults \(name)) has no outcome: \(watcher.names(after: mark))")
                break
            }
            switch outcome {
            case .replied: outcomes["replied", default: 0] += 1
            case .soundStarted: outcomes["cut off", default: 0] += 1
            case .incomplete: outcomes["incomplete", default: 0] += 1
            case .discarded: outcomes["discarded", default: 0] += 1
            case .pending: outcomes["pending", default: 0] += 1
            case .failed: outcomes["failed", default: 0] += 1
            }
            rig.sim.simulator.faults = SimulatorFaults()
            if turn % 100 == 99 { ProofRun.report("soak: \(turn + 1) turns in \(Int(Date().timeIntervalSince(started))) s, \(try rig.statistics())") }
        }
        settle()
        let minutes = Date().timeIntervalSince(started) / 60

        // No turn lost: each spooled turn reached the backend (at most one segment made of
        // it, whatever the retries), or is still in the spool, listed as pending.
        let account = try SpoolAccount(spooled: spooled, rig: rig, control: control)
        let pending = account.pending
        XCTAssertEqual(Set(spooled).count, spooled.count, "a turn id was spooled twice")
        XCTAssertEqual(account.lost, [], "turns lost")
        XCTAssertEqual(account.twice, [], "turns answered more than once")

        // Nothing leaked: the same state as the baseline (a session ready, two clients).
        let end = try rig.statistics()
        if let baseline {
            // At most the baseline's: the backend's pooled connections may have been closed.
            XCTAssertTrue(Poll.until(timeout: 15) { (try? rig.statistics().fileDescriptors).map { $0 <= baseline.fileDescriptors } ?? false },
                          "descriptors: \(baseline.fileDescriptors) after warm-up, \((try? rig.statistics().fileDescriptors) ?? -1) at the end")
            // The daemon's own threads (named by it: the main thread, each device's I/O
            // thread) are exactly the baseline's. Dispatch's workers (named for their QoS)
            // come and go with its pool, which shrinks on its own after a few idle seconds
            // but not always within the wait: two more than the baseline's are its slack,
            // not a leak (a thread leaked per turn would be 40 more here).
            func split(_ names: [String]) -> (own: [String], workers: Int) {
                (names.filter { !$0.contains("qos") }, names.filter { $0.contains("qos") }.count)
            }
            let base = split(baseline.threadNames)
            XCTAssertTrue(Poll.until(timeout: 30) {
                guard let names = try? rig.statistics().threadNames else { return false }
                let now = split(names)
                return now.own == base.own && now.workers <= base.workers + 2
            }, "threads: \(baseline.threadNames) after warm-up, \((try? rig.statistics().threadNames) ?? []) at the end")
            let growth = Double(end.residentBytes - baseline.residentBytes) / 1_048_576
            ProofRun.report(String(format: "soak: %d turns in %.1f min; outcomes %@; faults %@; %d pending; rss growth after warm-up %.2f MB; %@",
                                   spooled.count, minutes, "\(outcomes.sorted { $0.key < $1.key })", "\(faultsMet.sorted { $0.key < $1.key })",
                                   pending.count, growth, "\(end)"))
            XCTAssertLessThan(growth, 2, "resident memory grew \(growth) MB after warm-up")
        }
        ProofRun.report("soak: crowd visits \(crowd.visits.value), garbage errors answered \(crowd.garbageErrors.value)")
        XCTAssertEqual(spooled.count, total)
        XCTAssertTrue(rig.daemon.process.waitForExit(timeout: 0) == nil, "the daemon died")
    }
}
