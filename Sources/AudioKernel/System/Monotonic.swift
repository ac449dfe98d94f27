import Glibc

/// CLOCK_MONOTONIC in nanoseconds: the same clock in every process on the machine, so a
/// time stamped by the daemon can be compared with a client's.
public enum Monotonic {
    public static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
