import FoundationEssentials

/// How the session paces its polling and retries.
public struct SessionSettings: Sendable {
    public var userID: String
    public var userName: String?
    /// `GET /review` while the review or the summary is generated (the iOS client: 2 s).
    public var pollInterval: Double = 2
    /// Polling gives up after this many errors in a row (the iOS client: 3).
    public var pollErrorLimit = 3
    /// Polling for the summary gives up after this long.
    public var finishTimeout: Double = 300
    /// A turn the backend could not take is sent again, with backoff, for this long before
    /// it is reported pending (it stays in the spool either way).
    public var turnRetrySeconds: Double = 60
    public var turnRetryInitialDelay = 1.0
    public var turnRetryMaxDelay = 10.0
    /// After a barge-in the stopped reply's stream is read to its end silently, and the next
    /// upload waits for that end at most this long (then the stream is hung up). A turn sent
    /// while upstream still produces a reply comes back empty (traces 09–12).
    public var drainTimeout = 10.0

    public init(userID: String, userName: String? = nil) {
        self.userID = userID
        self.userName = userName
    }
}
