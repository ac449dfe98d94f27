import AudioKernel
import Dispatch
import FoundationEssentials
import PracticeNet
import PracticeSupport

/// The Chatterbox backend's client (`shared/chatterbox-traces/flows.md`): every call is
/// `POST /rpc/<name>` to the gateway with a JSON object of exactly the function's keys, over
/// the daemon's own HTTP/1.1 transport; uploads and downloads go to the files service's
/// signed URLs without `Authorization`.
///
/// Tokens (flows.md §2): every authorized call carries `Authorization: Bearer <access>` and
/// `X-Refresh-Token: <refresh>`; a pair in `X-New-Access-Token`/`X-New-Refresh-Token` replaces
/// the kept one at once. A 401 is answered by one `refresh_tokens` and one retry; a refused
/// refresh or a second 401 forgets the pair and throws ``ChatterboxError/signInRequired(_:)``.
///
/// Every answer is read up to a limit (``maximumAnswerBytes``, ``maximumDownloadBytes``): a
/// backend that sends more gets a clear error, not the kiosk's memory. The network log
/// (debug) names the call, status, sizes and time; never a body, a token or a URL's signature.
public final class ChatterboxClient: Sendable {
    /// The largest RPC answer read: a history of about 2,000 evaluated recordings.
    public static let maximumAnswerBytes = 4 << 20
    /// The largest recording downloaded: 45 minutes at the kiosk's 48 kbit/s, 4 at 256.
    public static let maximumDownloadBytes = 16 << 20

    public let configuration: BackendConfiguration
    public let tokens: ChatterboxTokenStore
    private let transport: BackendTransport
    private let logger: Logger

    public convenience init(configuration: BackendConfiguration, tokens: ChatterboxTokenStore, logger: Logger = .disabled) {
        self.init(configuration: configuration, tokens: tokens, logger: logger, clock: DispatchClock())
    }

    /// `clock`: whose time each call's deadline runs on (the daemon's one clock).
    init(configuration: BackendConfiguration, tokens: ChatterboxTokenStore, logger: Logger = .disabled, clock: any PracticeClock) {
        self.configuration = configuration
        self.tokens = tokens
        self.logger = logger
        transport = BackendTransport(caFile: configuration.caFile, clock: clock)
    }

    deinit { transport.invalidate() }

    // MARK: - Configuration and sign-in

    public func appConfig() async throws(ChatterboxError) -> ChatterboxAppConfig {
        try await rpc("app_config", Empty(), authorized: false)
    }

    /// Mails the learner a 6-digit code (`{"success": true}` at once).
    public func requestLoginCode(email: String) async throws(ChatterboxError) {
        let _: ChatterboxSuccess = try await rpc("request_login_code", Identifier(identifier: email), authorized: false)
    }

    /// Signs in with the mailed code and keeps the pair; `invalid_login_code` is a refusal.
    public func signIn(email: String, code: String) async throws(ChatterboxError) {
        let pair: ChatterboxTokens = try await rpc("login_with_code", CodeLogin(identifier: email, code: code), authorized: false)
        try keep(pair)
    }

    /// Mails the learner a magic link (for deployments whose link hands the token to the kiosk).
    public func requestMagicLink(email: String) async throws(ChatterboxError) {
        let _: ChatterboxSuccess = try await rpc("request_magic_link", Identifier(identifier: email), authorized: false)
    }

    /// Signs in with a magic link's `token=` (single use: `invalid_magic_link` the second time).
    public func signIn(magicToken: String) async throws(ChatterboxError) {
        let pair: ChatterboxTokens = try await rpc("login_with_magic_token", MagicLogin(token: magicToken), authorized: false)
        try keep(pair)
    }

    /// Forgets the pair (the tokens are stateless JWTs: there is nothing to revoke).
    public func signOut() { tokens.clear() }

    public var isSignedIn: Bool { tokens.current != nil }

    // MARK: - Learner

    public func me() async throws(ChatterboxError) -> ChatterboxMe {
        try await rpc("me", Empty(), authorized: true)
    }

    public func setActiveProfile(accountID: Int, languageCode: String) async throws(ChatterboxError) -> ChatterboxProfileChoice {
        try await rpc("set_active_profile", ProfileChoice(accountId: accountID, languageCode: languageCode), authorized: true)
    }

    // MARK: - Cues

    /// The current batch (the same cards on every call until a shuffle).
    public func cues(profileID: Int, count: Int) async throws(ChatterboxError) -> [ChatterboxCue] {
        try await rpc("get_cues", CueCount(profileId: profileID, count: count), authorized: true)
    }

    /// A new batch, which later ``cues(profileID:count:)`` calls return.
    public func shuffleCues(profileID: Int, count: Int) async throws(ChatterboxError) -> [ChatterboxCue] {
        try await rpc("shuffle_cues", CueCount(profileId: profileID, count: count), authorized: true)
    }

    /// One cue with the learner's recordings of it.
    public func cue(profileID: Int, cueID: Int) async throws(ChatterboxError) -> ChatterboxCueDetail {
        try await rpc("get_cue_for_profile", CueOfProfile(profileId: profileID, cueId: cueID), authorized: true)
    }

    /// Every recording of the profile, newest first, with fresh download URLs.
    public func history(profileID: Int) async throws(ChatterboxError) -> ChatterboxHistory {
        try await rpc("get_profile_recording_history", Profile(profileId: profileID), authorized: true)
    }

    // MARK: - Recordings

    /// An intent for one `.m4a` answer to `cueID`; its URL lives 900 s.
    public func createUploadIntent(profileID: Int, cueID: Int) async throws(ChatterboxError) -> ChatterboxUploadIntent {
        try await rpc("create_recording_upload_intent", Intent(profileId: profileID, cueId: cueID, mimeType: "audio/mp4"), authorized: true)
    }

    /// PUTs the recording to the intent's URL (the files service: no `Authorization`).
    public func upload(_ m4a: Data, to url: String) async throws(ChatterboxError) {
        var request = HTTPRequest(url: try filesURL(url), method: "PUT")
        request.setValue("audio/mp4", forHTTPHeaderField: "Content-Type")
        let (response, body) = try await files(request, body: m4a, limit: 64 * 1024)
        guard (200..<300).contains(response.statusCode) else { throw .files(status: response.statusCode, text: Self.text(body)) }
    }

    /// Completes an intent; `seconds` goes in as whole seconds in a string, as the apps send it.
    public func completeUpload(intentID: Int, seconds: Double) async throws(ChatterboxError) -> ChatterboxCompletedUpload {
        let metadata = Completion.Metadata(duration: String(Int(max(0, seconds).rounded())))
        return try await rpc("complete_recording_upload", Completion(uploadIntentId: intentID, metadata: metadata), authorized: true)
    }

    public func requestTranscription(recordingID: Int) async throws(ChatterboxError) -> ChatterboxRequestStatus {
        try await rpc("request_recording_transcription", RecordingID(profileCueRecordingId: recordingID), authorized: true)
    }

    public func requestEvaluation(recordingID: Int) async throws(ChatterboxError) -> ChatterboxRequestStatus {
        try await rpc("request_recording_evaluation", RecordingID(profileCueRecordingId: recordingID), authorized: true)
    }

    /// A recording's bytes from its download URL, up to ``maximumDownloadBytes``.
    public func download(_ url: String) async throws(ChatterboxError) -> Data {
        let request = HTTPRequest(url: try filesURL(url), method: "GET")
        let (response, body) = try await files(request, body: nil, limit: Self.maximumDownloadBytes)
        guard response.statusCode == 200 else { throw .files(status: response.statusCode, text: Self.text(body)) }
        return body
    }

    // MARK: - Plumbing

    private func keep(_ pair: ChatterboxTokens) throws(ChatterboxError) {
        guard ChatterboxTokenStore.isUsable(pair) else { throw .backend(.invalidResponse("a token pair that cannot be sent back")) }
        tokens.replace(with: pair)
    }

    /// One call: the body, the tokens, the answer decoded (``JSONCall``); a 401 refreshes
    /// once and retries once.
    private func rpc<Body: Encodable, Answer: Decodable>(_ name: String, _ body: Body, authorized: Bool) async throws(ChatterboxError) -> Answer {
        let payload: Data
        do throws(BackendError) { payload = try JSONCall.encode(body, label: name) } catch { throw .backend(error) }
        let label = "POST /rpc/" + name
        let exchange = JSONCall(transport: transport, logger: logger, timeout: configuration.requestTimeout, limit: Self.maximumAnswerBytes)
        var refreshed = false
        while true {
            let base = configuration.baseURL.absoluteString.hasSuffix("/") ? configuration.baseURL.absoluteString : configuration.baseURL.absoluteString + "/"
            var request = HTTPRequest(url: URL(string: base + "rpc/" + name)!, method: "POST")
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            if authorized {
                guard let pair = tokens.current else { throw .signInRequired("not signed in") }
                request.setValue("Bearer " + pair.accessToken, forHTTPHeaderField: "Authorization")
                request.setValue(pair.refreshToken, forHTTPHeaderField: "X-Refresh-Token")
            }
            let (response, data): (HTTPResponse, Data)
            switch await exchange.exchange(request, body: payload, label: label) {
            case .failure(let error): throw .backend(error)
            case .success(let answer): (response, data) = answer
            }
            if authorized, let access = response.value(forHTTPHeaderField: "X-New-Access-Token"),
               let refresh = response.value(forHTTPHeaderField: "X-New-Refresh-Token") {
                let pair = ChatterboxTokens(accessToken: access, refreshToken: refresh)
                if ChatterboxTokenStore.isUsable(pair) { tokens.replace(with: pair) } else { logger.warning("\(label): a new token pair that cannot be sent back; ignored") }
            }
            if (200..<300).contains(response.statusCode) {
                do throws(BackendError) { return try JSONCall.decode(Answer.self, from: data, label: name) } catch { throw .backend(error) }
            }
            guard response.statusCode == 401, authorized else { throw ChatterboxError.from(status: response.statusCode, body: data) }
            guard !refreshed else {
                tokens.clear()
                throw .signInRequired("the backend refused the refreshed token")
            }
            refreshed = true
            try await refresh()
        }
    }

    /// `refresh_tokens` with the kept refresh token; any refusal means: sign in again.
    private func refresh() async throws(ChatterboxError) {
        guard let pair = tokens.current else { throw .signInRequired("not signed in") }
        do {
            let fresh: ChatterboxTokens = try await rpc("refresh_tokens", Refresh(refreshToken: pair.refreshToken), authorized: false)
            try keep(fresh)
            logger.info("chatterbox: the access token was refreshed after a 401")
        } catch {
            if case .refused = error {
                tokens.clear()
                throw .signInRequired("the refresh token was refused (\(error.reason ?? "no reason"))")
            }
            throw error
        }
    }

    /// A files-service URL: http(s), and https whenever the gateway is (no downgrade).
    private func filesURL(_ text: String) throws(ChatterboxError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http", url.host != nil else {
            throw .backend(.invalidResponse("a files URL that is not http(s)"))
        }
        if configuration.baseURL.scheme?.lowercased() == "https" && scheme != "https" {
            throw .backend(.invalidResponse("a plain-http files URL from an https backend"))
        }
        return url
    }

    /// One exchange with the files service (``JSONCall``'s, logged without the URL's
    /// signature: its last dot-separated part).
    private func files(_ request: HTTPRequest, body: Data?, limit: Int) async throws(ChatterboxError) -> (HTTPResponse, Data) {
        let url = request.url.absoluteString
        let shown = "\(request.httpMethod) " + url.split(separator: ".").dropLast().joined(separator: ".") + ".…"
        let exchange = JSONCall(transport: transport, logger: logger, timeout: configuration.requestTimeout, limit: limit)
        switch await exchange.exchange(request, body: body, label: shown) {
        case .failure(let error): throw .backend(error)
        case .success(let answer): return answer
        }
    }

    private static func text(_ body: Data) -> String {
        String(decoding: body.prefix(200), as: UTF8.self).trimmed()
    }

    // The calls' bodies: exactly the SQL function's keys (a missing or extra one is a 404).
    private struct Empty: Encodable {}
    private struct Identifier: Encodable { var identifier: String }
    private struct CodeLogin: Encodable { var identifier: String; var code: String }
    private struct MagicLogin: Encodable { var token: String }
    private struct Refresh: Encodable { var refreshToken: String }
    private struct ProfileChoice: Encodable { var accountId: Int; var languageCode: String }
    private struct CueCount: Encodable { var profileId: Int; var count: Int }
    private struct CueOfProfile: Encodable { var profileId: Int; var cueId: Int }
    private struct Profile: Encodable { var profileId: Int }
    private struct Intent: Encodable { var profileId: Int; var cueId: Int; var mimeType: String }
    private struct Completion: Encodable {
        struct Metadata: Encodable { var duration: String }
        var uploadIntentId: Int
        var metadata: Metadata
    }
    private struct RecordingID: Encodable { var profileCueRecordingId: Int }
}
