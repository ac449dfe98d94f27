import PracticeProtocol

/// Which outcome a finished reply stream amounts to, by what came in it.
extension ReplyOutcome {
    /// Which endpoint the reply answers: the rules differ (a greeting has no transcript; a
    /// typed turn's transcript is the server's own echo).
    public enum Request: Sendable {
        case greeting, audioTurn, textTurn
    }

    public init(_ summary: ReplySummary, for request: Request) {
        switch request {
        case .greeting:
            // A second /start (file 16) waits 30 s, then `timing done`: no greeting comes.
            self = summary.hasAudio ? .answered : .noAudio
        case .audioTurn, .textTurn:
            if summary.transcript == "" {
                self = .emptyTranscript
            } else if !summary.hasAudio {
                self = summary.transcript == nil && request == .audioTurn ? .tooShort : .noAudio
            } else if summary.transcript == nil {
                self = .noTranscript
            } else {
                self = .answered
            }
        }
    }


    /// Whether the backend keeps the turn as a review segment: only a non-empty transcript
    /// with a reply text is saved (traces 04–15: four of eleven turns).
    public static func isSaved(_ summary: ReplySummary) -> Bool {
        guard let transcript = summary.transcript, !transcript.isEmpty else { return false }
        return summary.responseText != nil
    }
}
