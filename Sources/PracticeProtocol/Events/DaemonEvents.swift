import FoundationEssentials
import Glibc
import PracticeNet

// The daemon itself (topic `daemon`).

extension Event {
    public struct ConfigReloaded: ProtocolEvent {
        public static let name = "config.reloaded"
        public static let topic = EventTopic.daemon
        public static let summary = "SIGHUP reloaded the configuration: every key with its value, as text."
        public var configuration: ConfigurationListing

        public init(configuration: ConfigurationListing) { self.configuration = configuration }
        // The payload is the listing itself.
        public init(from decoder: Decoder) throws { configuration = try decoder.singleValueContainer().decode(ConfigurationListing.self) }
        public func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(configuration)
        }
    }

    public struct ConfigReloadFailed: ProtocolEvent {
        public static let name = "config.reload_failed"
        public static let topic = EventTopic.daemon
        public static let summary = "SIGHUP found an invalid configuration; the running one is kept."
        public var message: String

        public init(message: String) {
            self.message = message
        }
    }
}

/// Every configuration key with its value as text, in the configuration table's order:
/// `config.get` and `config.reloaded`.
public struct ConfigurationListing: Codable, Sendable {
    public var entries: [(key: String, value: String)]

    public init(entries: [(key: String, value: String)]) { self.entries = entries }

    public init(from decoder: Decoder) throws {
        entries = try decoder.singleValueContainer().decode([String: String].self).sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(JSONValue.object(entries.map { ($0.key, .string($0.value)) }))
    }
}
