import Glibc

/// The process's descriptor limit (`RLIMIT_NOFILE`), raised when the daemon starts.
///
/// Every client on the control socket holds a descriptor, and so does nearly everything the
/// daemon does for itself: each device's PulseAudio context and memory pools or ALSA handle
/// and wake-up eventfds, the backend's connections, the spool's files, libdispatch's and the
/// event loop's own. The soak measured 110 in a conversation with two clients. A crowd of
/// clients that takes the last of them leaves a device that must reopen (after a server
/// restart) without the descriptors it needs.
///
/// systemd starts services with a soft limit of 1,024 and a hard limit of 524,288, and asks
/// programs that use no `select()` to raise the soft limit to the hard one themselves
/// (systemd.exec(5), `LimitNOFILE=`): the soft limit is there for old programs whose
/// `fd_set` ends at 1,024. The daemon, libpulse, alsa-lib and the backend transport wait with
/// `poll` and `epoll` only, so the daemon raises it, to at most ``ceiling``.
public enum DescriptorLimit {
    /// Descriptors the daemon keeps for itself beside its clients: the soak's 110 and room
    /// to reopen a device while the old one is not yet closed.
    public static let reserve = 128

    /// The most the soft limit is raised to: far more than 1,024 clients (the most
    /// `socket.max_clients` allows) and the reserve need.
    public static let ceiling = 65_536

    public struct Limits: Equatable, Sendable {
        /// The soft limit before and after raising it, and the hard limit.
        public var before: Int
        public var soft: Int
        public var hard: Int
    }

    /// Raises the soft limit to the hard one (at most ``ceiling``); the limits before and
    /// after. A limit that cannot be read or set is left as it is.
    public static func raise() -> Limits {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return Limits(before: -1, soft: -1, hard: -1) }
        // RLIM_INFINITY is all ones; Swift does not import the macro.
        let hard = limit.rlim_max == rlim_t.max ? Int.max : Int(limit.rlim_max)
        let before = limit.rlim_cur == rlim_t.max ? Int.max : Int(limit.rlim_cur)
        let wanted = min(hard, ceiling)
        guard before < wanted else { return Limits(before: before, soft: before, hard: hard) }
        limit.rlim_cur = rlim_t(wanted)
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return Limits(before: before, soft: before, hard: hard) }
        return Limits(before: before, soft: wanted, hard: hard)
    }

    /// How many clients `limits.soft` leaves room for beside the daemon's own ``reserve``.
    public static func clientRoom(_ limits: Limits) -> Int { max(0, limits.soft - reserve) }
}
