/// Paces a clockless device at one period per period of wall time, against absolute
/// deadlines so that the pace does not drift with the time spent per period.
struct RealTimePacer {
    let periodNanoseconds: Int64
    private var nextDeadline: Int64?

    init(periodNanoseconds: Int64) { self.periodNanoseconds = periodNanoseconds }

    /// Waits for the next period when `pacer` is set; otherwise only checks the wake signal.
    /// - Returns: true when the wake signal is set.
    static func wait(_ pacer: inout RealTimePacer?, wake: EventSignal) -> Bool {
        guard pacer != nil else { return wake.isSet }
        return pacer!.waitForNextPeriod(wake: wake)
    }

    /// Waits until the next period is due.
    /// - Returns: true when the wake signal was set instead.
    mutating func waitForNextPeriod(wake: EventSignal) -> Bool {
        let now = Monotonic.now()
        let deadline = nextDeadline ?? now
        // After a long stall start again from now rather than bursting to catch up.
        nextDeadline = max(deadline, now - 4 * periodNanoseconds) + periodNanoseconds
        if deadline > now { return wake.wait(timeoutNanoseconds: deadline - now) }
        return wake.isSet
    }
}
