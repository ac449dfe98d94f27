import Foundation
@testable import PracticeKit
import PracticeProtocol
import TestSupport
import XCTest

/// ``TurnDelivery`` alone: a real spool in a temporary directory, the rest in memory.
final class TurnDeliveryInMemoryTests: XCTestCase {
    private var directory: URL!
    private var context: SessionTestContext!
    private var delivery: TurnDelivery!
    private var uploads: [TurnUpload] { uploader.uploads }
    private var uploader: UploadRecorder!
    /// The spool's writer queue: a test suspends it to stand for a disk slow to sync.
    private var writer: DispatchQueue!

    /// Where the delivery's uploads go in these tests: kept, so that a test can see each
    /// attempt and tell the delivery what became of it (``TurnUpload/report``).
    final class UploadRecorder: TurnUploading, @unchecked Sendable {
        var uploads: [TurnUpload] = []
        func upload(_ upload: TurnUpload) { uploads.append(upload) }
    }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("delivery-\(UUID().uuidString)")
        context = SessionTestContext()
        context.settings.turnRetryInitialDelay = 0.05
        context.settings.turnRetryMaxDelay = 0.1
        context.settings.turnRetrySeconds = 0.4
        uploader = UploadRecorder()
        writer = DispatchQueue(label: "test.spool-writer")
        delivery = TurnDelivery(context: context, spoolDirectory: directory.path, uploader: uploader, writer: writer)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private func take() -> String {
        context.run {
            context.stage = .recording
            delivery.take(wav: [UInt8](repeating: 7, count: 48_044), duration: 1, of: context.active!, endedAt: 1)
        }
        return context.run { uploads.last!.id }
    }

    /// `turn.replay` reads a turn of the session from the spool: the WAV as it was sent;
    /// another session's, an unknown id or a path is "no turn"; a damaged file (a byte
    /// flipped on disk) is a `file_error` and stays in the spool.
    func testASpooledTurnIsReadForTheLearnerOfItsSessionOnly() throws {
        let id = take()
        XCTAssertNotNil(context.event("turn.spooled"))
        let wav = try context.run { () throws(ControlError) in try delivery.spooledRecording(id, of: "s1") }
        XCTAssertEqual(wav, [UInt8](repeating: 7, count: 48_044))
        func failure(_ id: String, of session: String) -> ControlError? {
            context.run {
                do throws(ControlError) { _ = try delivery.spooledRecording(id, of: session); return nil } catch { return error }
            }
        }
        XCTAssertEqual(failure(id, of: "s0")?.code, .badArguments, "another session's turn")
        XCTAssertEqual(failure("no-such-turn", of: "s1")?.code, .badArguments)
        XCTAssertEqual(failure("../../etc/passwd", of: "s1")?.code, .badArguments)
        // A byte of the WAV flipped on disk.
        let path = directory.appendingPathComponent("new/\(id).turn").path
        var bytes = try XCTUnwrap(FileManager.default.contents(atPath: path))
        bytes[bytes.count - 100] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        let damaged = failure(id, of: "s1")
        XCTAssertEqual(damaged?.code, .fileError)
        XCTAssertTrue(damaged?.message.contains("damaged") ?? false, damaged?.message ?? "")
        XCTAssertTrue(FileManager.default.fileExists(atPath: path), "left for its delivery to set aside")
    }

    /// The upload does not wait for the disk: with the spool's writes held (a disk slow to
    /// sync), the turn is sent at once, and `turn.spooled` follows once the write is done.
    /// (Before, the two fsyncs came first: end of turn → upload 204 ms in the conversation
    /// test beside a writer filling the disk, 2–5 ms without it; CI once read 437 ms.)
    func testATurnIsSentWithoutWaitingForTheSpoolAndLeavesItWhenAccepted() {
        writer.suspend()
        let id = take()
        XCTAssertEqual(context.run { uploads.map(\.attempt) }, [1], "the upload waited for the spool")
        XCTAssertEqual(context.stage, .uploading)
        XCTAssertEqual(context.names, [], "told spooled before the write")
        XCTAssertEqual(context.run { delivery.entries().count }, 0)
        writer.resume()
        XCTAssertEqual(context.event("turn.spooled")?["turn_id"], .string(id))
        XCTAssertEqual(context.event("turn.spooled")?["bytes"], 48_044)
        XCTAssertEqual(uploads.first?.wav.count, 48_044)
        XCTAssertEqual(context.run { delivery.entries().map(\.state) }, [.sending], "in the spool while it is sent")
        context.run { delivery.accepted(id) }
        XCTAssertEqual(context.run { delivery.entries().count }, 0)
        XCTAssertEqual(context.acceptedTurns, 1)
        XCTAssertEqual(context.event("turn.accepted")?["attempt"], 1)
        XCTAssertEqual(context.names, ["turn.spooled", "turn.accepted"])
    }

    /// A backend quicker than the disk: the acceptance waits for the write, so the turn is
    /// told spooled before accepted, and its file, written after the answer came, is removed
    /// rather than left for the next start to send again.
    func testATurnAcceptedBeforeItsWriteIsDoneIsToldInOrderAndLeavesNoFile() {
        writer.suspend()
        let id = take()
        let delivery = self.delivery!
        context.queue.async { delivery.accepted(id) }
        writer.resume()
        XCTAssertNotNil(context.event("turn.accepted"))
        XCTAssertEqual(context.names, ["turn.spooled", "turn.accepted"])
        XCTAssertEqual(context.run { delivery.entries().count }, 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/new"), [])
    }

    /// The session ends (or the daemon stops) while a write is under way: it is waited for
    /// and told, so that the turn is in the spool for the next start.
    func testAWriteUnderWayIsToldWhenTheSessionEnds() {
        writer.suspend()
        let id = take()
        let writer = self.writer!
        DispatchQueue.global().async { writer.resume() }
        context.run { delivery.abandon() }
        XCTAssertEqual(context.names, ["turn.spooled"])
        XCTAssertEqual(context.run { delivery.entries().map(\.id) }, [id])
    }

    /// The recorder's bytes go to the socket as they are: the delivery keeps the same
    /// storage (spooled from it, not copied), and the upload's body is its head, those bytes
    /// and its tail, written one after the other.
    func testTheTurnsBytesReachTheUploadsBodyWithoutACopy() {
        let wav = [UInt8](repeating: 7, count: 48_044)
        context.run {
            context.stage = .recording
            delivery.take(wav: wav, duration: 1, of: context.active!, endedAt: 1)
        }
        let sent = context.run { uploads.last!.wav }
        XCTAssertEqual(sent.withUnsafeBufferPointer { $0.baseAddress }, wav.withUnsafeBufferPointer { $0.baseAddress }, "the turn was copied on its way")
        // The body made from it: its head, the bytes as they are, its tail, in parts.
        let form = MultipartFormBody(field: "audio", filename: "audio.wav", contentType: "audio/wav", content: .bytes(sent), boundary: "b")
        let head = "--b\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"audio.wav\"\r\nContent-Type: audio/wav\r\n\r\n"
        XCTAssertEqual(form.body.bytes, Array(head.utf8) + wav + Array("\r\n--b--\r\n".utf8))
        guard case .bytes(let part) = form.body.parts[1] else { return XCTFail("the WAV is not a part of its own") }
        XCTAssertEqual(part.withUnsafeBufferPointer { $0.baseAddress }, wav.withUnsafeBufferPointer { $0.baseAddress }, "the body copied the turn")
        // A writer that takes any number of bytes at a time gets them all, in order.
        var written: [UInt8] = [], offset = 0
        while offset < form.body.count {
            let n = form.body.withBytes(from: offset) { bytes in
                let taken = min(bytes.count, 1 + offset % 7_919)
                written += bytes.prefix(taken)
                return taken
            }
            offset += n
        }
        XCTAssertEqual(written, form.body.bytes)
    }

    /// The daemon's own retry settings (1 s doubling to 10 s, a 60 s window), the clock in
    /// the test's hands: a minute of a backend turning the turn away takes milliseconds. One
    /// loop, doubling with jitter, the same turn each time, then pending.
    func testTheRetriesOfAMinuteDoubleWithJitterThenLeaveTheTurnPending() {
        context.settings = SessionSettings(userID: "learner-1")
        XCTAssertEqual(context.settings.turnRetryInitialDelay, 1)
        context.clock.manual()
        let id = take()
        var attempts = 0
        while context.run({ delivery.current != nil }), attempts < 50 {
            attempts += 1
            context.run { uploads.last!.report(.failed(.http(status: 503, detail: "still connecting"))) }
            // Nothing is sent again before the delay has passed on the clock...
            let sent = context.run { uploads.count }
            if let delay = context.clock.delays.last, context.run({ delivery.current != nil }) {
                context.clock.advance(by: delay * 0.99)
                XCTAssertEqual(context.run { uploads.count }, sent, "sent again before its delay")
                context.clock.advance(by: delay * 0.02)
                XCTAssertEqual(context.run { uploads.count }, sent + 1, "not sent again after its delay")
            }
        }
        let delays = context.clock.delays
        XCTAssertEqual(context.run { uploads.map(\.id) }, Array(repeating: id, count: delays.count + 1), "the same turn, so the same idempotency key")
        // 1, 2, 4, 8, then 10 s at most, each within ±20 %, and the window is 60 s.
        for (n, delay) in delays.enumerated() {
            let base = min(10, pow(2, Double(n)))
            XCTAssertEqual(delay, base, accuracy: base * 0.2 + 0.001, "delay \(n + 1)")
        }
        XCTAssertGreaterThan(Set(delays.map { ($0 * 1000).rounded() }).count, 4, "the delays have jitter: \(delays)")
        XCTAssertLessThanOrEqual(delays.reduce(0, +), 60)
        XCTAssertEqual(context.event("turn.pending", timeout: 0)?["reason"], "undelivered")
        XCTAssertEqual(context.run { delivery.entries().map(\.id) }, [id], "an undelivered turn stays in the spool")
    }

    func testARefusedTurnLeavesTheSpoolAndASessionGoneFailsTheSession() {
        _ = take()
        context.run { delivery.failed(.http(status: 400, detail: "bad audio")) }
        XCTAssertNotNil(context.event("turn.rejected"))
        XCTAssertEqual(context.run { delivery.entries().count }, 0)
        XCTAssertEqual(context.stage, .ready)

        let kept = take()
        context.run { delivery.failed(.http(status: 404, detail: "Session not found")) }
        XCTAssertEqual(context.event("turn.pending")?["reason"], "session_gone")
        XCTAssertEqual(context.failures, ["session_gone"])
        XCTAssertEqual(context.run { delivery.entries().map(\.id) }, [kept])
    }

    func testSpoolCommandsRefuseWhatTheyCannotDo() throws {
        let id = take()
        XCTAssertThrowsError(try context.run { try delivery.discard(id) }) { XCTAssertEqual(($0 as? ControlError)?.code, .invalidState) }
        XCTAssertThrowsError(try context.run { try delivery.discard("../../etc/passwd") }) { XCTAssertEqual(($0 as? ControlError)?.code, .badArguments) }
        context.run { delivery.abandon() }
        try context.run { try delivery.discard(id) }
        XCTAssertEqual(context.event("spool.discarded")?["turn_id"], .string(id))
    }

    func testATurnFromAnEarlierRunResumesItsSession() throws {
        let id = take()
        context.run {
            delivery.abandon()
            context.active = nil
            context.stage = .idle
        }
        try context.run { try delivery.retry(id) }
        XCTAssertEqual(context.active?.id, "s1")
        XCTAssertEqual(context.event("session.resumed")?["session_id"], "s1")
        XCTAssertEqual(context.run { uploads.last?.id }, id)
        XCTAssertEqual(context.run { uploads.last?.recordedAt }, nil, "a resent turn has no end-of-turn time")
    }
}
