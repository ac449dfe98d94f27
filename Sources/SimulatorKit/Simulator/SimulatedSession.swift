import Foundation
import PracticeKit
import PracticeNet

/// One session on practice-sim, with the state the real server keeps: its upstream
/// connection coming up, whether `/start` was used, the reply in flight, the segments of
/// the talk and the review lifecycle (`active` → `reviewing` → `reviewed`, `/end` →
/// `completing` → `completed`; review mode ends at `ended`).
final class SimulatedSession {
    let id: String
    let userID: String
    let userName: String?
    let topicID: String?
    let mode: String
    let createdAt: String
    /// When the upstream connection is up (before it, `/chat` answers 503).
    /// When its upstream is up, on the simulator's clock.
    let connectedAt: UInt64

    var status = "active"
    var started = false
    /// The upstream connection never came up (`/start` answered 504): every live call is
    /// 404 from then on, while `GET /review` still reads `active` (traces 49–53).
    var dead = false
    /// A reply is being streamed: a turn sent now comes back empty.
    var replying = false
    /// The client hung up a reply: the server's upstream is still busy with it, so the next
    /// turn comes back empty.
    var hungUp = false
    var segments: [Segment] = []
    var reviewPolls = 0
    var completionPolls = 0
    var marksGenerated = false
    var summary: JSONValue = .null
    var replyCount = 0

    struct Segment {
        var id: Int
        var turnIndex: Int
        var userText: String
        var aiText: String
        var marks: [JSONValue] = []
        /// As the review shows them: without `segment_id` (trace 21).
        var corrections: [JSONValue] = []

        var json: JSONValue {
            ["id": .int(id), "turn_index": .int(turnIndex), "user_text": .string(userText), "ai_text": .string(aiText),
             "ai_marks": .array(marks), "corrections": .array(corrections)]
        }
    }

    init(id: String, userID: String, userName: String?, topicID: String?, mode: String, createdAt: String, connectedAt: UInt64) {
        self.id = id
        self.userID = userID
        self.userName = userName
        self.topicID = topicID
        self.mode = mode
        self.createdAt = createdAt
        self.connectedAt = connectedAt
    }

    var reviewJSON: JSONValue {
        if dead { return ["session_id": .string(id), "status": "active", "segments": [], "summary": .null] }
        return ["session_id": .string(id), "status": .string(status), "segments": .array(segments.map(\.json)), "summary": summary]
    }

    /// Whether corrections are accepted (the server's rule).
    var acceptsCorrections: Bool { ["reviewing", "reviewed", "completed"].contains(status) }
}

/// The review texts practice-sim hands out: marks for the learner's sentences, summaries,
/// corrections and profile weak points. Plain templates; the point is the shapes and the
/// lifecycle, not the linguistics.
enum ReviewContent {
    static let learnerPhrases = [
        "Yesterday I go to the market and buy some apples.",
        "I am working in an office since three years.",
        "My friend she likes very much to cook.",
        "I want go to Japan next summer.",
        "Café au lait is my favourite drink.",
    ]

    static let markTemplates: [(issue: String, suggestion: String, explanation: String)] = [
        ("grammar", "Yesterday I went to the market and bought some apples.", "Use the past tense for finished actions."),
        ("grammar", "I have been working in an office for three years.", "Use the present perfect continuous with 'for'."),
        ("sentence_structure", "My friend really likes to cook.", "Do not repeat the subject with a pronoun."),
        ("naturalness", "I want to go to Japan next summer.", "'Want' takes 'to' before another verb."),
        ("naturalness", "I really like café au lait.", "This sounds more natural in conversation."),
    ]

    static func mark(id: Int, for text: String, random: inout SeededRandom) -> JSONValue {
        let template = markTemplates[Int(random.next() % UInt64(markTemplates.count))]
        return ["id": .int(id), "issue_types": [.string(template.issue)], "original": .string(text),
                "suggestion": .string(template.suggestion), "explanation": .string(template.explanation)]
    }

    static let summary: JSONValue = [
        "strengths": ["You kept the conversation going.", "Good range of everyday vocabulary."],
        "weaknesses": ["grammar": "Past tense of irregular verbs.", "naturalness": .null,
                       "sentence_structure": "Repeating the subject with a pronoun."],
        "overall": "A good talk. Practise the past tense and keep going!",
    ]

    /// The real server's six topics (trace 01).
    static let topics: [JSONValue] = [
        ["id": "daily_life", "label_en": "Daily Life", "label_zh": "日常生活", "prompt_hint": "Everyday routines, hobbies, weekend plans, food, weather"],
        ["id": "travel", "label_en": "Travel", "label_zh": "旅遊", "prompt_hint": "Travel experiences, planning trips, airports, hotels, sightseeing"],
        ["id": "workplace", "label_en": "Workplace", "label_zh": "職場", "prompt_hint": "Office conversations, meetings, emails, colleagues, career"],
        ["id": "food_dining", "label_en": "Food & Dining", "label_zh": "美食", "prompt_hint": "Ordering at restaurants, cooking, recipes, food culture"],
        ["id": "entertainment", "label_en": "Entertainment", "label_zh": "娛樂", "prompt_hint": "Movies, music, TV shows, games, social media"],
        ["id": "current_events", "label_en": "Current Events", "label_zh": "時事", "prompt_hint": "News, trends, technology, social topics"],
    ]

    static var topicIDs: [String] { topics.compactMap { $0["id"]?.stringValue } }
}
