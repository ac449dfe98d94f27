/// The few responses the bridge writes, as bytes.
public enum HTTPResponse {
    static let reasons: [Int: String] = [
        200: "OK", 101: "Switching Protocols", 304: "Not Modified", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
        405: "Method Not Allowed", 413: "Content Too Large", 414: "URI Too Long", 426: "Upgrade Required",
        431: "Request Header Fields Too Large", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
        505: "HTTP Version Not Supported",
    ]

    /// A status line and fields; `length` adds Content-Length (nil: none, for 101).
    public static func head(_ status: Int, _ reason: String? = nil, extra: [(String, String)] = [], length: Int?) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reason ?? reasons[status] ?? "Error")\r\n"
        for (name, value) in extra { text += "\(name): \(value)\r\n" }
        if let length { text += "Content-Length: \(length)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// A short plain-text error that closes the connection.
    public static func error(_ status: Int, allow: String? = nil) -> [UInt8] {
        let body = Array("\(status) \(reasons[status] ?? "Error")\n".utf8)
        var extra = [("Content-Type", "text/plain; charset=utf-8"), ("Connection", "close")]
        if let allow { extra.append(("Allow", allow)) }
        return head(status, extra: extra, length: body.count) + body
    }
}
