/// Chatterbox's evaluation of a cue answer, as its gateway sends it (`result` of a recording's
/// evaluation) and as `cue.result` carries it to clients.
public struct ChatterboxEvaluation: Codable, Sendable, Equatable {
    public struct GrammarMistake: Codable, Sendable, Equatable {
        public var original: String
        public var correction: String
        public var explanation: String

        public init(original: String, correction: String, explanation: String) {
            self.original = original
            self.correction = correction
            self.explanation = explanation
        }
    }

    public struct UnnaturalPhrase: Codable, Sendable, Equatable {
        public var phrase: String
        public var naturalReplacement: String
        public var explanation: String

        public init(phrase: String, naturalReplacement: String, explanation: String) {
            self.phrase = phrase
            self.naturalReplacement = naturalReplacement
            self.explanation = explanation
        }
    }

    public struct UnnaturalWord: Codable, Sendable, Equatable {
        public var word: String
        public var betterWord: String
        public var explanation: String

        public init(word: String, betterWord: String, explanation: String) {
            self.word = word
            self.betterWord = betterWord
            self.explanation = explanation
        }
    }

    public var cefrLevel: String
    public var summary: String
    public var strengths: [String]
    public var improvementAreas: [String]
    public var recommendedNextSteps: [String]
    public var grammarMistakes: [GrammarMistake]
    public var unnaturalPhrases: [UnnaturalPhrase]
    public var unnaturalWords: [UnnaturalWord]
    public var improvedVersion: String

    public init(cefrLevel: String, summary: String, strengths: [String], improvementAreas: [String], recommendedNextSteps: [String], grammarMistakes: [GrammarMistake], unnaturalPhrases: [UnnaturalPhrase], unnaturalWords: [UnnaturalWord], improvedVersion: String) {
        self.cefrLevel = cefrLevel
        self.summary = summary
        self.strengths = strengths
        self.improvementAreas = improvementAreas
        self.recommendedNextSteps = recommendedNextSteps
        self.grammarMistakes = grammarMistakes
        self.unnaturalPhrases = unnaturalPhrases
        self.unnaturalWords = unnaturalWords
        self.improvedVersion = improvedVersion
    }
}
