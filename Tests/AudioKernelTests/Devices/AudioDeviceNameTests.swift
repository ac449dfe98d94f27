import AudioKernel
import XCTest

final class AudioDeviceNameTests: XCTestCase {
    func testParsesEveryForm() throws {
        XCTAssertEqual(try AudioDeviceName(parsing: "auto"), .automatic)
        XCTAssertEqual(try AudioDeviceName(parsing: "alsa:default"), .alsa(pcm: "default"))
        XCTAssertEqual(try AudioDeviceName(parsing: "alsa:hw:1,0"), .alsa(pcm: "hw:1,0"))
        XCTAssertEqual(try AudioDeviceName(parsing: "alsa:plughw:CARD=PCH,DEV=0"), .alsa(pcm: "plughw:CARD=PCH,DEV=0"))
        XCTAssertEqual(try AudioDeviceName(parsing: "pulse:"), .pulse(device: nil))
        XCTAssertEqual(try AudioDeviceName(parsing: "pulse:kiosk.monitor"), .pulse(device: "kiosk.monitor"))
        XCTAssertEqual(try AudioDeviceName(parsing: "file:/tmp/in.wav"), .file(path: "/tmp/in.wav", realTime: false))
        XCTAssertEqual(try AudioDeviceName(parsing: "file:/tmp/in.wav?realtime"), .file(path: "/tmp/in.wav", realTime: true))
        XCTAssertEqual(try AudioDeviceName(parsing: "null:"), .null)
        for text in ["auto", "alsa:hw:1,0", "pulse:", "pulse:mic", "file:/a.wav?realtime", "null:"] {
            XCTAssertEqual(try AudioDeviceName(parsing: text).description, text, "round trip")
        }
    }

    func testMalformedNamesListTheAcceptedForms() {
        for text in ["", "default", "alsa:", "oss:/dev/dsp", "file:relative.wav", "null:x", "alsa:with space"] {
            XCTAssertThrowsError(try AudioDeviceName(parsing: text), text) { error in
                guard let error = error as? AudioError else { return XCTFail("\(error)") }
                XCTAssertEqual(error.kind, .invalidName)
                XCTAssertTrue(error.message.contains("alsa:<pcm>") && error.message.contains("pulse:"), error.message)
            }
        }
    }

    func testInvalidConfigurationIsRejectedBeforeOpening() {
        var config = AudioStreamConfiguration()
        config.periods = 1
        XCTAssertThrowsError(try CaptureDevice(name: .null, configuration: config)) { error in
            XCTAssertEqual((error as? AudioError)?.kind, .unsupportedFormat)
        }
    }
}
