import AudioKernel
import Foundation
import PracticeKit
import PracticeNet
import PracticeProtocol
import TestSupport
import XCTest

/// The kiosk's latencies over real turns, every part real: speech into PulseAudio's
/// pipe-source, practiced as a process, practice-sim over TCP at the real server's pace,
/// the reply into a null sink. A measurement, not a timed test: it asserts that every
/// turn was answered and measured, and reports the figures; `bash .ci/proof e2e 200` runs
/// docs/performance.md's form (CI runs 6 turns; 10 until the cue-practice suites joined).
final class EndToEndBenchmark: XCTestCase {
    var rig: KioskRig!

    override func tearDown() {
        rig?.stop()
        rig = nil
    }

    /// Over `https://` (practice-sim behind stunnel4) with PRACTICED_E2E_HTTPS=1
    /// (`bash .ci/proof e2e-https`): the client's own TLS must cost about what plain HTTP does.
    func testLatenciesCPUAndMemoryOverRealTurns() throws {
        try measure(tls: ProcessInfo.processInfo.environment["PRACTICED_E2E_HTTPS"] != nil)
    }

    private func measure(tls: Bool) throws {
        let turns = ProofRun.size("PRACTICED_E2E_TURNS", default: 6)
        let perSession = 20
        // PRACTICED_E2E_DEVICES=usb48k (`bash .ci/proof e2e-usb`): the 48 kHz stereo speaker
        // and microphone the demo runs, so that every period is resampled both ways.
        let hardware: KioskRig.Hardware = ProcessInfo.processInfo.environment["PRACTICED_E2E_DEVICES"] == "usb48k" ? .usb48kStereo : .speech
        // PRACTICED_E2E_ENDPOINT=model (`bash .ci/proof e2e-model`): hands-free turns end by
        // Silero VAD and smart-turn, whose CPU and memory the figures then include.
        let learned = ProcessInfo.processInfo.environment["PRACTICED_E2E_ENDPOINT"] == "model"
            ? ["--speech-endpoint", "model", "--speech-models-dir", LearnedEndpointingTests.models] : []
        rig = try KioskRig(arguments: ["--audio-idle-close-s", "2", "--log-level", "info"] + learned, hardware: hardware, tls: tls) { $0.pace = 1 }
        // A kiosk-sized CPU (`bash .ci/proof e2e-kiosk`): the daemon limited to a share of
        // one core by the kernel's CFS quota, as `systemd-run -p CPUQuota=25%` would.
        let kioskCPU = ProcessInfo.processInfo.environment["PRACTICED_E2E_CPU_PERCENT"].flatMap(Int.init)
        let quota = try kioskCPU.map { try CPUQuota(percentOfACore: $0, name: "practiced-e2e-\(getpid())") }
        try quota?.add(pid: rig.daemon.process.pid)
        let watcher = try rig.watcher()
        let control = try rig.daemon.client()
        // PRACTICED_E2E_RATE=0.75 (`bash .ci/proof e2e-slower`): every reply through the
        // time stretcher, whose CPU the figures then include.
        let rate = ProcessInfo.processInfo.environment["PRACTICED_E2E_RATE"].flatMap(Double.init) ?? 1
        XCTAssertEqual(try control.request(Command.PlaybackRate.self, ["rate": .double(rate)])["rate"], .double(rate))
        var underruns = 0
        var endToUpload: [Double] = [], firstAudioToDevice: [Double] = [], streamEndToFinished: [Double] = [], roundTrip: [Double] = []
        var conversation = 0.0  // seconds of sessions, greetings included
        var cpu = 0.0

        let first = try rig.statistics()
        var done = 0
        while done < turns {
            let sessionStart = Date()
            let before = try rig.statistics()
            let mark = watcher.count
            _ = try control.request(Command.SessionStart.self, ["topic_id": "travel"])
            XCTAssertNotNil(watcher.waitForStage("ready", after: mark, timeout: 30))
            if !learned.isEmpty { XCTAssertTrue(rig.daemon.waitForModels(), "the models were not loaded for the session") }
            for _ in 0..<min(perSession, turns - done) {
                let turnMark = watcher.count
                guard let id = try rig.speakHandsFree(ProofRun.speech(seconds: 1, variant: done), control: control, watcher: watcher) else { break }
                guard let (outcome, _) = watcher.outcome(of: id, after: turnMark, timeout: 30, accepting: TurnOutcome.final),
                      case .replied(let figures) = outcome else {
                    XCTFail("turn \(done) was not answered: \(watcher.names(after: turnMark))")
                    break
                }
                XCTAssertNotNil(watcher.waitForStage("ready", after: turnMark))
                done += 1
                guard let upload = figures["end_to_upload_ms"]?.doubleValue, let device = figures["first_audio_to_sound_ms"]?.doubleValue,
                      let finished = figures["stream_end_to_finished_ms"]?.doubleValue, let trip = figures["round_trip_ms"]?.doubleValue else {
                    XCTFail("reply.finished without its figures: \(figures)")
                    continue
                }
                underruns += figures["underruns"]?.intValue ?? 0
                endToUpload.append(upload)
                firstAudioToDevice.append(device)
                streamEndToFinished.append(finished)
                roundTrip.append(trip)
            }
            _ = try control.request(Command.SessionClose.self)
            conversation += Date().timeIntervalSince(sessionStart)
            cpu += try rig.statistics().cpuSeconds - before.cpuSeconds
        }
        let end = try rig.statistics()
        XCTAssertEqual(endToUpload.count, turns, "turns measured")

        // Idle: the session closed, the devices released after 2 s.
        XCTAssertTrue(Poll.until(timeout: 10) { (try? control.request(Command.Status.self)["devices"]?["playback"]?["state"]?.stringValue) == "idle" })
        let idle = try ProcessStatistics.idle(pid: rig.daemon.process.pid, seconds: 10)

        if let kioskCPU, let quota {
            let throttling = quota.throttling
            ProofRun.report(String(format: "e2e: the daemon limited to %d %% of a core (CFS quota, %@): throttled in %d of %d periods, %.1f s in all",
                                   kioskCPU, quota.directory, throttling.throttled, throttling.periods, throttling.throttledSeconds))
            XCTAssertEqual(underruns, 0, "underruns on a kiosk-sized CPU")
            XCTAssertLessThan(Percentiles(firstAudioToDevice).p95, 100, "first audio → sound on a kiosk-sized CPU")
        }
        ProofRun.report("e2e: underruns \(underruns) in \(turns) replies, played at \(rate)×")
        ProofRun.report("e2e: \(turns) turns over \(String(format: "%.1f", conversation / 60)) min of conversation (practice-sim at real pace\(tls ? " over https:// through stunnel4" : ""), PulseAudio null sink)")
        ProofRun.report("e2e: end of turn → upload start ms \(Percentiles(endToUpload))")
        ProofRun.report("e2e: first SSE audio event → first sample to the device ms \(Percentiles(firstAudioToDevice))")
        ProofRun.report("e2e: reply stream end → playback finished ms \(Percentiles(streamEndToFinished))")
        ProofRun.report("e2e: end of turn → reply sound ms \(Percentiles(roundTrip))")
        ProofRun.report(String(format: "e2e: daemon CPU %.2f s per minute of conversation (%.2f %% of a core); rss %.1f MB, peak %.1f MB; %d threads, %d fds",
                               cpu / (conversation / 60), cpu / conversation * 100, Double(end.residentBytes) / 1_048_576,
                               Double(end.peakResidentBytes) / 1_048_576, end.threads, end.fileDescriptors))
        let perMinute = 60 / conversation
        ProofRun.report("e2e: CPU by thread, s per minute of conversation: " + end.cpuByName(since: first).filter { $0.seconds > 0 }
            .map { String(format: "%@ %.2f", $0.name, $0.seconds * perMinute) }.joined(separator: ", "))
        ProofRun.report("e2e: wake-ups by thread per second of conversation: " + end.switchesByName(since: first, seconds: conversation)
            .filter { $0.perSecond >= 0.5 }.map { String(format: "%@ %.0f", $0.name, $0.perSecond) }.joined(separator: ", "))
        ProofRun.report(String(format: "e2e: idle (devices closed): %.2f wake-ups/s, %.3f %% of a core", idle.wakeupsPerSecond, idle.coreShare * 100))
    }
}
