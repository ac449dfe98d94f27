import AudioKernel
import Foundation
import SimulatorKit

/// practice-sim speaking with a recorded human voice instead of espeak-ng: Allison's prompts
/// (Debian's asterisk-core-sounds-en-g722, a woman, US English) in the files practice-sim
/// loads (`--samples`), at the level of its own voices (speech at −20 dBFS), their quiet ends
/// cut to 100 ms. The words are an IVR's, not a tutor's: what the tests hear is a person's
/// voice, its pitch, pauses and loudness, over which a learner (``learners``) speaks.
public enum HumanTutor {
    /// Which prompt stands for which of practice-sim's phrases (4.3–5.7 s each).
    static let prompts = [
        "greeting": "demo-thanks", "reply-1": "agent-alreadyon", "reply-2": "agent-incorrect", "reply-3": "vm-intro",
        "reply-4": "queue-youarenext", "review-1": "vm-saveoper", "sorry": "pbx-invalid",
    ]

    /// The phrases, written once to a directory of their own and loaded as practice-sim
    /// loads its samples.
    public static let library: SpeechLibrary = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("human-tutor-\(getpid())")
        try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (phrase, prompt) in prompts {
            let samples = try! HumanSpeech.voice("en_US_f_Allison", prompt, trimmed: true)
            try! SimulatorHarness.wav(samples: samples).write(to: directory.appendingPathComponent("\(phrase).wav"))
        }
        return try! SpeechLibrary.load(directory: directory.path)
    }()

    /// Learners who speak up over the tutor: Carlo (a man, Italian) and June (a woman,
    /// Canadian French), one prompt each of about 3 s, at the tutor's level.
    public static let learners: [[Int16]] = [
        try! HumanSpeech.voice("it_IT_m_Carlo", "vm-tempremoved", trimmed: true),
        try! HumanSpeech.voice("fr_CA_f_June", "vm-tempremoved", trimmed: true),
    ]
}
