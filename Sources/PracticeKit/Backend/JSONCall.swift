import FoundationEssentials
import PracticeNet
import PracticeSupport

/// One attempt of a call to a backend, as both clients make it (``BackendClient``'s REST
/// calls, ``ChatterboxClient``'s RPCs and files): the request over the shared transport with
/// its deadline and answer limit, logged at debug level by its label, status, sizes and time
/// (never a body, a token or a URL's signature; the time by the transport's clock, the
/// client's); a JSON body encoded and a JSON answer
/// decoded with snake_case keys, a decoding failure named by the key path it failed at.
/// What a failed attempt means (a retry, a refresh, an error of its own) is each client's.
struct JSONCall: Sendable {
    let transport: BackendTransport
    let logger: Logger
    /// Each attempt's deadline in seconds.
    let timeout: Double
    /// The largest answer read, in bytes.
    var limit = Int.max

    /// One attempt: `label` names it in the log (`POST /rpc/me`), `sent` is the body's size.
    func exchange(_ request: HTTPRequest, body: Data?, label: String) async -> Result<(HTTPResponse, Data), BackendError> {
        let start = transport.clock.now
        let outcome = await transport.exchange(request, body: body, timeout: timeout, limit: limit)
        let elapsed = Int((transport.clock.now &- start) / 1_000_000)
        switch outcome {
        case .failure(let error):
            logger.debug("\(label) failed in \(elapsed) ms: \(error)")
        case .success(let (response, data)):
            logger.debug("\(label) → \(response.statusCode) in \(elapsed) ms (\(body?.count ?? 0) bytes out, \(data.count) in)")
        }
        return outcome
    }

    /// A request body as JSON.
    static func encode<Body: Encodable>(_ body: Body, label: String) throws(BackendError) -> Data {
        do { return try encoder.encode(body) } catch { throw .invalidResponse("cannot encode \(label): \(error)") }
    }

    /// A 2xx answer as `Answer`, or the `invalid_response` naming where it does not fit.
    static func decode<Answer: Decodable>(_ type: Answer.Type, from data: Data, label: String) throws(BackendError) -> Answer {
        do { return try decoder.decode(Answer.self, from: data) } catch { throw .invalidResponse("\(label): \(describe(error))") }
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }

    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }

    /// A decoding failure in a line: what was wrong and at which key path.
    static func describe(_ error: Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "missing \(key.stringValue) at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context), DecodingError.dataCorrupted(let context):
            return "\(context.debugDescription) at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        default:
            return "\(error)"
        }
    }
}
