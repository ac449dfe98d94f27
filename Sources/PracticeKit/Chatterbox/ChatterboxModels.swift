import FoundationEssentials
import PracticeProtocol

// What the Chatterbox backend answers (`shared/chatterbox-traces/flows.md` §3), decoded with
// snake_case keys. Only what a kiosk uses is read; every other key is ignored, and keys a
// trace shows as null or absent are optional here.

public struct ChatterboxAppConfig: Decodable, Sendable, Equatable {
    public var availableLanguageCodes: [String]
    public var defaultProfileLanguageCode: String?
}

/// A token pair. Its description never shows the tokens.
public struct ChatterboxTokens: Codable, Sendable, Equatable, CustomStringConvertible {
    public var accessToken: String
    public var refreshToken: String

    public init(accessToken: String, refreshToken: String) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
    }

    public var description: String { "tokens(redacted)" }
}

public struct ChatterboxMe: Decodable, Sendable, Equatable {
    public struct Account: Decodable, Sendable, Equatable {
        public var accountId: Int
        public var email: String?
        public var phoneNumber: String?
    }

    public struct ActiveProfile: Decodable, Sendable, Equatable {
        public var accountId: Int?
        public var profileId: Int
        public var languageCode: String
    }

    public var account: Account
    public var activeProfile: ActiveProfile?
}

public struct ChatterboxProfileChoice: Decodable, Sendable, Equatable {
    public var accountId: Int
    public var profileId: Int
}

public struct ChatterboxCue: Decodable, Sendable, Equatable {
    public struct Content: Decodable, Sendable, Equatable {
        public var title: String
        /// Markdown, `""` in the seed.
        public var details: String?
        public var languageCode: String?
    }

    public var cueId: Int
    public var content: Content
    /// In `get_cue_for_profile` only: the learner's recordings of this cue.
    public var recordings: [ChatterboxRecording]?
}

public struct ChatterboxFile: Decodable, Sendable, Equatable {
    public struct Metadata: Decodable, Sendable, Equatable {
        /// Whole seconds, as a string.
        public var duration: String?
    }

    public var fileId: Int
    public var mimeType: String?
    public var metadata: Metadata?
}

public struct ChatterboxProcessedFile: Decodable, Sendable, Equatable {
    public var fileId: Int
    public var url: String
}

public struct ChatterboxReport: Decodable, Sendable, Equatable {
    public struct Evaluation: Decodable, Sendable, Equatable {
        public var status: String
        public var result: ChatterboxEvaluation?
    }

    /// `none`, `processing` or `ready` (the transcript); a failure is `processing` → `none`.
    public var status: String
    public var transcript: String?
    public var evaluation: Evaluation
}

public struct ChatterboxRecording: Decodable, Sendable, Equatable {
    public var profileCueRecordingId: Int
    public var cueId: Int
    public var fileId: Int
    public var createdAt: String?
    public var file: ChatterboxFile?
    /// In the history only (without its own recordings).
    public var cue: ChatterboxCue?
    public var report: ChatterboxReport
}

/// `get_profile_recording_history`: newest first; `processed_files` absent when empty.
public struct ChatterboxHistory: Decodable, Sendable, Equatable {
    public var recordings: [ChatterboxRecording]
    public var processedFiles: [ChatterboxProcessedFile]?

    /// The download URL of `fileID`, looked up by id (the order is unrelated, trace 50).
    public func url(of fileID: Int) -> String? { processedFiles?.first { $0.fileId == fileID }?.url }
}

/// `get_cue_for_profile`.
public struct ChatterboxCueDetail: Decodable, Sendable, Equatable {
    public var cue: ChatterboxCue
    public var processedFiles: [ChatterboxProcessedFile]?

    public func url(of fileID: Int) -> String? { processedFiles?.first { $0.fileId == fileID }?.url }
}

public struct ChatterboxUploadIntent: Decodable, Sendable, Equatable {
    public var uploadIntentId: Int
    /// Absent when the gateway could not reach the files service: a failure.
    public var uploadUrl: String?
}

public struct ChatterboxCompletedUpload: Decodable, Sendable, Equatable {
    public var success: Bool
    public var file: ChatterboxFile?
}

/// What `request_recording_transcription` / `_evaluation` answer: `started`, `in_progress`,
/// `already_transcribed` / `already_evaluated`, or `transcript_not_ready`.
public struct ChatterboxRequestStatus: Decodable, Sendable, Equatable {
    public var status: String
}

struct ChatterboxSuccess: Decodable {
    var success: Bool
}
