import AudioKernel
import Foundation

/// The phrases practice-sim speaks: espeak-ng speech kept as 24 kHz PCM16 WAVs in
/// `samples/sim` (made by `samples/scripts/make-sim-speech.sh`). Loaded once; replies are
/// cut from the raw PCM bytes.
public struct SpeechLibrary: Sendable {
    public struct Phrase: Sendable {
        public var name: String
        public var text: String
        /// Raw PCM16 little-endian, 24 kHz mono: exactly what the audio events carry.
        public var pcm: [UInt8]
    }

    public var greeting: Phrase
    public var replies: [Phrase]
    public var reviewReplies: [Phrase]
    /// What the real server speaks to a turn it heard nothing in (trace 05), after an
    /// empty transcript.
    public var didNotCatch: Phrase

    /// The words of each file, as the script speaks them: the `response` text of a reply.
    static let texts: [String: String] = [
        "greeting": "Hello! Nice to meet you. What would you like to talk about today?",
        "reply-1": "That sounds great. Can you tell me more about it?",
        "reply-2": "Interesting! How did that make you feel?",
        "reply-3": "I see. What would you do differently next time?",
        "reply-4": "Good point. Do you often do that on weekends?",
        "review-1": "Let's practice that again. Try saying it in the past tense.",
        "sorry": "Sorry, I didn't catch that. Could you say it again?",
    ]

    public init(greeting: Phrase, replies: [Phrase], reviewReplies: [Phrase], didNotCatch: Phrase) {
        self.greeting = greeting
        self.replies = replies
        self.reviewReplies = reviewReplies
        self.didNotCatch = didNotCatch
    }

    /// Loads the phrases from a directory; every file must be PCM16 24 kHz mono.
    public static func load(directory: String) throws -> SpeechLibrary {
        func phrase(_ name: String) throws -> Phrase {
            let path = (directory as NSString).appendingPathComponent("\(name).wav")
            let wav = try WAVDecoder.decode(contentsOfFile: path)
            guard wav.format == .speech else {
                throw SpeechLibraryError(message: "\(path): \(wav.format), expected \(WAVFormat.speech)")
            }
            let pcm = wav.samples.withUnsafeBytes { Array($0) }
            return Phrase(name: name, text: texts[name] ?? name, pcm: pcm)
        }
        return SpeechLibrary(
            greeting: try phrase("greeting"),
            replies: try (1...4).map { try phrase("reply-\($0)") },
            reviewReplies: [try phrase("review-1")],
            didNotCatch: try phrase("sorry")
        )
    }

    /// Finds `samples/sim` from the working directory or the executable's location
    /// (`.build/debug/practice-sim` lives three levels below the package root).
    public static func defaultDirectory(executablePath: String = CommandLine.arguments[0]) -> String? {
        var candidates = [FileManager.default.currentDirectoryPath]
        var url = URL(fileURLWithPath: executablePath).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(url.path)
            url = url.deletingLastPathComponent()
        }
        for base in candidates {
            let path = (base as NSString).appendingPathComponent("samples/sim")
            if FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent("greeting.wav")) { return path }
        }
        return nil
    }
}

public struct SpeechLibraryError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
