/// What a reply stream that ran to its end amounts to for the learner.
///
/// A stream's 200 says nothing about the turn: the real server sends its headers within a
/// few milliseconds, before its upstream model has done anything, and then may send no
/// audio, no transcript or an empty one (`shared/talkco-traces`, files 05, 06, 10, 12, 13,
/// 15, 16). Each of those is its own outcome, so that a UI can say "I didn't catch that,
/// please say it again" instead of showing a normal reply. Which outcome a stream amounts to
/// is the reply's summary's to say (`PracticeKit/Backend/ReplyOutcome+Summary.swift`).
public enum ReplyOutcome: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Audio and a transcript (or a typed turn's text) came: a normal reply.
    case answered
    /// The server sent the transcript but no audio (`transcript timing done`): a turn sent
    /// while upstream was still busy with another reply (overlap, files 09–10; right after
    /// a hang-up, files 11–12), or an upstream function call that swallowed the spoken
    /// answer (file 13). Nothing was saved; the learner should say it again.
    case noAudio = "no_audio"
    /// Audio and a reply came, but no transcript (file 15): the tutor answered, yet the
    /// server did not hear the words, and the turn is not saved for the review.
    case noTranscript = "no_transcript"
    /// The transcript is empty (file 05): the model heard nothing. The iOS client stops the
    /// sound at once; nothing is saved.
    case emptyTranscript = "empty_transcript"
    /// Neither transcript nor audio (`timing done` only, file 06): under 100 ms of audio,
    /// refused by the model before transcription.
    case tooShort = "too_short"

    public var description: String { rawValue }

    /// What the UI may tell the learner.
    public var hint: String {
        switch self {
        case .answered: return "a normal reply"
        case .noAudio: return "the tutor gave no answer (the backend was still busy, or its model went silent); ask the learner to say it again"
        case .noTranscript: return "the tutor answered, but the backend did not hear the words: this turn is not saved for the review"
        case .emptyTranscript: return "the backend heard nothing; ask the learner to say it again"
        case .tooShort: return "the turn was too short to hear; ask the learner to say it again"
        }
    }
}
