import Foundation

/// One part of a `multipart/form-data` body (RFC 7578).
public struct MultipartPart: Equatable, Sendable {
    /// The `name` parameter of its `Content-Disposition`.
    public var name: String
    public var filename: String?
    public var contentType: String?
    public var body: [UInt8]
}

/// Why a multipart body could not be read.
public struct MultipartError: Error, Equatable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}

/// Parses `multipart/form-data` bodies as a server receives them: the boundary from the
/// request's `Content-Type`, CRLF-delimited parts, headers per part, the closing delimiter.
public enum MultipartFormData {
    /// The boundary parameter of a `multipart/form-data` content type, unquoted.
    public static func boundary(fromContentType contentType: String) -> String? {
        let parsed = parameters(contentType)
        guard parsed.type == "multipart/form-data", let value = parsed.values["boundary"] else { return nil }
        // RFC 2046: 1 to 70 characters.
        return (1...70).contains(value.utf8.count) ? value : nil
    }

    /// The parts of `body`, in order.
    public static func parse(_ body: [UInt8], boundary: String) throws(MultipartError) -> [MultipartPart] {
        let delimiter = Array("--\(boundary)".utf8)
        // The first delimiter may be preceded by a preamble; later ones follow a CRLF.
        guard var position = find(delimiter, in: body, from: 0) else {
            throw MultipartError(reason: "no multipart boundary in the body")
        }
        let separator = [UInt8]([0x0D, 0x0A]) + delimiter
        var parts: [MultipartPart] = []
        while true {
            position += delimiter.count
            // "--" after a delimiter closes the body.
            if position + 1 < body.count, body[position] == 0x2D, body[position + 1] == 0x2D { return parts }
            // Transport padding, then CRLF.
            while position < body.count, body[position] == 0x20 || body[position] == 0x09 { position += 1 }
            guard position + 1 < body.count, body[position] == 0x0D, body[position + 1] == 0x0A else {
                throw MultipartError(reason: "multipart delimiter not followed by CRLF")
            }
            position += 2
            guard let headerEnd = find([0x0D, 0x0A, 0x0D, 0x0A], in: body, from: position) else {
                // A part with no headers starts right after the delimiter line with a CRLF.
                throw MultipartError(reason: "multipart part without a header section")
            }
            let headerText = String(decoding: body[position..<headerEnd], as: UTF8.self)
            let contentStart = headerEnd + 4
            guard let next = find(separator, in: body, from: contentStart) else {
                throw MultipartError(reason: "multipart body ends without its closing boundary")
            }
            parts.append(try makePart(headers: headerText, body: Array(body[contentStart..<next])))
            position = next + 2
        }
    }

    private static func makePart(headers text: String, body: [UInt8]) throws(MultipartError) -> MultipartPart {
        var name: String?
        var filename: String?
        var contentType: String?
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":") else { throw MultipartError(reason: "malformed part header '\(line)'") }
            let field = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch field {
            case "content-disposition":
                let params = parameters(value)
                guard params.type == "form-data" else { throw MultipartError(reason: "part disposition is not form-data") }
                name = params.values["name"]
                filename = params.values["filename"]
            case "content-type":
                contentType = value
            default:
                break
            }
        }
        guard let name else { throw MultipartError(reason: "part without a name") }
        return MultipartPart(name: name, filename: filename, contentType: contentType, body: body)
    }

    /// `form-data; name="audio"; filename="audio.wav"` → type and parameters (quotes and
    /// backslash escapes removed; a semicolon inside quotes does not split).
    static func parameters(_ value: String) -> (type: String, values: [String: String]) {
        var pieces: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in value {
            if escaped { current.append(character); escaped = false; continue }
            if quoted && character == "\\" { escaped = true; continue }
            if character == "\"" { quoted.toggle(); continue }
            if character == ";" && !quoted { pieces.append(current); current = ""; continue }
            current.append(character)
        }
        pieces.append(current)
        let type = pieces[0].trimmingCharacters(in: .whitespaces).lowercased()
        var values: [String: String] = [:]
        for piece in pieces.dropFirst() {
            guard let equals = piece.firstIndex(of: "=") else { continue }
            let key = piece[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            values[key] = String(piece[piece.index(after: equals)...]).trimmingCharacters(in: .whitespaces)
        }
        return (type, values)
    }

    /// The first occurrence of `needle` at or after `start`: memchr for its first byte,
    /// memcmp for the rest (Glibc's memmem needs _GNU_SOURCE, which Swift does not set).
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, needle.count <= haystack.count, start <= haystack.count - needle.count else { return nil }
        return haystack.withUnsafeBytes { hay -> Int? in
            needle.withUnsafeBytes { pattern -> Int? in
                let base = hay.baseAddress!
                let last = hay.count - pattern.count  // the last position a match can start
                var position = start
                while position <= last {
                    guard let hit = memchr(base + position, Int32(pattern[0]), last - position + 1) else { return nil }
                    let offset = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + offset, pattern.baseAddress!, pattern.count) == 0 { return offset }
                    position = offset + 1
                }
                return nil
            }
        }
    }
}
