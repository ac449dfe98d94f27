/// A client's request rate limit: a token bucket that holds a second's worth of requests,
/// full at first, refilled at the rate; each request takes one. The rate is given at each
/// request (a reload may change it) and so is the time: its rules are tested with the
/// clock in the test's hands.
struct RequestPacer {
    private var tokens = Double.greatestFiniteMagnitude  // full at first, whatever the rate
    private var at: UInt64

    /// A full bucket at `now` (monotonic nanoseconds).
    init(now: UInt64) { at = now }

    /// Takes a token at `now` at `rate` requests a second: nil when the request may go, else
    /// the seconds until a token will be there.
    mutating func take(now: UInt64, rate: Double) -> Double? {
        let elapsed = now > at ? Double(now - at) / 1e9 : 0
        tokens = min(rate, tokens + elapsed * rate)
        at = max(at, now)
        guard tokens >= 1 else { return (1 - tokens) / rate }
        tokens -= 1
        return nil
    }
}
