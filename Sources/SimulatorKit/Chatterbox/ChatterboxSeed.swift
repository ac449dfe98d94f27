import PracticeKit
import PracticeNet

/// What the Chatterbox simulator serves besides what a learner makes: the cue cards and the
/// provider's canned transcript and evaluation, taken from the recorded traces
/// (`shared/chatterbox-traces`: files 12, 14, 26, 31), whose fakes answered the same way.
enum ChatterboxSeed {
    /// cue_id → title, as the seed publishes them (details are "" throughout).
    static let cues: [(id: Int, title: String)] = [
        (10, "Weight loss advice in magazines: do you find it helpful or not?"),
        (196, "Do you think remote work really helps create a better work–life balance?"),
        (247, "The internet has a positive impact on children’s education. What do you think?"),
        (257, "Are educational outings (museums, zoos, galleries) beneficial for children? Why?"),
        (263, "Is learning a foreign language a difficult challenge? Share your opinion."),
        (268, "Do you think video games can play a positive role in children’s development? Argue your answer, considering educational and social aspects."),
        (281, "Do you think it’s acceptable not to want to have children?"),
        (364, "Is it important to learn how to use new technologies (internet, social media, etc.) from childhood? Why?"),
        (433, "To be healthy, should we stop eating meat? Share your opinion."),
        (552, "In your opinion, why are people so interested in celebrities?"),
        (601, "Describe a place in your town that you would show a visitor, and say why."),
        (612, "What is a skill you would like to learn this year, and how will you practise it?"),
    ]

    static let transcript = "Yesterday I go to the park with my friend and we plays football for two hours. "
        + "It was very funny and I think sport is important for everybody."

    static func evaluation(createdAt: String, padding: Int) -> JSONValue {
        var summary = "The learner tells a short personal story and gives an opinion; meaning is clear, with some verb-tense and agreement errors."
        if padding > 0 { summary += String(repeating: " More.", count: padding / 6 + 1) }
        return .object([
            ("cefr_level", "B1"),
            ("created_at", .string(createdAt)),
            ("grammar_mistakes", .array([
                .object([("correction", "I went to"), ("explanation", "Use the past simple for a finished action in the past (\"yesterday\")."),
                         ("original", "I go to")]),
                .object([("correction", "we played"), ("explanation", "The verb after \"we\" takes no -s, and the story is in the past."),
                         ("original", "we plays")]),
            ])),
            ("improved_version", "Yesterday I went to the park with my friend and we played football for two hours. It was a lot of fun and I think sport is important for everybody."),
            ("improvement_areas", ["Use the past simple for finished past actions", "Check subject-verb agreement"]),
            ("recommended_next_steps", ["Retell the same story using only past-tense verbs", "Practise 'we/they + base verb' in the present simple"]),
            ("strengths", ["Clear sequence of events", "Gives a personal opinion", "Good basic vocabulary"]),
            ("summary", .string(summary)),
            ("unnatural_phrases", .array([
                .object([("explanation", "\"Funny\" means it made you laugh; for an enjoyable time say \"fun\"."), ("natural_replacement", "It was a lot of fun"),
                         ("phrase", "It was very funny")]),
            ])),
            ("unnatural_words", .array([
                .object([("better_word", "everyone"), ("explanation", "Both are correct; \"everyone\" sounds a little more natural in an opinion."),
                         ("word", "everybody")]),
            ])),
        ])
    }
}
