import Foundation
import PracticeKit
import PracticeNet

/// How the Chatterbox simulator behaves, and the faults it injects.
public struct ChatterboxSimulatorConfiguration: Sendable {
    /// The sign-in code every mail carries (the demo and the tests type it).
    public var loginCode = "123456"
    public var accessTokenSeconds = 3_600.0
    public var refreshTokenSeconds = 86_400.0
    /// From a transcription's request until it is ready (the traces: 4 s), and an evaluation's (11 s).
    public var transcriptionSeconds = 4.0
    public var evaluationSeconds = 11.0
    public var languages = ["en", "fr", "de", "zh", "es"]
    /// Faults: the next N transcriptions fail (processing, then none: traces 49-51).
    public var providerFailures = 0
    /// Faults: `refresh_tokens` and the gateway's refresh refuse every refresh token (a
    /// refresh token gone bad: traces 45, 59).
    public var badRefresh = false
    /// Hostile: cue details in markdown with HTML in them.
    public var hostileCueDetails = false
    /// Hostile: each evaluation's summary padded to about this many bytes.
    public var evaluationPadding = 0
    /// Hostile: the upload URLs point here instead of the simulator (a port that never answers).
    public var uploadBase: String?
    /// Hostile: each new profile starts with this many recordings (of cue 10, never uploaded).
    public var extraRecordings = 0

    public init() {}
}

/// A stand-in for the Chatterbox backend built from its recorded traces
/// (`shared/chatterbox-traces`): the gateway's `POST /rpc/<name>` calls with their exact
/// keys, tokens and refresh headers, refusals as `{code, details, hint, message}`, the files
/// service's signed upload and download URLs, and transcription and evaluation that become
/// ready after the recorded delays. Accounts, profiles, cues and recordings live in memory.
///
/// Test-only routes (with `controlRoutesEnabled`): `GET /_sim/mail?to=EMAIL` answers the last
/// mail's `code` and `magic_token`; `PUT /_sim/chatterbox` sets faults (`provider_failures`,
/// `bad_refresh`, `expire_tokens`: every access token issued so far expires now).
public final class ChatterboxSimulator: @unchecked Sendable {
    public var controlRoutesEnabled = true
    public var logLine: (@Sendable (String) -> Void)?
    /// Where the simulator is reached (for the files URLs it mints); set once bound.
    public var baseURL = "http://127.0.0.1:0"

    let lock = NSLock()
    var configuration: ChatterboxSimulatorConfiguration
    let now: @Sendable () -> Double
    var random: SeededRandom

    struct Account { var id: Int; var email: String; var activeProfile: Int?; var lastLogin: String }
    struct Token { var account: Int; var refresh: Bool; var expires: Double }
    struct Profile { var id: Int; var account: Int; var language: String; var batch: [Int] = [] }
    struct Intent { var id: Int; var profile: Int; var cue: Int; var expires: Double; var file: Int? }
    struct File { var id: Int; var bytes: [UInt8]?; var duration: String?; var created: String }
    struct Recording {
        var id: Int; var profile: Int; var cue: Int; var file: Int; var created: String
        var transcriptionStarted: Double?; var transcriptionFails = false; var transcript: String?
        var evaluationStarted: Double?; var evaluation: JSONValue?
    }

    var accounts: [Account] = []
    var tokens: [String: Token] = [:]
    var profiles: [Profile] = []
    var intents: [Intent] = []
    var objectKeys: Set<String> = []
    var files: [File] = []
    var recordings: [Recording] = []
    /// email → (code, when sent); magic token → email (single use).
    var codes: [String: (code: String, sent: Double)] = [:]
    var magicTokens: [String: String] = [:]
    var mail: [String: JSONValue] = [:]
    var signingKey: String

    public init(configuration: ChatterboxSimulatorConfiguration = ChatterboxSimulatorConfiguration(), seed: UInt64 = 1,
                now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.configuration = configuration
        self.now = now
        random = SeededRandom(seed: seed)
        signingKey = String(seed, radix: 16)
    }

    /// Changes the behaviour while serving (a fault comes or goes).
    public func update(_ change: (inout ChatterboxSimulatorConfiguration) -> Void) { lock.withLock { change(&configuration) } }

    /// The bytes PUT for each file so far (tests check what the kiosk uploaded).
    public var uploads: [[UInt8]] { lock.withLock { files.compactMap(\.bytes) } }

    /// The HTTP handler (for ``HTTPServer``).
    public func handle(_ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        let path = request.target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.target
        let (status, contentType, headers, body) = lock.withLock { route(request, path: path) }
        logLine?("\(request.method) \(Self.redacted(path)) → \(status)")
        writer.respond(status: status, contentType: contentType, headers: headers, body: body)
    }

    typealias Answer = (status: Int, contentType: String, headers: [(String, String)], body: [UInt8])

    private func route(_ request: HTTPRequest, path: String) -> Answer {
        if path.hasPrefix("/_sim/") {
            guard controlRoutesEnabled else { return text(404, "404 page not found\n") }
            return control(request, path: path)
        }
        if path.hasPrefix("/u/") { return put(request, token: String(path.dropFirst(3))) }
        if path.hasPrefix("/d/") { return get(request, token: String(path.dropFirst(3))) }
        guard request.method == "POST", path.hasPrefix("/rpc/") else { return error(404, "PGRST125", "Invalid path specified in request URL", nil) }
        let name = String(path.dropFirst(5))
        // PostgREST reads a body without Content-Type as JSON; a form type matches no function.
        if let type = request.header("Content-Type"), !type.lowercased().hasPrefix("application/json") {
            return noFunction(name)
        }
        guard let body = try? JSONDecoder().decode(JSONValue.self, from: Data(request.body)), case .object(let members) = body else {
            return error(400, "PGRST102", "Empty or invalid json", nil)
        }
        return call(name, Dictionary(members, uniquingKeysWith: { a, _ in a }), request)
    }

    // MARK: - Tokens

    /// A pair for `account`: opaque strings standing for the backend's HS256 JWTs.
    func issue(_ account: Int) -> JSONValue {
        let issued = now()
        let access = "sim.access.\(account).\(Int(issued)).\(random.hex(16))"
        let refresh = "sim.refresh.\(account).\(Int(issued)).\(random.hex(16))"
        tokens[access] = Token(account: account, refresh: false, expires: issued + configuration.accessTokenSeconds)
        tokens[refresh] = Token(account: account, refresh: true, expires: issued + configuration.refreshTokenSeconds)
        if let index = accounts.firstIndex(where: { $0.id == account }) { accounts[index].lastLogin = Self.timestamp(issued) }
        return .object([("access_token", .string(access)), ("refresh_token", .string(refresh))])
    }

    enum Caller { case anonymous, account(Int), refused(Answer) }

    /// The caller of a request: its bearer token checked as PostgREST does (30 s of leeway
    /// after `exp`), refreshed first by the gateway when `X-Refresh-Token` comes with it.
    func caller(_ request: HTTPRequest, newPair: inout JSONValue?) -> Caller {
        if let refresh = request.header("X-Refresh-Token"), !configuration.badRefresh, let token = tokens[refresh], token.refresh, token.expires > now() {
            newPair = issue(token.account)
        }
        guard let header = request.header("Authorization"), header.hasPrefix("Bearer ") else { return .anonymous }
        let value = String(header.dropFirst(7))
        if let pair = newPair, let access = pair["access_token"]?.stringValue, let fresh = tokens[access] { return .account(fresh.account) }
        guard let token = tokens[value], !token.refresh else {
            return .refused(unauthorized("PGRST301", "No suitable key or wrong key type", "None of the keys was able to decode the JWT"))
        }
        guard now() <= token.expires + 30 else { return .refused(unauthorized("PGRST303", "JWT expired", nil)) }
        return .account(token.account)
    }

    private func unauthorized(_ code: String, _ message: String, _ details: String?) -> Answer {
        var answer = error(401, code, message, details)
        answer.headers.append(("Www-Authenticate", "Bearer error=\"invalid_token\", error_description=\"\(message)\""))
        return answer
    }

    // MARK: - Answers

    func json(_ value: JSONValue, status: Int = 200) -> Answer {
        (status, "application/json; charset=utf-8", [], value.bytes())
    }

    func error(_ status: Int, _ code: String, _ message: String, _ details: String?, hint: String? = nil) -> Answer {
        json(.object([("code", .string(code)), ("details", .optional(details)), ("hint", .optional(hint)), ("message", .string(message))]), status: status)
    }

    /// A `P0001` refusal raised by the SQL: `hint` is the reason.
    func refusal(_ hint: String, _ message: String, _ details: String) -> Answer { error(400, "P0001", message, details, hint: hint) }

    func noFunction(_ name: String) -> Answer {
        error(404, "PGRST202", "Could not find the function public.\(name) in the schema cache",
              "Searched for the function public.\(name) with parameters or with a single unnamed json/jsonb parameter, but no matches were found in the schema cache.")
    }

    func text(_ status: Int, _ body: String) -> Answer { (status, "text/plain; charset=utf-8", [], Array(body.utf8)) }

    static func timestamp(_ seconds: Double) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'+00:00'"
        return formatter.string(from: Date(timeIntervalSince1970: seconds))
    }

    /// A URL's signature is not logged.
    static func redacted(_ path: String) -> String {
        guard path.hasPrefix("/u/") || path.hasPrefix("/d/") else { return path }
        return path.split(separator: ".").dropLast().joined(separator: ".") + ".…"
    }

    /// The files service's signature of a URL token (`v1.put.<id>.<expiry>`).
    func signature(_ payload: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (signingKey + payload).utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }

    func filesURL(_ kind: String, _ id: Int) -> String {
        let expiry = Int(now()) + 900
        let payload = "v1.\(kind).\(id).\(expiry)"
        let base = kind == "put" ? (configuration.uploadBase ?? baseURL) : baseURL
        return "\(base)/\(kind == "put" ? "u" : "d")/\(payload).\(signature(payload))"
    }

    /// A files URL's id, or nil when altered or older than 900 s (the files service's 403).
    private func verify(_ token: String, kind: String) -> Int? {
        let parts = token.split(separator: ".").map(String.init)
        guard parts.count == 5, parts[0] == "v1", parts[1] == kind, let id = Int(parts[2]), let expiry = Double(parts[3]),
              signature(parts[0...3].joined(separator: ".")) == parts[4], now() <= expiry else { return nil }
        return id
    }

    private func put(_ request: HTTPRequest, token: String) -> Answer {
        guard request.method == "PUT" else { return text(405, "method not allowed\n") }
        switch verify(token, kind: "put") {
        case nil: return text(403, "forbidden\n")
        case let id?:
            guard let index = intents.firstIndex(where: { $0.id == id }) else { return text(404, "not found\n") }
            let file: Int
            if let existing = intents[index].file { file = existing } else {
                file = files.count + 1
                files.append(File(id: file, bytes: nil, duration: nil, created: Self.timestamp(now())))
                intents[index].file = file
            }
            files[file - 1].bytes = request.body
            return (200, "", [], [])
        }
    }

    private func get(_ request: HTTPRequest, token: String) -> Answer {
        switch verify(token, kind: "get") {
        case nil: return text(403, "forbidden\n")
        case let id?:
            guard id >= 1, id <= files.count, let bytes = files[id - 1].bytes else { return text(500, "internal server error\n") }
            return (200, "audio/mp4", [("Accept-Ranges", "bytes")], bytes)
        }
    }

    private func control(_ request: HTTPRequest, path: String) -> Answer {
        switch (request.method, path) {
        case ("GET", "/_sim/mail"):
            let query = request.target.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            let to = query.split(separator: "&").first { $0.hasPrefix("to=") }.map { String($0.dropFirst(3)).removingPercentEncoding ?? "" } ?? ""
            return json(mail[to] ?? .null, status: mail[to] == nil ? 404 : 200)
        case ("PUT", "/_sim/chatterbox"):
            guard let body = try? JSONDecoder().decode(JSONValue.self, from: Data(request.body)) else { return text(400, "not JSON\n") }
            if let failures = body["provider_failures"]?.intValue { configuration.providerFailures = failures }
            if let bad = body["bad_refresh"]?.boolValue { configuration.badRefresh = bad }
            if body["expire_tokens"]?.boolValue == true {
                for (key, token) in tokens where !token.refresh { tokens[key]?.expires = now() - 60 }
            }
            return json(["ok": true])
        default:
            return text(404, "404 page not found\n")
        }
    }
}

extension SeededRandom {
    mutating func hex(_ bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", Int(next() & 0xFF)) }.joined()
    }
}
