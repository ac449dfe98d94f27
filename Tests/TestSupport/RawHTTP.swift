import Foundation

/// One HTTP/1.1 exchange over a plain blocking socket, seen as the bytes on the wire:
/// status, header names and values as sent, whether the body was chunked, and the body
/// (de-chunked). For checking a server's framing against a recorded trace, which a client
/// library would hide.
public struct RawHTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var chunked: Bool
    /// Whether the body ended properly (the last chunk, or all of Content-Length).
    public var complete: Bool

    public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
}

public enum RawHTTP {
    /// Sends one request (`Connection: close`) and reads the answer until the server closes,
    /// or until `until` (given the body so far) says to stop, which hangs up like a client
    /// that barges in.
    public static func exchange(_ base: URL, _ method: String, _ path: String, contentType: String? = nil, body: [UInt8] = [],
                                headers: [(String, String)] = [], timeout: Double = 30,
                                until: (([UInt8]) -> Bool)? = nil) throws -> RawHTTPResponse {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TraceError(message: "socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(base.port ?? 80).bigEndian)
        address.sin_addr.s_addr = inet_addr(base.host ?? "127.0.0.1")
        var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TraceError(message: "connect: \(errno)") }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(base.host ?? "127.0.0.1"):\(base.port ?? 80)\r\nConnection: close\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        var sent = 0
        while sent < request.count {
            let n = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, request.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TraceError(message: "send: \(errno)") }
            sent += n
        }
        var raw: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var response: RawHTTPResponse?
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            raw += buffer[0..<n]
            response = parse(raw)
            if let response, let until, until(response.body) { break }
            if let response, response.complete { break }
        }
        guard let response = response ?? parse(raw) else { throw TraceError(message: "no HTTP response in \(raw.count) bytes") }
        return response
    }

    /// The response in `raw` so far (nil before the header section is whole).
    static func parse(_ raw: [UInt8]) -> RawHTTPResponse? {
        guard let end = (0..<max(0, raw.count - 3)).first(where: { raw[$0] == 13 && raw[$0 + 1] == 10 && raw[$0 + 2] == 13 && raw[$0 + 3] == 10 })
        else { return nil }
        let lines = String(decoding: raw[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0
        let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = RawHTTPResponse(status: status, headers: headers, body: [], chunked: false, complete: false)
        let rest = Array(raw[(end + 4)...])
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            response.chunked = true
            var index = 0
            while let lineEnd = (index..<max(index, rest.count - 1)).first(where: { rest[$0] == 13 && rest[$0 + 1] == 10 }) {
                guard let size = Int(String(decoding: rest[index..<lineEnd], as: UTF8.self), radix: 16) else { break }
                if size == 0 {
                    response.complete = true
                    break
                }
                let start = lineEnd + 2
                guard start + size + 2 <= rest.count else { break }
                response.body += rest[start..<(start + size)]
                index = start + size + 2
            }
        } else if let length = response.header("Content-Length").flatMap(Int.init) {
            response.body = Array(rest.prefix(length))
            response.complete = rest.count >= length
        } else {
            response.body = rest
        }
        return response
    }
}
