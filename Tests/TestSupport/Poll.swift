import Foundation

/// Waiting on a condition that no event announces (practice-sim's state, `/proc`): it is
/// checked every `interval` until a deadline. Anything that has an event is awaited on it.
public enum Poll {
    public static func until(timeout: Double, interval: Double = 0.02, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(UInt32(interval * 1_000_000))
        }
        return condition()
    }
}
