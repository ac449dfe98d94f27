import Foundation
import PracticeKit

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
    let connectedAt: DispatchTime

    var status = "active"
    var started = false
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
    var nextCorrectionID = 1
    var replyCount = 0

    struct Segment {
        var id: Int
        var turnIndex: Int
        var userText: String
        var aiText: String
        var marks: [JSONValue] = []
        var corrections: [JSONValue] = []

        var json: JSONValue {
            ["id": .int(id), "turn_index": .int(turnIndex), "user_text": .string(userText), "ai_text": .string(aiText),
             "ai_marks": .array(marks), "corrections": .array(corrections)]
        }
    }

    init(id: String, userID: String, userName: String?, topicID: String?, mode: String, createdAt: String, connectedAt: DispatchTime) {
        self.id = id
        self.userID = userID
        self.userName = userName
        self.topicID = topicID
        self.mode = mode
        self.createdAt = createdAt
        self.connectedAt = connectedAt
    }

    var reviewJSON: JSONValue {
        ["session_id": .string(id), "status": .string(status), "segments": .array(segments.map(\.json)), "summary": summary]
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

    static let topics: [JSONValue] = [
        ["id": "daily_life", "label_en": "Daily life", "label_zh": "日常生活", "prompt_hint": "Talk about your day"],
        ["id": "travel", "label_en": "Travel", "label_zh": "旅行", "prompt_hint": "A trip you enjoyed"],
        ["id": "workplace", "label_en": "Workplace", "label_zh": "职场", "prompt_hint": "Your job and colleagues"],
        ["id": "food_dining", "label_en": "Food and dining", "label_zh": "美食", "prompt_hint": "Your favourite dish"],
        ["id": "entertainment", "label_en": "Entertainment", "label_zh": "娱乐", "prompt_hint": "A film or a show"],
        ["id": "current_events", "label_en": "Current events", "label_zh": "时事", "prompt_hint": "Something in the news"],
    ]

    static var topicIDs: [String] { topics.compactMap { $0["id"]?.stringValue } }
}
