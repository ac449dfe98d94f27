import Foundation
import TestSupport

/// What the conformance tests feed both implementations: recorded human voices (four readers
/// of asterisk's prompts, the pyannote conversation) with hesitation pauses inserted between
/// and inside their phrases, the same at 10 dB SNR in pink noise, and non-speech (pink noise,
/// chords, keyboard clicks, silence). 16 kHz float.
enum ConformanceCorpus {
    static let rate = 16_000

    /// One stream of about 100 s.
    static func stream() throws -> [Float] {
        var audio: [Float] = []
        func silence(_ seconds: Double) -> [Float] { [Float](repeating: 0, count: Int(seconds * Double(rate))) }
        let pauses = [0.5, 0.8, 1.2, 2.0]
        for (index, reader) in HumanSpeech.readers.enumerated() {
            let prompt = try HumanSpeech.prompt(reader, index % 2 == 0 ? "demo-congrats" : "demo-instruct")
            // Cut the prompt in three and hold a pause at each cut, as a hesitating speaker.
            let third = prompt.count / 3
            audio += prompt[0..<third] + silence(pauses[index]) + prompt[third..<2 * third] + silence(pauses[3 - index])
                + prompt[(2 * third)...] + silence(1)
        }
        audio += try HumanSpeech.conversation().prefix(12 * rate)
        let speech = try HumanSpeech.prompt("it_IT_m_Carlo", "demo-congrats")
        let noise = HumanSpeech.pinkNoise(count: speech.count + 2 * rate, rms: HumanSpeech.rms(speech) / 3.162)
        audio += zip(silence(1) + speech + silence(1), noise).map { $0 + $1 }
        audio += HumanSpeech.pinkNoise(count: 3 * rate, rms: 0.03, seed: 7)
        audio += HumanSpeech.chords(count: 3 * rate, rms: 0.03)
        audio += HumanSpeech.keyboardClicks(count: 3 * rate, peak: 0.3)
        audio += silence(2)
        return audio
    }

    /// `count` windows of 8 s ending at points evenly spread over the stream (the first ones
    /// padded with zeros at the front, as pipecat pads a short turn).
    static func windows(_ stream: [Float], count: Int) -> [Float] {
        let length = 8 * rate
        var out: [Float] = []
        out.reserveCapacity(count * length)
        for i in 0..<count {
            let end = rate + (stream.count - rate) * (i + 1) / count
            let start = max(0, end - length)
            out += [Float](repeating: 0, count: length - (end - start)) + stream[start..<end]
        }
        return out
    }
}
