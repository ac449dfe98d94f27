internal import CAudioShim
import Glibc

/// Who sent a request.
public struct ControlClientInfo: Equatable, Sendable {
    public var id: Int
    public var credentials: PeerCredentials

    public init(id: Int, credentials: PeerCredentials) {
        self.id = id
        self.credentials = credentials
    }
}

/// Who is at the other end of a connection, and whether they may use the socket.
public struct PeerCredentials: Equatable, Sendable {
    // pid_t, uid_t and gid_t, spelled out: the C shim's types may not appear in the API.
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    /// The credentials of the peer of `fd` (SO_PEERCRED).
    public static func of(_ fd: Int32) -> PeerCredentials? {
        var pid: pid_t = 0, uid: uid_t = 0, gid: gid_t = 0
        guard practiced_peer_credentials(fd, &pid, &uid, &gid) == 0 else { return nil }
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }

    /// The daemon's own user, root, and members of `group` (primary or supplementary) may
    /// connect.
    public func isAllowed(daemonUID: UInt32, group: UInt32?) -> Bool {
        if uid == daemonUID || uid == 0 { return true }
        guard let group else { return false }
        if gid == group { return true }
        guard let user = Self.userName(uid) else { return false }
        return Self.members(of: group).contains(user)
    }

    static func userName(_ uid: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return nil }
        return String(cString: name)
    }

    static func members(of group: gid_t) -> [String] {
        var entry = Glibc.group()
        var result: UnsafeMutablePointer<Glibc.group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getgrgid_r(group, &entry, &buffer, buffer.count, &result) == 0, result != nil, var member = entry.gr_mem else { return [] }
        var names: [String] = []
        while let name = member.pointee {
            names.append(String(cString: name))
            member += 1
        }
        return names
    }

    /// The gid of a group name (or a number), nil when unknown.
    public static func groupID(_ name: String) -> UInt32? {
        if let number = UInt32(name) { return number }
        var entry = Glibc.group()
        var result: UnsafeMutablePointer<Glibc.group>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.gr_gid
    }

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}
