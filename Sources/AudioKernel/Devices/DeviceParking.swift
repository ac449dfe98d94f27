/// The parking of a device, on its I/O thread: counts the frames its user has not needed it
/// for, and once that reaches `afterFrames` parks the backend until `activity` is set.
/// A playback device parks after its source has been idle a while; a capture device parks
/// at once while a half-duplex kiosk speaks.
final class DeviceParking: @unchecked Sendable {
    /// How a ``park(_:wake:activity:)`` call ended.
    enum Outcome: Equatable {
        /// The device was needed again before it parked; it went on running.
        case notParked
        /// The device was parked, and runs again: what follows comes after a gap.
        case resumed
        /// The wake signal (stop) was set while parked.
        case woken
    }

    let idle: @Sendable () -> Bool
    let afterFrames: Int
    private let report: Locked<DeviceReport>
    private var idleFrames = 0

    /// - Parameters:
    ///   - idle: true while nobody needs the device; read between periods.
    ///   - afterFrames: how long `idle` must hold before the device parks (0: at once).
    ///   - report: the device's, where the parks are counted for its statistics.
    init(idle: @escaping @Sendable () -> Bool, afterFrames: Int, report: Locked<DeviceReport>) {
        self.idle = idle
        self.afterFrames = afterFrames
        self.report = report
    }

    /// Whether the device has been unneeded long enough, counting one more period of `frames`.
    func due(after frames: Int) -> Bool {
        if idle() { idleFrames += frames } else { idleFrames = 0 }
        return idleFrames > 0 && idleFrames >= afterFrames
    }

    /// Parks `backend` until `activity` (needed again) or `wake` (stop) is set.
    func park(_ backend: any DeviceBackend, wake: EventSignal, activity: EventSignal) throws(AudioError) -> Outcome {
        idleFrames = 0
        // Cleared before the last look: a wake-up after it stays set.
        activity.reset()
        guard idle() else { return .notParked }
        report.withLock { $0.parks += 1 }
        return try backend.park(wake: wake, activity: activity) ? .resumed : .woken
    }
}
