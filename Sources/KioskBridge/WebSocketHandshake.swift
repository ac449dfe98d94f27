internal import COpenSSL
import FoundationEssentials

/// The opening handshake of a WebSocket (RFC 6455 4.2): a GET that asks to upgrade, with a
/// key, version 13 and the subprotocols the client offers. The bridge admits one only when it
/// offers this start's token (``BridgeToken``), and answers with the subprotocol `binary`.
public enum WebSocketHandshake {
    /// The client must offer this subprotocol (websockify's name for binary frames, which the
    /// page asks for) beside its token.
    public static let subprotocol = "binary"

    public enum Outcome: Equatable, Sendable {
        /// Switch protocols with this response.
        case accept(response: [UInt8])
        /// Refuse with `status` (the bytes are the whole response) and close.
        case refuse(status: Int, response: [UInt8], reason: String)
    }

    /// Whether `head` asks for a WebSocket at all (then ``answer(_:token:)`` decides).
    public static func isUpgrade(_ head: HTTPRequestHead) -> Bool {
        head.tokens("upgrade").contains { $0.lowercased() == "websocket" }
    }

    public static func answer(_ head: HTTPRequestHead, token: BridgeToken) -> Outcome {
        guard head.method == "GET", head.version == "HTTP/1.1" else {
            return refusal(400, "a WebSocket is opened by an HTTP/1.1 GET")
        }
        guard head.tokens("connection").contains(where: { $0.lowercased() == "upgrade" }) else {
            return refusal(400, "no Connection: Upgrade")
        }
        guard head.field("sec-websocket-version") == "13" else {
            return .refuse(status: 426, response: HTTPResponse.head(426, "Upgrade Required", extra: [("Sec-WebSocket-Version", "13")], length: 0),
                           reason: "WebSocket version \(head.field("sec-websocket-version") ?? "none")")
        }
        guard let key = head.field("sec-websocket-key"), let decoded = Data(base64Encoded: key), decoded.count == 16 else {
            return refusal(400, "no valid Sec-WebSocket-Key")
        }
        let offered = head.tokens("sec-websocket-protocol")
        // Nothing of what was offered goes into the reason (it is logged): a token is a secret.
        guard token.isAdmitted(offered: offered) else { return refusal(403, "a WebSocket without this start's token") }
        guard offered.contains(subprotocol) else { return refusal(400, "the subprotocol \(subprotocol) was not offered") }
        let response = HTTPResponse.head(101, "Switching Protocols", extra: [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"),
            ("Sec-WebSocket-Accept", accept(key: key)), ("Sec-WebSocket-Protocol", subprotocol),
        ], length: nil)
        return .accept(response: response)
    }

    /// base64(SHA-1(key + the RFC's GUID)).
    public static func accept(key: String) -> String {
        let input = Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        _ = input.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &digest, &length, EVP_sha1(), nil) }
        return Data(digest).base64EncodedString()
    }

    private static func refusal(_ status: Int, _ reason: String) -> Outcome {
        .refuse(status: status, response: HTTPResponse.error(status), reason: reason)
    }
}
