import Foundation
import SimulatorKit
import TestSupport

/// What happens around the daemon in a chaos run: the backend drops streams, stalls, errors
/// and goes away; the sound server crashes and comes back, or loses its speaker; a learner
/// speaks at random moments (long and short, so that turns start, end by themselves and
/// are cut off). Three loops, each on its own thread and its own seeded draw.
final class ChaosEnvironment: @unchecked Sendable {
    private let rig: KioskRig
    private let ledger: ChaosLedger
    private let seed: UInt64
    /// The rig's microphone is replaced when the sound server restarts.
    private let audioLock = NSLock()

    init(rig: KioskRig, seed: UInt64, ledger: ChaosLedger) {
        self.rig = rig
        self.seed = seed
        self.ledger = ledger
    }

    // MARK: - The backend

    func backend(until end: Date) {
        var random = SeededRandom(seed: seed ^ 0xB4C3_E4D0)
        let sim = rig.sim
        while Date() < end {
            var faults = SimulatorFaults()
            let draw = random.next() % 24
            switch draw {
            case 0, 1: faults.dropAfterEvents = Int(random.next() % 8)
            case 2: faults.failCount = 1 + Int(random.next() % 3); faults.failStatus = 503
            case 3: faults.failCount = 1 + Int(random.next() % 2); faults.failStatus = 500
            case 4: faults.failCount = 1; faults.failStatus = 404
            case 5: faults.dripBytes = 1 + Int(random.next() % 200); faults.dripMs = 1 + Int(random.next() % 5)
            case 6, 7: faults.latencyMs = 200 + Int(random.next() % 2_800)  // a stall
            case 8: faults.malformedSSE = true
            case 9: faults.lateVoidTranscript = true
            case 10: faults.noTranscript = true
            case 11: faults.oddChunks = true; faults.omitDone = true
            case 12: faults.start504 = true
            case 13: faults.reviewFails = true
            case 14: faults.correctionFails = true
            case 15:
                // Gone: connections refused for a while.
                sim.goDown()
                ledger.count("op.backend-down")
                sleep(seconds: 1 + Double(random.next() % 6000) / 1000, until: end)
                do { try sim.comeBack() } catch { ledger.violation("harness: practice-sim did not come back: \(error)") }
                continue
            default: break
            }
            sim.simulator.faults = faults
            ledger.count("op.backend-faults")
            sleep(seconds: 1 + Double(random.next() % 7000) / 1000, until: end)
        }
        sim.simulator.faults = SimulatorFaults()
    }

    // MARK: - The sound server

    func devices(until end: Date) {
        var random = SeededRandom(seed: seed ^ 0xD3_71CE)
        while Date() < end {
            sleep(seconds: 10 + Double(random.next() % 30_000) / 1000, until: end)
            guard Date() < end else { break }
            if random.next() % 3 == 0 {
                // The speaker alone goes away (its module unloaded) and comes back.
                guard let module = try? rig.pulse.pactl(["list", "short", "modules"]).split(separator: "\n")
                    .first(where: { $0.contains("module-null-sink") && $0.contains("sink_name=kiosk") })?.split(separator: "\t").first else {
                    ledger.violation("harness: no null sink module")
                    continue
                }
                _ = try? rig.pulse.pactl(["unload-module", String(module)])
                ledger.count("op.speaker-unplugged")
                sleep(seconds: 0.2 + Double(random.next() % 3000) / 1000, until: .distantFuture)
                do {
                    try rig.pulse.pactl(["load-module", "module-null-sink", "sink_name=kiosk", "format=s16le", "rate=24000", "channels=1", "norewinds=1"])
                } catch { ledger.violation("harness: the speaker did not come back: \(error)") }
            } else {
                audioLock.withLock { rig.crashAudioServer() }
                ledger.count("op.sound-server-crash")
                sleep(seconds: 0.5 + Double(random.next() % 4000) / 1000, until: .distantFuture)
                do { try audioLock.withLock { try rig.restartAudioServer() } } catch { ledger.violation("harness: the sound server did not restart: \(error)") }
            }
        }
    }

    // MARK: - The learner

    func learner(until end: Date) {
        var random = SeededRandom(seed: seed ^ 0x1EA2_0E2)
        var variant = 0
        while Date() < end {
            sleep(seconds: 0.5 + Double(random.next() % 5000) / 1000, until: end)
            variant += 1
            let seconds = random.next() % 10 == 0 ? 6 + Double(random.next() % 4) : 0.3 + Double(random.next() % 2200) / 1000
            let speech = ProofRun.speech(seconds: seconds, variant: variant)
            audioLock.withLock { rig.microphone.say(speech) }
            ledger.count("op.speech")
        }
    }

    /// Sleeps `seconds`, or until `end` if that comes first.
    private func sleep(seconds: Double, until end: Date) {
        let wake = min(Date().addingTimeInterval(seconds), end)
        let interval = wake.timeIntervalSinceNow
        if interval > 0 { usleep(UInt32(interval * 1_000_000)) }  // pacing of the chaos itself
    }
}
