import PracticeKit
import PracticeNet

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

    /// The real server's shape (traces 29–33): a new profile has empty lists, an empty
    /// `progress_notes` and all three weak-point dimensions; reviewed talk fills them.
    var json: JSONValue {
        let points: [(String, JSONValue)] = ["grammar", "naturalness", "sentence_structure"].map { dimension in
            let patterns = weakPoints.first { $0.dimension == dimension }?.patterns ?? []
            return (dimension, .array(patterns.map { pattern in
                ["pattern": .string(pattern.pattern),
                 "examples": .array(pattern.examples.map { ["wrong": .string($0.wrong), "correct": .string($0.correct)] })]
            }))
        }
        let reviewed = !weakPoints.isEmpty
        let examples = weakPoints.flatMap { $0.patterns.flatMap(\.examples) }
        let data: JSONValue = [
            "personal_facts": reviewed ? ["Lives in the city", "Works in an office"] : [],
            "weak_points": .object(points),
            "common_errors": .array(weakPoints.flatMap { $0.patterns.map { .string($0.pattern) } }),
            "progress_notes": reviewed ? "Speaks with growing confidence." : "",
            "quick_review": .array(examples.prefix(4).map { ["chinese": "（對話中的句子）", "english": .string($0.correct)] }),
        ]
        return ["user_id": .string(userID), "user_name": .optional(userName), "level": .optional(level),
                "learning_goal": .optional(learningGoal), "profile_data": data, "updated_at": .string(updatedAt),
                "needs_review": .bool(needsReview)]
    }
}
