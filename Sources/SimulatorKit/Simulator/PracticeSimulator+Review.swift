import AudioKernel
import Foundation
import PracticeKit
import PracticeNet

// The review lifecycle and the profile: what `DELETE`, `GET /review`, `/corrections`,
// `/end` and the user routes answer.
extension PracticeSimulator {
    func endTalk(_ session: SimulatedSession, _ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        let json: JSONValue = lock.withLock {
            if session.mode == "review" {
                session.status = "ended"
            } else {
                // Also from `completed`: the real server moves it back to reviewing.
                session.status = "reviewing"
                session.reviewPolls = 0
            }
            return ["session_id": .string(session.id), "status": .string(session.status), "mode": .string(session.mode)]
        }
        respond(writer, 200, json, request)
    }

    func review(_ session: SimulatedSession, _ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        let json: JSONValue = lock.withLock {
            let fails = configuration.faults.reviewFails
            switch session.status {
            case "reviewing":
                session.reviewPolls += 1
                // The marks and `reviewed` come together (traces 18–19).
                if session.reviewPolls >= configuration.pollsUntilMarks {
                    if !fails && !session.marksGenerated { generateMarks(session) }
                    session.marksGenerated = true
                    session.status = "reviewed"
                }
            case "completing":
                session.completionPolls += 1
                if session.completionPolls >= configuration.pollsUntilSummary && session.summary.isNull && !fails {
                    session.summary = ReviewContent.summary
                }
                if session.completionPolls > configuration.pollsUntilSummary { session.status = "completed" }
            default:
                break
            }
            return session.reviewJSON
        }
        respond(writer, 200, json, request)
    }

    func generateMarks(_ session: SimulatedSession) {
        for index in session.segments.indices {
            markCounter += 1
            let mark = ReviewContent.mark(id: markCounter, for: session.segments[index].userText, random: &random)
            session.segments[index].marks = [mark]
            profiles[session.userID, default: SimulatedProfile(userID: session.userID)].addWeakPoint(from: mark)
        }
    }

    func correction(_ session: SimulatedSession, _ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        struct Body: Decodable {
            var segment_id: Int
            var user_message: String
        }
        guard let body = decode(Body.self, request, writer, fields: [("segment_id", .integer, true), ("user_message", .string, true)]) else { return }
        let (accepts, exists, fails) = lock.withLock {
            (session.acceptsCorrections, session.segments.contains { $0.id == body.segment_id }, configuration.faults.correctionFails)
        }
        guard accepts else { return respondDetail(writer, 400, "Session is not in review state", request) }
        guard exists else { return respondDetail(writer, 404, "Segment not found in this session", request) }
        clock.wait(milliseconds: modelCallMilliseconds)  // the model call is synchronous
        guard !fails else { return respondFailure(writer, 500, request) }
        let json: JSONValue = lock.withLock {
            correctionCounter += 1
            let fields: [(String, JSONValue)] = [
                ("user_message", .string(body.user_message)),
                ("correction", .string("A better way to say it: \(body.user_message.trimmingCharacters(in: .whitespaces))")),
                ("explanation", "Keep the verb in the past tense for a finished action."), ("created_at", .string(Timestamp.now())),
            ]
            // The POST answer names the segment; inside the review its parent does (traces 20–21).
            if let index = session.segments.firstIndex(where: { $0.id == body.segment_id }) {
                session.segments[index].corrections.append(.object([("id", .int(correctionCounter))] + fields))
            }
            return .object([("id", .int(correctionCounter)), ("segment_id", .int(body.segment_id))] + fields)
        }
        respond(writer, 200, json, request)
    }

    func end(_ session: SimulatedSession, _ request: HTTPRequest, _ writer: HTTPResponseWriter) {
        let result: JSONValue? = lock.withLock {
            if session.status == "completed" { return nil }
            session.status = session.segments.isEmpty ? "completed" : "completing"
            session.completionPolls = 0
            return ["session_id": .string(session.id), "status": .string(session.status)]
        }
        guard let result else { return respondDetail(writer, 400, "Session already completed", request) }
        respond(writer, 200, result, request)
    }

    func profile(_ userID: String) -> SimulatedProfile {
        if let existing = profiles[userID] { return existing }
        let created = SimulatedProfile(userID: userID)
        profiles[userID] = created
        return created
    }
}
