import AudioKernel
import Dispatch
import Foundation
@testable import PracticeKit
import PracticeProtocol
import PracticeSupport
import TestSupport
import XCTest

/// The device keeper on the test's clock: `audio.idle_close_s` and the retry of a device
/// that failed are checked every 2 s of the clock, so ten idle minutes run at once and in
/// order. The devices are real ones that need no sound server: the null devices, and a WAV
/// file as the microphone.
final class DeviceKeeperClockTests: XCTestCase {
    private let queue = DispatchQueue(label: "practiced.test.audio")
    private let clock = TestClock()
    private let needed = Locked(false)
    private let states = Awaitable<[(AudioDirection, DeviceKeeper.State)]>([])

    private func keeper(_ configuration: DaemonConfiguration) -> DeviceKeeper {
        clock.manual()
        let states = states
        let needed = needed
        return DeviceKeeper(
            queue: queue, clock: clock, audio: KioskAudio(), logger: Logger(category: "test", sink: DiscardLogSink()),
            settings: { (configuration, 1.0) }, needed: { needed.withLock { $0 } }, hearingNeeded: { false },
            models: SpeechModelKeeper(queue: queue, clock: clock, logger: Logger(category: "test", sink: DiscardLogSink())) { _ in },
            handlers: .init(recorder: { _ in }, player: { _ in }, device: { _, _ in },
                            state: { direction, state in states.update { $0.append((direction, state)) } }))
    }

    /// A keeper opened and checking on the clock, closed again when the test ends.
    private func started(_ configuration: DaemonConfiguration) -> DeviceKeeper {
        let keeper = keeper(configuration)
        addTeardownBlock { [queue] in
            keeper.cancel()
            queue.sync { keeper.close(state: .closed) }
        }
        queue.sync { keeper.open() }
        keeper.start()
        return keeper
    }

    private func nullDevices(idleCloseSeconds: Int) -> DaemonConfiguration {
        var configuration = DaemonConfiguration()
        configuration.captureDevice = AudioDeviceURI(.null)
        configuration.playbackDevice = AudioDeviceURI(.null)
        configuration.deviceIdleCloseSeconds = idleCloseSeconds
        return configuration
    }

    private var lastStates: [AudioDirection: DeviceKeeper.State] {
        var last: [AudioDirection: DeviceKeeper.State] = [:]
        for (direction, state) in states.value { last[direction] = state }
        return last
    }

    func testDevicesNothingNeedsCloseAfterTheIdleTimeOfTheClockAndReopenWhenNeeded() {
        let keeper = started(nullDevices(idleCloseSeconds: 30))
        XCTAssertTrue(keeper.isOpen)
        XCTAssertEqual(lastStates, [.capture: .running, .playback: .running])

        clock.advance(by: 29)
        XCTAssertTrue(keeper.isOpen, "closed before audio.idle_close_s had passed")
        clock.advance(by: 2)
        XCTAssertFalse(keeper.isOpen, "still open 31 s after anything needed it")
        XCTAssertEqual(lastStates, [.capture: .idle, .playback: .idle])

        // A session needs them again: the next check opens them, and they stay open for as
        // long as it does.
        needed.withLock { $0 = true }
        clock.advance(by: 2)
        XCTAssertTrue(keeper.isOpen)
        XCTAssertEqual(lastStates, [.capture: .running, .playback: .running])
        clock.advance(by: 600)
        XCTAssertTrue(keeper.isOpen, "closed while needed")
        XCTAssertEqual(states.value.count, 6, "a state told twice or a close in between: \(states.value)")
    }

    func testZeroKeepsTheDevicesOpen() {
        let keeper = started(nullDevices(idleCloseSeconds: 0))
        clock.advance(by: 3_600)
        XCTAssertTrue(keeper.isOpen)
        XCTAssertEqual(states.value.count, 2)
    }

    func testAMicrophoneThatFailedIsTriedAgainAtTheNextCheck() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keeper-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let microphone = directory.appendingPathComponent("microphone.wav").path
        var configuration = nullDevices(idleCloseSeconds: 30)
        configuration.captureDevice = AudioDeviceURI(.file(path: microphone, realTime: true))
        needed.withLock { $0 = true }
        let keeper = started(configuration)
        guard case .failed(let why) = lastStates[.capture] else { return XCTFail("\(states.value)") }
        XCTAssertTrue(why.contains("microphone.wav"), why)
        XCTAssertEqual(lastStates[.playback], .running)

        // The file appears; nothing happens until the clock reaches the next check.
        try SimulatorHarness.wav(samples: [Int16](repeating: 0, count: 24_000 * 5)).write(to: URL(fileURLWithPath: microphone))
        clock.advance(by: 1.5)
        XCTAssertNotEqual(lastStates[.capture], .running)
        clock.advance(by: 0.5)
        XCTAssertEqual(lastStates[.capture], .running)
        XCTAssertNotNil(keeper.recorder)
    }

    func testCancelledChecksNoLongerRun() {
        let keeper = started(nullDevices(idleCloseSeconds: 1))
        keeper.cancel()
        clock.advance(by: 60)
        XCTAssertTrue(keeper.isOpen, "a check ran after cancel()")
    }
}
