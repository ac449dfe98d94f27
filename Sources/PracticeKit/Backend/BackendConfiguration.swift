import FoundationEssentials
import Glibc

/// Where the backend is and how patient the client is with it.
public struct BackendConfiguration: Sendable {
    public var baseURL: URL
    /// A REST call, from sending to the last byte of the answer (`/corrections` and
    /// `/evaluate` make a model call on the server: 0.4-0.8 s fast, much slower for real).
    public var requestTimeout: Double = 30
    /// A stream may go this long without a byte. The server itself ends a reply after 30 s
    /// without upstream events, and `/start` may wait 15 s before answering at all; the
    /// iOS client allows 60 s per stream.
    public var streamIdleTimeout: Double = 60
    /// A whole stream, however lively.
    public var streamTotalTimeout: Double = 300
    public var retry = RetryPolicy()
    /// For an `https://` backend: a PEM file of the CAs its certificate must chain to (a
    /// private CA). Nil trusts the system's CA store (`/etc/ssl/certs`, as OpenSSL finds it).
    public var caFile: String?

    public init(baseURL: URL) { self.baseURL = baseURL }
}

/// Exponential backoff with jitter, for the failures that are safe to repeat: 503 (the
/// server had not started on the request), a connection refused before anything was sent,
/// and any failure of an idempotent GET.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included.
    public var maxAttempts = 6
    public var initialDelay = 0.25
    public var multiplier = 2.0
    public var maxDelay = 2.0
    /// ± this fraction of each delay is random, so that kiosks restarted together do not
    /// retry in step.
    public var jitter = 0.2

    public init() {}

    /// No retries at all.
    public static var none: RetryPolicy {
        var policy = RetryPolicy()
        policy.maxAttempts = 1
        return policy
    }

    /// The delay before attempt `attempt + 1` (attempt counts from 1).
    public func delay(afterAttempt attempt: Int, random: Double = Double.random(in: -1...1)) -> Double {
        let base = min(maxDelay, initialDelay * pow(multiplier, Double(max(0, attempt - 1))))
        return max(0, base * (1 + jitter * random))
    }

    /// Whether a failed attempt may be repeated.
    public func shouldRetry(_ error: BackendError, method: String, attempt: Int) -> Bool {
        guard attempt < maxAttempts else { return false }
        switch error {
        case .http(let status, _):
            // 503: the request was turned away before any work. GETs change nothing.
            return status == 503 || (method == "GET" && (status == 502 || status == 504 || status == 500))
        case .transport(_, _, let sentNothing):
            return sentNothing || method == "GET"
        case .timedOut:
            return method == "GET"
        case .validation, .cancelled, .invalidResponse:
            return false
        }
    }
}
