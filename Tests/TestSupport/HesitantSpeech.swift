import Foundation

/// Read speech with a learner's hesitation put in: four readers of asterisk's prompts
/// (``HumanSpeech``), each phrase (speech between pauses of 140 ms or more) of 1.5 s or longer
/// from the first `phrases` of each prompt, in room tone at about −60 dBFS, at 24 kHz; the
/// hesitation (`pause` seconds of room tone) goes at the quietest 10 ms of the phrase's
/// middle third, where a speaker stops to find a word. One second of room tone before the
/// phrase, four after (room for a 3 s pause ceiling); with `snr`, pink noise at that many dB below the phrase throughout.
/// With `babbleBelow`, five-voice babble that many dB below the phrase starts after that
/// second and runs to the end: the phrase comes 4 s into it, and 10 s more of it follow.
public enum HesitantSpeech {
    public struct Stimulus: Sendable {
        public let samples: [Int16]
        public let cut: Double  // where the hesitation starts, in seconds
        public let pause: Double
        public let end: Double  // the phrase's last sample
        public let reader: String
        public var start = 1.0  // the phrase's first sample
    }

    public static func phrases(_ x: [Float]) -> [(Int, Int)] {
        let block = 240
        let levels = stride(from: 0, to: x.count - block, by: block).map { i in
            (x[i..<i + block].reduce(0) { $0 + $1 * $1 } / Float(block)).squareRoot()
        }
        let sorted = levels.sorted()
        let quiet = sorted[sorted.count * 9 / 10] / 30
        var phrases: [(Int, Int)] = [], start: Int?, last = 0, run = 0
        for (i, level) in levels.enumerated() {
            if level >= quiet {
                if start == nil { start = i }
                run = 0
                last = i
            } else {
                run += 1
                if let s = start, run >= 14 { phrases.append((s * block, (last + 1) * block)); start = nil }
            }
        }
        return phrases.filter { $0.1 - $0.0 > 36_000 }
    }

    public static func stimuli(pauses: [Double], readers: [String] = HumanSpeech.readers, prompts: [String] = ["demo-congrats"],
                                phrases count: Int = 2, snr: Float? = nil, babbleBelow: Float? = nil) throws -> [Stimulus] {
        var generator = HumanSpeech.SplitMix(1)
        let lead = babbleBelow == nil ? 0 : 4 * 24_000, tail = babbleBelow == nil ? 0 : 10 * 24_000
        let room = try babbleBelow.map { _ in try babble(count: 60 * 24_000) }
        func tone(_ n: Int) -> [Float] { (0..<n).map { _ in generator.nextSigned() * 50 / 32_768 } }
        var out: [Stimulus] = []
        for reader in readers {
            for prompt in prompts {
            let x = try HumanSpeech.prompt(reader, prompt, sampleRate: 24_000)
            for (s, t) in phrases(x).prefix(count) {
                let phrase = Array(x[s..<t])
                let blocks = phrase.count / 240
                let middle = (blocks / 3)..<(2 * blocks / 3)
                let quietest = middle.min { a, b in
                    phrase[a * 240..<(a + 1) * 240].reduce(0) { $0 + $1 * $1 } < phrase[b * 240..<(b + 1) * 240].reduce(0) { $0 + $1 * $1 }
                }!
                let cut = quietest * 240
                for pause in pauses {
                    var audio = tone(24_000 + lead) + phrase[..<cut] + tone(Int(pause * 24_000)) + phrase[cut...] + tone(96_000 + tail)
                    if let below = babbleBelow, let room {
                        let gain = HumanSpeech.rms(phrase) / powf(10, below / 20) / HumanSpeech.rms(room)
                        for i in 24_000..<audio.count { audio[i] += room[(i - 24_000) % room.count] * gain }
                    }
                    if let snr {
                        let noise = HumanSpeech.pinkNoise(count: audio.count, rms: HumanSpeech.rms(phrase) / powf(10, snr / 20), seed: UInt64(s + 1))
                        for i in audio.indices { audio[i] += noise[i] }
                    }
                    let start = 1 + Double(lead) / 24_000
                    out.append(Stimulus(samples: audio.map { Int16(max(-32_768, min(32_767, $0 * 32_768))) },
                                        cut: start + Double(cut) / 24_000, pause: pause, end: start + Double(phrase.count) / 24_000 + pause,
                                        reader: reader, start: start))
                }
            }
            }
        }
        return out
    }
}

extension HesitantSpeech {
    /// Non-speech a kiosk hears, each starting after 2 s of quiet and lasting `seconds`: pink
    /// noise at −40 and −30 dBFS, the same noise looped every 0.5 s, music-like chords, keyboard
    /// clicks, and five-voice babble (four readers and the pyannote conversation mixed) at
    /// −35 dBFS. 24 kHz PCM16.
    public static func nonSpeech(seconds: Int) throws -> [(name: String, samples: [Int16])] {
        let rate = 24_000, n = seconds * rate
        func dBFS(_ d: Float) -> Float { powf(10, d / 20) }
        var looped = HumanSpeech.pinkNoise(count: rate / 2, rms: dBFS(-30), seed: 11)
        while looped.count < n { looped += looped.prefix(min(rate / 2, n - looped.count)) }
        let babble = try babble(count: n)
        let sounds: [(String, [Float])] = [
            ("pink noise -40 dBFS", HumanSpeech.pinkNoise(count: n, rms: dBFS(-40), seed: 21)),
            ("pink noise -30 dBFS", HumanSpeech.pinkNoise(count: n, rms: dBFS(-30), seed: 22)),
            ("looped noise -30 dBFS", Array(looped.prefix(n))),
            ("chords -30 dBFS", HumanSpeech.chords(count: n, rms: dBFS(-30), sampleRate: rate)),
            ("keyboard clicks", HumanSpeech.keyboardClicks(count: n, peak: 0.3, sampleRate: rate)),
            ("babble -35 dBFS", HumanSpeech.scaled(babble, toRMS: dBFS(-35))),
        ]
        var generator = HumanSpeech.SplitMix(5)
        return sounds.map { name, sound in
            let quiet = (0..<(2 * rate)).map { _ in generator.nextSigned() * 50 / 32_768 }
            return (name, (quiet + sound).map { Int16(max(-32_768, min(32_767, $0 * 32_768))) })
        }
    }

    /// Five voices at once (the four readers' instructions and the pyannote conversation, each
    /// from another point), as a hall of kiosks sounds: 24 kHz, unscaled.
    public static func babble(count n: Int) throws -> [Float] {
        let rate = 24_000
        var voices = try HumanSpeech.readers.map { try HumanSpeech.prompt($0, "demo-instruct", sampleRate: rate) }
        voices.append(try HumanSpeech.conversation(sampleRate: rate))
        var babble = [Float](repeating: 0, count: n)
        for (k, voice) in voices.enumerated() where !voice.isEmpty {
            for i in 0..<n { babble[i] += voice[(i + k * 7 * rate) % voice.count] }
        }
        return babble
    }
}
