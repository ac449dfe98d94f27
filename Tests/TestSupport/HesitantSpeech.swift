import Foundation

/// Read speech with a learner's hesitation put in: four readers of asterisk's prompts
/// (``HumanSpeech``), each phrase (speech between pauses of 140 ms or more) of 1.5 s or longer
/// from the first two of `demo-congrats`, in room tone at about −60 dBFS, at 24 kHz; the
/// hesitation (`pause` seconds of room tone) goes at the quietest 10 ms of the phrase's
/// middle third, where a speaker stops to find a word. One second of room tone before the
/// phrase, three after.
public enum HesitantSpeech {
    public struct Stimulus: Sendable {
        public let samples: [Int16]
        public let cut: Double  // where the hesitation starts, in seconds
        public let pause: Double
        public let end: Double  // the phrase's last sample
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

    public static func stimuli(pauses: [Double], readers: [String] = HumanSpeech.readers) throws -> [Stimulus] {
        var generator = HumanSpeech.SplitMix(1)
        func tone(_ n: Int) -> [Float] { (0..<n).map { _ in generator.nextSigned() * 50 / 32_768 } }
        var out: [Stimulus] = []
        for reader in readers {
            let x = try HumanSpeech.prompt(reader, "demo-congrats", sampleRate: 24_000)
            for (s, t) in phrases(x).prefix(2) {
                let phrase = Array(x[s..<t])
                let blocks = phrase.count / 240
                let middle = (blocks / 3)..<(2 * blocks / 3)
                let quietest = middle.min { a, b in
                    phrase[a * 240..<(a + 1) * 240].reduce(0) { $0 + $1 * $1 } < phrase[b * 240..<(b + 1) * 240].reduce(0) { $0 + $1 * $1 }
                }!
                let cut = quietest * 240
                for pause in pauses {
                    let audio = tone(24_000) + phrase[..<cut] + tone(Int(pause * 24_000)) + phrase[cut...] + tone(72_000)
                    out.append(Stimulus(samples: audio.map { Int16(max(-32_768, min(32_767, $0 * 32_768))) },
                                        cut: 1 + Double(cut) / 24_000, pause: pause, end: 1 + Double(phrase.count) / 24_000 + pause))
                }
            }
        }
        return out
    }
}
