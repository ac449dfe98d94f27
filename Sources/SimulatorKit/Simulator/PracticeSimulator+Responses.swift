import AudioKernel
import Foundation
import PracticeKit
import PracticeNet

// Injected faults, the `/_sim/` control routes, and the shapes of the server's answers
// (its errors, FastAPI's validation errors), written the way the real server writes them.
extension PracticeSimulator {
    func takeInjectedFailure() -> Int? {
        lock.withLock {
            guard configuration.faults.failCount > 0 else { return nil }
            configuration.faults.failCount -= 1
            return configuration.faults.failStatus
        }
    }

    func handleControl(_ request: HTTPRequest, parts: [String], _ writer: HTTPResponseWriter) {
        switch (request.method, parts.first ?? "") {
        case ("GET", "health"):
            respond(writer, 200, ["status": "ok"], request, log: false)
        case ("GET", "faults"):
            let data = (try? JSONEncoder().encode(faults)) ?? Data("{}".utf8)
            writer.respond(status: 200, body: Array(data))
        case ("PUT", "faults"):
            do {
                faults = try JSONDecoder().decode(SimulatorFaults.self, from: Data(request.body))
                let data = (try? JSONEncoder().encode(faults)) ?? Data("{}".utf8)
                writer.respond(status: 200, body: Array(data))
            } catch {
                respondDetail(writer, 400, "bad faults: \(error)", request)
            }
        case ("GET", "log"):
            respond(writer, 200, .array(requestLog), request, log: false)
        case ("GET", "keys"):
            respond(writer, 200, idempotencyKeys, request, log: false)
        case ("POST", "reset"):
            lock.withLock {
                sessions.removeAll()
                profiles.removeAll()
                loggedRequests.removeAll()
                keys.removeAll()
                configuration.faults = SimulatorFaults()
                random = SeededRandom(seed: configuration.seed)
            }
            respond(writer, 200, ["status": "reset"], request, log: false)
        default:
            respondDetail(writer, 404, "Not Found", request)
        }
    }

    // MARK: - Responses

    func respond(_ writer: HTTPResponseWriter, _ status: Int, _ json: JSONValue, _ request: HTTPRequest, log: Bool = true) {
        if log { logRequest(request, status: status) }
        writer.respond(status: status, body: json.bytes(.compact))
    }

    func respondDetail(_ writer: HTTPResponseWriter, _ status: Int, _ detail: String, _ request: HTTPRequest) {
        respond(writer, status, ["detail": .string(detail)], request)
    }

    /// An injected failure in the shape the real server uses for that status.
    func respondFailure(_ writer: HTTPResponseWriter, _ status: Int, _ request: HTTPRequest) {
        switch status {
        case 500:
            logRequest(request, status: 500)
            writer.respond(status: 500, contentType: "text/plain; charset=utf-8", body: Array("Internal Server Error".utf8))
        case 503: respondDetail(writer, 503, "Session still connecting, try again shortly", request)
        case 504: respondDetail(writer, 504, "Session connection timed out", request)
        default: respondDetail(writer, status, HTTPStatus.reason(status), request)
        }
    }

    enum FieldType {
        case string, stringOrNull, integer
    }

    /// Decodes a JSON body after checking it as FastAPI's validation does, every field at
    /// once: a missing field's `input` is the whole body, a mistyped one's the value
    /// (trace 42). Answers 422 with the whole list when anything fails.
    func decode<T: Decodable>(_ type: T.Type, _ request: HTTPRequest, _ writer: HTTPResponseWriter,
                                      fields: [(name: String, type: FieldType, required: Bool)]) -> T? {
        guard let body = try? JSONDecoder().decode(JSONValue.self, from: Data(request.body)), case .object = body else {
            let item: JSONValue = ["type": "json_invalid", "loc": ["body", 0], "msg": "JSON decode error",
                                   "input": .object([]), "ctx": ["error": "Expecting value"]]
            respond(writer, 422, ["detail": [item]], request)
            return nil
        }
        var problems: [JSONValue] = []
        for field in fields {
            guard let value = body[field.name] else {
                if field.required {
                    problems.append(["type": "missing", "loc": ["body", .string(field.name)], "msg": "Field required", "input": body])
                }
                continue
            }
            switch (field.type, value) {
            case (.string, .string), (.stringOrNull, .string), (.stringOrNull, .null), (.integer, .int): break
            case (.integer, _):
                problems.append(["type": "int_parsing", "loc": ["body", .string(field.name)],
                                 "msg": "Input should be a valid integer, unable to parse string as an integer", "input": value])
            default:
                problems.append(["type": "string_type", "loc": ["body", .string(field.name)], "msg": "Input should be a valid string", "input": value])
            }
        }
        if problems.isEmpty, let decoded = try? JSONDecoder().decode(T.self, from: Data(request.body)) { return decoded }
        respond(writer, 422, ["detail": .array(problems.isEmpty ? [["type": "model_attributes_type", "loc": ["body"],
                                                                     "msg": "Input should be a valid dictionary or object", "input": body]] : problems)], request)
        return nil
    }

    /// FastAPI's 422 for a form without its field.
    func respondValidation(_ writer: HTTPResponseWriter, field: String, message: String, _ request: HTTPRequest) {
        let item: JSONValue = ["type": "missing", "loc": ["body", .string(field)], "msg": .string(message), "input": .null]
        respond(writer, 422, ["detail": [item]], request)
    }

    func logRequest(_ request: HTTPRequest, status: Int, extra: [(String, JSONValue)] = []) {
        let entry = JSONValue.object([("method", .string(request.method)), ("path", .string(request.target)), ("status", .int(status)),
                                      ("body_bytes", .int(request.body.count))] + extra)
        lock.withLock { loggedRequests.append(entry) }
        logLine?("\(request.method) \(request.target) -> \(status) (\(request.body.count) bytes in)")
    }

    func uuid() -> String {
        // Seeded, so runs repeat; formatted as a version-4 UUID like the server's uuid4().
        var bytes = (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let c = Array(hex)
        return "\(String(c[0..<8]))-\(String(c[8..<12]))-\(String(c[12..<16]))-\(String(c[16..<20]))-\(String(c[20..<32]))"
    }
}
