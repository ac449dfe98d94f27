import AudioKernel
import Foundation
import PracticeKit
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// practicectl's cue practice commands, the binary that ships, against the daemon on
/// practice-sim's Chatterbox backend with PulseAudio and the learner's recorded voice
/// (``KioskRig``): sign-in with the mailed code read from its input, the learner and the
/// cards, an answer held until Enter and one hands-free, each followed to its evaluation,
/// the history, hearing a recording, the spool, sign-out.
final class PracticectlCueTests: XCTestCase {
    private var rig: KioskRig!
    private let email = "kiosk-learner@chatterbox.invalid"

    override func tearDown() {
        rig?.stop()
        rig = nil
    }

    /// practicectl with its standard input a pipe the test writes (the person at the
    /// keyboard); started, not waited for.
    private func start(_ arguments: [String]) throws -> (process: ChildProcess, input: Int32, output: String) {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&fds), 0)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        let output = rig.directory + "/practicectl-\(UUID().uuidString).out"
        let process = try ChildProcess(executable: DaemonHarness.practicectl, arguments: ["--socket", rig.daemon.socketPath] + arguments,
                                       environment: ["PATH": "/usr/bin:/bin"], stdoutPath: output, stderrPath: output + ".err", passing: [(fds[0], 0)])
        close(fds[0])
        return (process, fds[1], output)
    }

    private func type(_ line: String, into fd: Int32) {
        let bytes = Array((line + "\n").utf8)
        XCTAssertEqual(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }, bytes.count)
    }

    /// Runs practicectl to its end with `input` typed; its status and output.
    private func run(_ arguments: [String], typing input: [String] = [], timeout: Double = 60) throws -> (status: Int32, stdout: String, stderr: String) {
        let (process, fd, output) = try start(arguments)
        for line in input { type(line, into: fd) }
        close(fd)
        let status = try XCTUnwrap(process.waitForExit(timeout: timeout), "practicectl \(arguments) did not end")
        return (status, DaemonHarness.read(output), DaemonHarness.read(output + ".err"))
    }

    func testSignInAnswerACardAndReadItsResults() throws {
        rig = try KioskRig(chatterbox: ChatterboxHarness {
            $0.transcriptionSeconds = 0.5
            $0.evaluationSeconds = 1
        })
        // Not signed in: told, exit 1.
        let early = try run(["cards"])
        XCTAssertEqual(early.status, 1)
        XCTAssertTrue(early.stderr.contains("sign_in_required"), early.stderr)
        // A wrong code (given as an argument) is refused with the backend's reason; the
        // right one, typed when asked, signs in.
        let wrong = try run(["signin", email, "000000"])
        XCTAssertEqual(wrong.status, 1)
        XCTAssertTrue(wrong.stderr.contains("invalid_login_code") || wrong.stderr.contains("refused"), wrong.stderr)
        let signedIn = try run(["signin", email], typing: ["123456"])
        XCTAssertEqual(signedIn.status, 0, signedIn.stderr)
        XCTAssertTrue(signedIn.stdout.contains("\(email) in en"), signedIn.stdout)
        XCTAssertTrue(signedIn.stdout.contains("languages: en fr de zh es"), signedIn.stdout)
        XCTAssertEqual(try run(["signin", email], typing: []).status, 64, "no code typed: a usage error, nothing sent")
        XCTAssertTrue(try run(["learner"]).stdout.contains("\(email) in en"))

        // The cards: one line each, id then title.
        let cards = try run(["cards"])
        XCTAssertEqual(cards.status, 0, cards.stderr)
        let ids = cards.stdout.split(separator: "\n").compactMap { Int($0.split(separator: " ").first ?? "") }
        XCTAssertEqual(ids.count, 5, cards.stdout)
        let card = try run(["card", "\(ids[0])"])
        XCTAssertTrue(card.stdout.hasPrefix("\(ids[0])  "), card.stdout)
        XCTAssertEqual(try run(["card", "abc"]).status, 64)

        // An answer: practicectl records until Enter, then follows it to its evaluation.
        let watcher = try rig.watcher(topics: ["cue"])
        let (answering, keyboard, output) = try start(["answer", "\(ids[0])"])
        XCTAssertNotNil(watcher.wait(for: Event.CueRecordingStarted.self))
        let from = rig.microphone.spoken.value
        rig.microphone.say(KioskRig.learner)
        XCTAssertTrue(rig.microphone.spoken.wait(timeout: 10) { $0 >= from + KioskRig.learner.count })
        type("", into: keyboard)
        let status = answering.waitForExit(timeout: 60)
        close(keyboard)
        let said = DaemonHarness.read(output)
        XCTAssertEqual(status, 0, said + DaemonHarness.read(output + ".err"))
        for line in ["recorded: ", "kept: answer ", "uploaded: recording ", "transcript: ", "evaluation: CEFR B1"] {
            XCTAssertTrue(said.contains(line), "no '\(line)' in:\n\(said)")
        }
        let recording = try XCTUnwrap(said.firstMatch(of: /uploaded: recording ([0-9]+)/).flatMap { Int($0.1) })

        // Hands-free: the answer ends with the learner's words.
        let (handsFree, closedKeyboard, handsFreeOutput) = try start(["answer", "\(ids[1])", "--hands-free"])
        close(closedKeyboard)
        XCTAssertNotNil(watcher.wait(for: Event.CueRecordingStarted.self, where: { $0["cue_id"]?.intValue == ids[1] }))
        rig.microphone.say(KioskRig.learner2)
        XCTAssertEqual(handsFree.waitForExit(timeout: 60), 0, DaemonHarness.read(handsFreeOutput) + DaemonHarness.read(handsFreeOutput + ".err"))
        XCTAssertTrue(DaemonHarness.read(handsFreeOutput).contains("evaluation: CEFR"))

        // The history, the results again, the recording heard through the speaker.
        let history = try run(["history"])
        XCTAssertTrue(history.stdout.contains("recording \(recording)  card \(ids[0])  transcript ready  evaluation ready (CEFR B1)"), history.stdout)
        XCTAssertEqual(try run(["results", "\(recording)"]).status, 0)
        let loud = rig.loudSamples
        let heard = try run(["hear", "\(recording)"])
        XCTAssertEqual(heard.status, 0, heard.stderr)
        XCTAssertTrue(rig.heard.wait(timeout: 20) { $0.loud > loud + 1_000 }, "the recording was not heard")
        XCTAssertTrue(try run(["spool"]).stdout.contains("answers: []"))

        let out = try run(["signout"])
        XCTAssertEqual(out.stdout, "not signed in\n")
        XCTAssertTrue(try run(["learner"]).stdout.contains("not signed in"))
    }
}
