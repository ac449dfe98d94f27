import FoundationEssentials
import Glibc
import PracticeNet
import PracticeProtocol

/// The last good backend answers the UI shows offline (topics, the learner's profile),
/// kept per user under `<state>/cache/<user>/<name>.json` with the time they were fetched.
/// Writes are atomic (temporary file and rename), so a crash leaves the old answer or the
/// new one.
public struct OfflineCache: Sendable {
    public let directory: String

    public init(stateDirectory: String) { directory = stateDirectory + "/cache" }

    /// An answer read back: the value and its age in seconds.
    public struct Entry: Equatable, Sendable {
        public var value: JSONValue
        public var age: Double
    }

    public func store(_ value: JSONValue, name: String, user: String) {
        let folder = "\(directory)/\(Self.safe(user))"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let record: JSONValue = ["fetched_at": .double(Date().timeIntervalSince1970), "value": value]
        try? Data(record.bytes()).write(to: URL(fileURLWithPath: "\(folder)/\(name).json"), options: .atomic)
    }

    /// Removes everything kept for `user` (a shared kiosk's visitor, at the visit's end).
    public func forget(user: String) {
        try? FileManager.default.removeItem(atPath: "\(directory)/\(Self.safe(user))")
    }

    /// Removes everything kept for anyone but `user`; what it removed.
    public func forgetEveryone(but user: String) -> [String] {
        let keep = Self.safe(user)
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return folders.filter { $0 != keep }.filter { (try? FileManager.default.removeItem(atPath: "\(directory)/\($0)")) != nil }
    }

    public func load(name: String, user: String) -> Entry? {
        guard let data = FileManager.default.contents(atPath: "\(directory)/\(Self.safe(user))/\(name).json"),
              let record = try? JSONDecoder().decode(JSONValue.self, from: data),
              let value = record["value"], let fetched = record["fetched_at"]?.doubleValue else { return nil }
        return Entry(value: value, age: max(0, Date().timeIntervalSince1970 - fetched))
    }

    /// A backend answer as a command gives it: fresh, or the last one kept (stale, with its
    /// age and the error that kept the backend from answering).
    public struct Answer<T: Sendable>: Sendable {
        public var value: T
        public var stale: Bool
        public var age: Double?
        public var error: String?
    }

    /// A backend call's result as a command answers it: a fresh value is kept under `name`
    /// for `user`; when the backend cannot be reached (and `offline` allows it: not for calls
    /// that change something), the last value kept, marked stale.
    public func answer<T: Codable & Sendable>(_ result: Result<T, ControlError>, name: String, user: String,
                                             offline: Bool = true) -> Result<Answer<T>, ControlError> {
        switch result {
        case .success(let value):
            store(ProtocolEncoder.encode(value), name: name, user: user)
            return .success(Answer(value: value, stale: false))
        case .failure(let error):
            guard offline, error.code == .backendUnavailable, let entry = load(name: name, user: user),
                  let value = try? ProtocolDecoder.decode(T.self, from: entry.value) else { return .failure(error) }
            return .success(Answer(value: value, stale: true, age: entry.age.rounded(), error: error.message))
        }
    }

    /// User ids are chosen by configuration; only safe characters reach the file system.
    private static func safe(_ user: String) -> String {
        let kept = user.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" }
        return kept.isEmpty ? "_" : String(kept.prefix(100))
    }
}
