import Foundation
import PracticeKit
import PracticeNet
import SimulatorKit

/// An HTTP/1.1 server on loopback that answers with the recorded bytes of real-server traces
/// (``Trace``): the recorded status, Content-Type and body; REST bodies with their
/// Content-Length, streams chunked with one chunk per event, each event sent at its
/// recorded arrival time (times ``timeScale``), headers held back as the server held them.
///
/// Requests are matched by method and exact path to a script: the traces queued for that
/// route answer in order, and the last one keeps answering. Like the real server, a stream
/// asked for while another stream's reply is still being produced upstream (its recorded
/// duration has not passed, even if its client hung up) gets ``busyAnswer`` instead: what
/// the server answers a turn that overlaps a reply (traces 10 and 12).
public final class TraceReplayServer: @unchecked Sendable {
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var headers: [(String, String)]
        public var body: [UInt8]
        /// Uptime ns when it arrived.
        public var arrivedAt: UInt64
        /// The trace that answered it.
        public var answeredWith: String

        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        public var json: JSONValue? { Trace.parse(body) }
    }

    /// Recorded milliseconds are multiplied by this (0: no waiting, 1: real time).
    public let timeScale: Double
    /// The answer to a stream request that overlaps another stream upstream; nil answers
    /// the script regardless.
    public var busyAnswer: Trace? {
        get { lock.withLock { busy } }
        set { lock.withLock { busy = newValue } }
    }

    private let lock = NSCondition()
    private var routes: [String: [Trace]] = [:]
    private var busy: Trace?
    private var received: [Request] = []
    private var upstreamBusyUntil: UInt64 = 0
    private var stopped = false
    private var server: HTTPServer!
    public private(set) var baseURL: URL!

    public init(timeScale: Double = 0) throws {
        self.timeScale = timeScale
        server = HTTPServer { [unowned self] request, writer in answer(request, writer) }
        let port = try server.start()
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
    }

    /// A server that answers each trace's own request with it.
    public convenience init(_ names: [String], timeScale: Double = 0) throws {
        try self.init(timeScale: timeScale)
        for name in names { try queue(Trace.load(name)) }
    }

    deinit { stop() }

    public func stop() {
        lock.withLock {
            stopped = true
            lock.broadcast()
        }
        server.stop()
    }

    /// Queues `trace` for its own method and path, or for another route (a recorded 500
    /// as the answer to a poll, say). A path segment `*` stands for any one segment (a
    /// user id the daemon draws itself); an exact route is tried first.
    public func queue(_ trace: Trace, method: String? = nil, path: String? = nil) {
        lock.withLock { routes["\(method ?? trace.method) \(path ?? trace.path)", default: []].append(trace) }
    }

    /// Queues traces by name, each for its own route.
    public func queue(_ names: String...) throws {
        for name in names { queue(try Trace.load(name)) }
    }

    /// Every request so far, in arrival order.
    public var requests: [Request] { lock.withLock { received } }

    /// Waits until `count` requests have arrived.
    public func waitForRequests(_ count: Int, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        return lock.withLock {
            while received.count < count { if !lock.wait(until: deadline) { return received.count >= count } }
            return true
        }
    }

    // MARK: - Answering

    /// Whether route `pattern` ("GET /users/*/profile") names `route` ("GET /users/42/profile").
    static func matches(_ pattern: String, _ route: String) -> Bool {
        let (wanted, given) = (pattern.split(separator: "/", omittingEmptySubsequences: false), route.split(separator: "/", omittingEmptySubsequences: false))
        return pattern.contains("*") && wanted.count == given.count && zip(wanted, given).allSatisfy { $0 == "*" || $0 == $1 }
    }

    private func answer(_ request: SimulatorKit.HTTPRequest, _ writer: HTTPResponseWriter) {
        let path = request.target
        let now = DispatchTime.now().uptimeNanoseconds
        let chosen: Trace? = lock.withLock {
            let exact = "\(request.method) \(path)"
            let key = routes[exact] != nil ? exact : routes.keys.sorted().first { Self.matches($0, exact) } ?? exact
            guard var queued = routes[key], let next = queued.first else { return nil }
            var trace = next
            if next.isStream, let busy, now < upstreamBusyUntil {
                trace = busy  // the queued answer stays for the next request
            } else if queued.count > 1 {
                queued.removeFirst()
                routes[key] = queued
            }
            if trace.isStream && trace.status == 200 && trace.name != busy?.name {
                upstreamBusyUntil = now + nanoseconds(trace.completeMilliseconds)
            }
            received.append(Request(method: request.method, path: path, headers: request.headers, body: request.body, arrivedAt: now,
                                    answeredWith: trace.name))
            lock.broadcast()
            return trace
        }
        guard let trace = chosen else {
            lock.withLock {
                received.append(Request(method: request.method, path: path, headers: request.headers, body: request.body, arrivedAt: now,
                                        answeredWith: "-"))
                lock.broadcast()
            }
            return writer.respond(status: 404, body: Array("{\"detail\":\"Not Found\"}".utf8))
        }
        let start = now
        // The server holds its headers back (a `/start` waits for its upstream connection).
        guard wait(until: start + nanoseconds(trace.headersMilliseconds)) else { return writer.dropConnection() }
        var extra = [("date", Self.httpDate()), ("server", "uvicorn")]
        // Recorded headers beyond the framing (the Chatterbox gateway's X-New-*-Token and
        // Www-Authenticate), spelled as recorded.
        for (name, value) in trace.headers.sorted(by: { $0.key < $1.key })
        where !["content-type", "content-length", "transfer-encoding"].contains(name.lowercased()) {
            extra.append((name, value))
        }
        guard trace.isStream else {
            return writer.respond(status: trace.status, contentType: trace.contentType, headers: extra, body: trace.body)
        }
        extra += [("cache-control", "no-cache"), ("x-accel-buffering", "no")]
        writer.beginChunked(status: trace.status, contentType: trace.contentType, headers: extra)
        for event in trace.events {
            guard wait(until: start + nanoseconds(event.arrivalMilliseconds)) else { return writer.dropConnection() }
            guard writer.writeChunk(event.bytes) else { return }  // the client hung up
        }
        if trace.isWhole {
            writer.endChunked()
        } else {
            // The recording client hung up here (file 11): the server never ended it.
            _ = writer.waitForPeerClose(timeout: 60)
        }
    }

    private func nanoseconds(_ milliseconds: Double) -> UInt64 { UInt64(max(0, milliseconds * timeScale) * 1e6) }

    /// Waits until an uptime; false when the server is stopped first.
    private func wait(until uptime: UInt64) -> Bool {
        lock.withLock {
            while !stopped {
                let now = DispatchTime.now().uptimeNanoseconds
                if now >= uptime { return true }
                _ = lock.wait(until: Date().addingTimeInterval(Double(uptime - now) / 1e9))
            }
            return false
        }
    }

    static func httpDate() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date())
    }
}
