import AudioKernel
import Foundation
import TestSupport
import XCTest

/// `audiokernel-demo stretch` as a user types it (the shipped binary): a slowed file ffprobe
/// reads at the length the rate says, and a clear refusal of every bad value.
final class StretchCommandTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory()
        addTeardownBlock { [directory] in try? FileManager.default.removeItem(at: directory!) }
    }

    private var demo: String { ShippedBinaries.path(of: "audiokernel-demo") }
    private static let hello = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../samples/hello.wav").standardized.path

    func testASlowedFileIsTwentyFourKilohertzMonoAndLastsTheInputOverTheRate() throws {
        let out = directory.appendingPathComponent("slow.wav").path
        try runTool(demo, ["stretch", Self.hello, out, "--rate", "0.75"])
        let probe = try runTool("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels,duration", "-of", "csv=p=0", out])
        let fields = probe.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").map(String.init)
        XCTAssertEqual(Array(fields.prefix(3)), ["pcm_s16le", "24000", "1"], probe)
        let input = try WAVDecoder.decode(contentsOfFile: Self.hello).duration
        XCTAssertEqual(Double(fields.last ?? "") ?? 0, input / 0.75, accuracy: 0.002, probe)
    }

    func testBadRatesAndInputsAreRefusedClearly() throws {
        let out = directory.appendingPathComponent("x.wav").path
        let fifo = directory.appendingPathComponent("fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let writer = Thread { if let f = fopen(fifo, "w") { fputs("not a wav at all", f); fclose(f) } }
        writer.start()
        let cases: [([String], String)] = [
            (["--rate", "nan"], "playback rate nan is outside 0.5 to 2.0"),
            (["--rate", "0"], "playback rate 0.0 is outside 0.5 to 2.0"),
            (["--rate", "-1"], "playback rate -1.0 is outside"),
            (["--rate", "10"], "playback rate 10.0 is outside"),
            (["--rate", "fast"], "--rate takes a speed"),
        ]
        for (arguments, message) in cases {
            XCTAssertThrowsError(try runTool(demo, ["stretch", Self.hello, out] + arguments), "\(arguments)") { error in
                XCTAssertTrue("\(error)".contains(message), "\(arguments): \(error)")
            }
        }
        XCTAssertThrowsError(try runTool(demo, ["stretch", "/dev/zero", out, "--rate", "0.8"], timeout: 60)) { error in
            XCTAssertTrue("\(error)".contains("more than 512 MiB"), "\(error)")
        }
        XCTAssertThrowsError(try runTool(demo, ["stretch", fifo, out, "--rate", "0.8"], timeout: 60)) { error in
            XCTAssertTrue("\(error)".contains("not a RIFF file"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: out + ".partial"))
    }

    /// The whole-file reader stops at its bound on a device that never ends.
    func testReadingAFileStopsAtItsBound() {
        guard case .failure(let error) = SystemCall.readFile(atPath: "/dev/zero", maximumBytes: 1 << 20) else {
            return XCTFail("/dev/zero was read whole")
        }
        XCTAssertEqual(error.rawValue, EFBIG)
    }
}
