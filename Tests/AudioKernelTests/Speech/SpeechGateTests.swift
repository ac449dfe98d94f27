@testable import AudioKernel
import XCTest

final class SpeechGateTests: XCTestCase {
    let gate = SpeechGate()

    func testThresholdIsExclusive() {
        // A square wave of amplitude A has RMS exactly A.
        func square(_ a: Int16) -> [Int16] { (0..<480).map { $0 % 2 == 0 ? a : -a } }
        XCTAssertFalse(gate.holdsSpeech(square(300)), "RMS at the threshold is not speech")
        XCTAssertTrue(gate.holdsSpeech(square(301)))
        XCTAssertFalse(gate.holdsSpeech([Int16]()))
        XCTAssertFalse(gate.holdsSpeech([Int16](repeating: 0, count: 24_000)))
        XCTAssertTrue(SpeechGate(threshold: 100).holdsSpeech(square(150)))
    }

    func testNoiseBelowGateIsNotSpeechButATurnWithSpeechIs() {
        var g = SeededGenerator(seed: 1)
        let hiss = (0..<24_000).map { _ in Int16.random(in: -200...200, using: &g) }  // RMS ≈ 116
        XCTAssertFalse(gate.holdsSpeech(hiss))
        let voiced = hiss + TestSignals.sine(amplitude: 3000, frequency: 180, count: 12_000)
        XCTAssertTrue(gate.holdsSpeech(voiced))
    }

    func testWAVHeaderIsExcludedAndDataFoundByWalking() throws {
        // A loud LIST chunk before quiet data: if the header or the LIST bytes were measured
        // as samples, the gate would open.
        let quiet = [Int16](repeating: 100, count: 2000)
        let loudList = [UInt8](repeating: 0x7F, count: 4000)
        let file = WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat()), ("LIST", loudList), ("data", WAVBuilder.samples(quiet))])
        XCTAssertFalse(try gate.holdsSpeech(wav: file))
        let loud = WAVBuilder.file([("fmt ", WAVBuilder.pcmFormat()), ("LIST", [1, 2, 3]),
                                    ("data", WAVBuilder.samples([Int16](repeating: 500, count: 2000)))])
        XCTAssertTrue(try gate.holdsSpeech(wav: loud))
        XCTAssertThrowsError(try gate.holdsSpeech(wav: [1, 2, 3]))
    }

    func testSampleSpeechFilePassesTheGate() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("samples/hello.wav")
        let bytes = [UInt8](try Data(contentsOf: url))
        XCTAssertTrue(try gate.holdsSpeech(wav: bytes))
    }
}
