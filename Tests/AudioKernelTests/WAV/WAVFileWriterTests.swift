import AudioKernel
import TestSupport
import XCTest

final class WAVFileWriterTests: XCTestCase {
    func testStreamsSamplesAndFixesSizesOnClose() throws {
        let dir = try makeTemporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("turn.wav").path
        let samples = TestSignals.randomInt16(24_000, seed: 11)
        let writer = try WAVFileWriter(path: path)
        for start in stride(from: 0, to: samples.count, by: 480) {
            try writer.write(Array(samples[start..<min(samples.count, start + 480)]))
        }
        // Before close the file is a valid streamed WAV (what a crash would leave behind).
        let open = try WAVDecoder.decode(contentsOfFile: path)
        XCTAssertEqual(open.samples, samples)
        let openLayout = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))).withUnsafeBytes { try WAVDecoder.parse($0) }
        XCTAssertTrue(openLayout.isStreamed)

        try writer.close(sync: true)
        XCTAssertTrue(writer.isClosed)
        XCTAssertEqual(writer.duration, 1.0)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertEqual(bytes, try WAVEncoder.encode(samples), "a closed file is byte-identical to the canonical encoding")
        XCTAssertEqual(try runTool("soxi", ["-s", path]).trimmingCharacters(in: .whitespacesAndNewlines), "24000")
        try writer.close()  // a second close does nothing
    }

    func testUnwritablePathIsAnIOError() {
        XCTAssertThrowsError(try WAVFileWriter(path: "/nonexistent-dir/x.wav")) { error in
            guard case .io(let errno, _) = error as? WAVError else { return XCTFail("\(error)") }
            XCTAssertEqual(errno, .noSuchFileOrDirectory)
        }
    }
}
