import FoundationEssentials

// Answered by the control server itself: negotiation and subscriptions.

extension Command {
    public enum Hello: ControlCommand {
        public static let name = "hello"
        public static let route = CommandRoute.server
        public static let summary = "Negotiates the protocol; optional, and only as a connection's first request."
        public struct Arguments: Codable, Sendable {
            /// `practiced/1` or `practiced/1.m`; another major version closes the connection.
            public var `protocol`: String

            public init(`protocol`: String) {
                self.`protocol` = `protocol`
            }
        }
        public struct Result: Codable, Sendable {
            public var `protocol`: String
            public var version: String

            public init(`protocol`: String, version: String) {
                self.`protocol` = `protocol`
                self.version = version
            }
        }
    }

    public enum Subscribe: ControlCommand {
        public static let name = "subscribe"
        public static let route = CommandRoute.server
        public static let summary = "Follows topics (all when `topics` is left out); a `state`/`snapshot` event follows the reply."
        public struct Arguments: Codable, Sendable {
            public var topics: [EventTopic]?

            public init(topics: [EventTopic]? = nil) {
                self.topics = topics
            }
        }
        public struct Result: Codable, Sendable {
            /// Every topic the client now follows.
            public var topics: [EventTopic]
            /// The sequence number of the last event published before the subscription.
            public var seq: Int

            public init(topics: [EventTopic], seq: Int) {
                self.topics = topics
                self.seq = seq
            }
        }
    }

    public enum Unsubscribe: ControlCommand {
        public static let name = "unsubscribe"
        public static let route = CommandRoute.server
        public static let summary = "Stops following topics (all when `topics` is left out)."
        public typealias Arguments = Subscribe.Arguments
        public struct Result: Codable, Sendable {
            public var topics: [EventTopic]

            public init(topics: [EventTopic]) {
                self.topics = topics
            }
        }
    }
}
