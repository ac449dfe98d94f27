import AudioKernel
import Foundation
import PracticeKit
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// The stateful chaos run: the real daemon (PulseAudio headless, practice-sim on TCP) while
/// clients send random commands in random stages with random and malformed arguments,
/// connect and vanish, subscribe and stop reading; the backend drops, stalls, errors and
/// goes away; the sound server crashes or loses its speaker; a learner speaks at random.
///
/// Invariants, checked as the run goes: every request is answered within its deadline, or
/// the client was told why it is disconnected (``ChaosClient``); every stage transition is
/// one the table allows and none is missed (``StageChecker``); the daemon never dies and
/// a well-behaved client's `ping` is answered within 5 s; resident memory, descriptors and
/// threads stay bounded. At the end: every spooled turn reached the backend at most once as
/// a segment, or is listed pending; the daemon still stops cleanly on SIGTERM.
///
/// `PRACTICED_CHAOS_SEED` picks every random draw of the run (the interleaving of threads
/// is the scheduler's); `PRACTICED_CHAOS_SECONDS` its length. CI runs 40 s on debug (60 until
/// the cue-practice suites joined) and 30 s on release; `bash .ci/proof chaos 3600` the long form.
final class ChaosTests: XCTestCase {
    var rig: KioskRig!
    var sounds: URL!

    override func setUp() {
        // The microphone's FIFO has no reader while the sound server is down.
        signal(SIGPIPE, SIG_IGN)
    }

    override func tearDown() {
        rig?.stop()
        rig = nil
        if let sounds { try? FileManager.default.removeItem(at: sounds) }
    }

    /// The play directory: real sounds, and the files a hostile client would name.
    private func makeSounds() throws -> ChaosRequest.Paths {
        sounds = try makeTemporaryDirectory()
        let dir = sounds.path
        for name in ["hello.wav", "sim/reply-1.wav", "sim/greeting.wav"] {
            let source = URL(fileURLWithPath: SimulatorHarness.samplesDirectory).deletingLastPathComponent().appendingPathComponent(name)
            try FileManager.default.copyItem(at: source, to: sounds.appendingPathComponent(source.lastPathComponent))
        }
        mkfifo("\(dir)/fifo.wav", 0o644)
        symlink("/dev/zero", "\(dir)/zero.wav")
        try Data(try WAVEncoder.encode([Int16](repeating: 1000, count: 4800)).prefix(100)).write(to: sounds.appendingPathComponent("truncated.wav"))
        // Over the play limit (8 MiB here), sparse: a valid header, then a hole.
        let big = sounds.appendingPathComponent("huge.wav")
        try Data(try WAVEncoder.encode([Int16](repeating: 0, count: 24))).write(to: big)
        truncate(big.path, 64 << 20)
        try FileManager.default.createDirectory(at: sounds.appendingPathComponent("folder.wav"), withIntermediateDirectories: false)
        return ChaosRequest.Paths(
            playable: ["\(dir)/hello.wav", "\(dir)/reply-1.wav", "\(dir)/greeting.wav"],
            hostile: ["\(dir)/fifo.wav", "\(dir)/zero.wav", "\(dir)/truncated.wav", "\(dir)/huge.wav", "\(dir)/folder.wav", "\(dir)/missing.wav",
                      "/dev/zero", "/dev/urandom", "/etc/shadow", "/proc/self/mem", "/", "", "relative.wav", "\(dir)/../../etc/passwd",
                      String(repeating: "/x", count: 3000)])
    }

    func testRandomClientsFaultsAndDeviceLossBreakNoInvariant() throws {
        let seconds = Double(ProofRun.size("PRACTICED_CHAOS_SECONDS", default: 40))
        let seed = UInt64(ProofRun.size("PRACTICED_CHAOS_SEED", default: 1))
        let maximumClients = 24
        let paths = try makeSounds()
        rig = try KioskRig(arguments: [
            "--speech-hangover-ms", "300", "--turn-retry-s", "3", "--log-level", "info",
            "--socket-max-clients", "\(maximumClients)", "--socket-client-queue-bytes", "65536", "--socket-idle-timeout-s", "5",
            "--play-directories", sounds.path, "--play-max-bytes", "\(8 << 20)",
        ]) {
            $0.seed = seed
            $0.pace = 2
            $0.firstAudioMs = 50
            $0.connectingMs = 300
        }
        let ledger = ChaosLedger()
        let checker = try StageChecker(socket: rig.daemon.socketPath, ledger: ledger)
        let pinger = try rig.daemon.client(timeout: 15)
        let baseline = try rig.statistics()
        var peak = (resident: baseline.residentBytes, descriptors: baseline.fileDescriptors, threads: baseline.threads)
        ProofRun.report("chaos seed \(seed), \(Int(seconds)) s, daemon \(DaemonHarness.practiced); baseline \(baseline)")

        let end = Date().addingTimeInterval(seconds)
        let environment = ChaosEnvironment(rig: rig, seed: seed, ledger: ledger)
        let vandal = ChaosVandal(seed: seed, socket: rig.daemon.socketPath, ledger: ledger)
        let clients = (0..<4).map { ChaosClient(index: $0, seed: seed, socket: rig.daemon.socketPath, ledger: ledger, paths: paths) }
        let finished = Awaitable(0)
        var actors: [@Sendable () -> Void] = [{ environment.backend(until: end) }, { environment.devices(until: end) },
                                              { environment.learner(until: end) }, { vandal.run(until: end) }]
        actors += clients.map { client in { client.run(until: end) } }
        for actor in actors {
            Thread {
                actor()
                finished.update { $0 += 1 }
            }.start()
        }

        // The watch: the daemon alive, its figures within bounds, a polite client served.
        var pings = 0
        while Date() < end {
            guard rig.daemon.process.isRunning else {
                ledger.violation("the daemon died:\n\(rig.daemon.log.suffix(3000))")
                break
            }
            if let now = try? rig.statistics() {
                peak = (max(peak.resident, now.residentBytes), max(peak.descriptors, now.fileDescriptors), max(peak.threads, now.threads))
            }
            let asked = Date()
            do {
                _ = try pinger.request(Command.Ping.self, timeout: 5)
                ledger.latency("ping (well-behaved client)", seconds: Date().timeIntervalSince(asked))
                pings += 1
            } catch {
                ledger.violation("a well-behaved client's ping: \(error)")
            }
            usleep(250_000)  // the watch's pace
        }
        // The actors end at `end`; one still busy a minute later is stuck on the daemon.
        if !finished.wait(timeout: 300, { $0 == actors.count }) {
            ledger.violation("\(actors.count - finished.value) actors still running 300 s after the end")
        }
        checker.stop()

        // Settle: the backend healthy, deliveries over.
        rig.sim.simulator.faults = SimulatorFaults()
        let control = try rig.daemon.client(timeout: 15)
        XCTAssertTrue(Poll.until(timeout: 180) {
            guard let session = try? control.request(Command.SessionGet.self, timeout: 15) else { return false }
            return session["delivering"] == .null && session["stage"]?.stringValue != "uploading"
        }, "a delivery never ended: \((try? control.request(Command.SessionGet.self).serialized(.compact)) ?? "-")")

        // Every spooled turn reached the backend (one segment at most, whatever the
        // retries), is still listed pending, or a client discarded it.
        let spooled = checker.spooledTurns, discarded = checker.discardedTurns
        let account = try SpoolAccount(spooled: spooled, discarded: discarded, rig: rig, control: control)
        for id in account.twice { ledger.violation("turn \(id) became more than one segment") }
        for id in account.lost { ledger.violation("turn \(id) lost: not delivered, not pending, not discarded") }
        let delivered = account.delivered.count, pending = account.pending
        if Set(spooled).count != spooled.count { ledger.violation("a turn id was spooled twice") }

        // The table is the contract: a refused transition is a bug even if nobody saw it.
        let log = rig.daemon.log
        for line in log.split(separator: "\n") where line.contains("refused transition") { ledger.violation("daemon log: \(line)") }
        let status = try control.request(Command.Status.self, timeout: 15)
        let counters = status["counters"] ?? .null

        // Bounded: a descriptor per client allowed at most, a few for the devices, the
        // backend's pooled connections and files being played; threads within dispatch's pool.
        if peak.descriptors > baseline.fileDescriptors + maximumClients + 32 {
            ledger.violation("descriptors peaked at \(peak.descriptors) (baseline \(baseline.fileDescriptors), \(maximumClients) clients allowed)")
        }
        if peak.threads > baseline.threads + 72 { ledger.violation("threads peaked at \(peak.threads) (baseline \(baseline.threads))") }
        if peak.resident > baseline.residentBytes + 96 << 20 {
            ledger.violation("resident memory peaked at \(peak.resident >> 20) MB (baseline \(baseline.residentBytes >> 20) MB)")
        }

        let operations = ledger.operations
        ProofRun.report(String(format: "chaos seed %llu: %.0f s, %d operations, %d well-behaved pings, %d stage transitions, %d turns spooled "
                                   + "(%d delivered, %d pending, %d discarded by clients), peak rss %d MB / fds %d / threads %d, %d violations",
                               seed, seconds, operations, pings, checker.transitionCount, spooled.count, delivered, pending.count, discarded.count,
                               peak.resident >> 20, peak.descriptors, peak.threads, ledger.allViolations.count))
        ProofRun.report("chaos counts: \(ledger.allCounts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", "))")
        ProofRun.report("chaos daemon counters: \(counters.serialized(.compact))")
        ProofRun.report("chaos latencies (ms): \(ledger.latencySummary())")

        // It still stops as a service manager asks.
        kill(rig.daemon.process.pid, SIGTERM)
        XCTAssertEqual(rig.daemon.process.waitForExit(timeout: 10), 0, "exit status within 10 s of SIGTERM")

        XCTAssertEqual(ledger.allViolations, [], "seed \(seed)")
        XCTAssertGreaterThan(operations, Int(seconds) * 5, "the run did little")
        XCTAssertGreaterThan(checker.transitionCount, 10, "sessions went nowhere")
    }
}
