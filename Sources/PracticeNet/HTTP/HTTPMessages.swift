import FoundationEssentials

// The transport's request, response and error: what URLRequest, HTTPURLResponse and
// URLError carried while URLSession was the transport. They live in FoundationNetworking on
// Linux, and linking it loads libcurl, gnutls and some twenty libraries more into the
// daemon (4 MB resident) for three value types.

/// A request for ``HTTPClient``: method, URL and header fields (the body travels beside it).
package struct HTTPRequest: Sendable {
    package var url: URL
    package var httpMethod: String
    package private(set) var headerFields: [String: String] = [:]

    package init(url: URL, method: String = "GET") {
        self.url = url
        httpMethod = method
    }

    /// Sets a header field, replacing one of the same name in any case.
    package mutating func setValue(_ value: String?, forHTTPHeaderField name: String) {
        if let existing = headerFields.keys.first(where: { $0.equalsIgnoringASCIICase(name) }) {
            headerFields[existing] = nil
        }
        if let value { headerFields[name] = value }
    }
}

/// A response's head as the handler hears it.
package struct HTTPResponse: Sendable {
    package let statusCode: Int
    package let headerFields: [String: String]

    package init(statusCode: Int, headerFields: [String: String]) {
        self.statusCode = statusCode
        self.headerFields = headerFields
    }

    /// A header field by name, in any case.
    package func value(forHTTPHeaderField name: String) -> String? {
        headerFields.first { $0.key.equalsIgnoringASCIICase(name) }?.value
    }

    /// The reason phrase of a status (RFC 9110), for an error answer without a body.
    package static func reason(forStatusCode status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "HTTP \(status)"
        }
    }
}

/// Why the transport could not complete an exchange. The codes are the URL loading
/// system's (`NSURLErrorCannotConnectToHost` is -1004), as the backend client's errors have
/// always reported them.
package struct TransportError: Error, Sendable, CustomStringConvertible {
    package enum Code: Int, Sendable {
        case cancelled = -999
        case cannotFindHost = -1003
        case cannotConnectToHost = -1004
        case networkConnectionLost = -1005
        case badServerResponse = -1011
        case secureConnectionFailed = -1200
        case serverCertificateUntrusted = -1202
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }

    /// Whether the request certainly never left: nothing could have reached the server.
    package var sentNothing: Bool { code == .cannotFindHost || code == .cannotConnectToHost }
}
