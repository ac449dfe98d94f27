/// What a device's I/O thread tells other threads, under the device's one lock: the format it
/// opened at (after a reopen, the new one), whether that input is echo-cancelled (a capture
/// device), and how often it parked. Written at an open or a park, never per period.
struct DeviceReport: Sendable {
    var format: StreamFormat?
    var echoCancelled = false
    var parks = 0
}
