import FoundationEssentials

/// The topics a client subscribes to; every event belongs to one.
public enum EventTopic: String, Codable, Sendable, CaseIterable, WireEnumerable {
    /// The input level, a few times a second, while someone watches it.
    case level
    /// Speech starting and stopping in the microphone.
    case speech
    /// The speaker: sound started, ran dry, finished.
    case playback
    /// Devices opening, failing, coming back.
    case device
    /// The conversation: stages, turns, replies, review.
    case session
    /// The daemon itself: configuration reloads.
    case daemon
    /// Cue practice: sign-in, recorded answers, uploads, transcripts and evaluations.
    case cue
    /// A learner's visit: begun, warned of idleness, ended.
    case visit
    /// The snapshot a client gets when it subscribes (not subscribable itself).
    case state
}

/// An event of the `practiced/1` protocol: a line
/// `{"type":"event","seq":…,"topic":…,"event":name,"mono_ns":…,"data":{…}}` whose `data` is
/// this type, encoded by ``ProtocolEncoder``. Every event the daemon writes is one of
/// ``ProtocolCatalog/events``; publishing takes only these types, so a name or a payload
/// cannot be made up at the call site.
public protocol ProtocolEvent: Codable, Sendable {
    /// The wire name, `event` in the line.
    static var name: String { get }
    static var topic: EventTopic { get }
    /// One sentence for the protocol reference.
    static var summary: String { get }
}

/// Where typed events go (the control server, or a test's recorder).
public typealias EventPublisher = @Sendable (any ProtocolEvent) -> Void
