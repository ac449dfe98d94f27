import PracticeKit

/// A learner's profile on practice-sim: level, goal, and the weak points that review marks
/// add (`needs_review` once a pattern has 3 or more examples).
struct SimulatedProfile {
    let userID: String
    var userName: String?
    var level: String?
    var learningGoal: String?
    var updatedAt = Timestamp.now()
    /// dimension → patterns, each with its examples, in the order they were found.
    private var weakPoints: [(dimension: String, patterns: [(pattern: String, examples: [(wrong: String, correct: String)])])] = []

    init(userID: String) { self.userID = userID }

    mutating func touch() { updatedAt = Timestamp.now() }

    /// Files a review mark under its first issue type, keyed by its explanation.
    mutating func addWeakPoint(from mark: JSONValue) {
        guard case .array(let types)? = mark["issue_types"], let dimension = types.first?.stringValue,
              let pattern = mark["explanation"]?.stringValue, let wrong = mark["original"]?.stringValue,
              let correct = mark["suggestion"]?.stringValue else { return }
        if weakPoints.firstIndex(where: { $0.dimension == dimension }) == nil { weakPoints.append((dimension, [])) }
        let d = weakPoints.firstIndex { $0.dimension == dimension }!
        if let p = weakPoints[d].patterns.firstIndex(where: { $0.pattern == pattern }) {
            weakPoints[d].patterns[p].examples.append((wrong, correct))
        } else {
            weakPoints[d].patterns.append((pattern, [(wrong, correct)]))
        }
        touch()
    }

    var needsReview: Bool { weakPoints.contains { $0.patterns.contains { $0.examples.count >= 3 } } }

    var json: JSONValue {
        var points: [(String, JSONValue)] = weakPoints.map { entry in
            (entry.dimension, .array(entry.patterns.map { pattern in
                ["pattern": .string(pattern.pattern),
                 "examples": .array(pattern.examples.map { ["wrong": .string($0.wrong), "correct": .string($0.correct)] })]
            }))
        }
        // Old servers kept weak points as plain strings; the profile still carries one, so
        // that clients meet the legacy shape and skip it.
        if let index = points.firstIndex(where: { $0.0 == "naturalness" }), case .array(var items) = points[index].1 {
            items.insert("uses very formal phrasing", at: 0)
            points[index].1 = .array(items)
        } else {
            points.append(("naturalness", ["uses very formal phrasing"]))
        }
        let data: JSONValue = [
            "personal_facts": ["Lives in the city", "Works in an office"],
            "weak_points": .object(points),
            "common_errors": ["past tense of irregular verbs"],
            "progress_notes": "Speaks with growing confidence.",
            "quick_review": [["chinese": "我昨天去了市场。", "english": "I went to the market yesterday."]],
        ]
        return ["user_id": .string(userID), "user_name": .optional(userName), "level": .optional(level),
                "learning_goal": .optional(learningGoal), "profile_data": data, "updated_at": .string(updatedAt),
                "needs_review": .bool(needsReview)]
    }
}
