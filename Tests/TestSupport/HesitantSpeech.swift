import Foundation

/// Read speech with a learner's hesitation put in: each phrase (speech between pauses of
/// 140 ms or more) of 1.5 to 8 s from the first `phrases` of each recording, in room tone
/// at about −60 dBFS, at 24 kHz; the hesitation goes at the quietest 10 ms of the phrase's
/// middle third, where a speaker stops to find a word: `pause` seconds of room tone, or (as
/// learners hesitate, ``Hesitation``) a filler "uh" in the speaker's own voice inside it, or a
/// restart that says the words before it again. The tuning set is four readers of asterisk's
/// prompts (``HumanSpeech``); ``HeldOutSpeech`` is the one no parameter was chosen on.
/// One second of room tone before the phrase, four after (room for a 3 s pause ceiling); with
/// `snr`, pink noise at that many dB below the phrase throughout. With `babbleBelow`,
/// five-voice babble that many dB below the phrase starts after that second and runs to the
/// end: the phrase comes 4 s into it, and 10 s more of it follow.
public enum HesitantSpeech {
    /// How the learner hesitates mid-phrase.
    public enum Hesitation: String, Sendable, CaseIterable {
        /// Silence: the pause alone.
        case pause
        /// "uh": 40 % of the pause, a 400 ms filler vowel, the rest of the pause.
        case filler
        /// The pause, then the last 500 ms before it said again ("to go… to go to Japan").
        case restart
    }

    public struct Stimulus: Sendable {
        public let samples: [Int16]
        public let cut: Double  // where the hesitation starts, in seconds
        public let pause: Double
        public let end: Double  // the phrase's last sample
        public let reader: String
        public var start = 1.0  // the phrase's first sample
        public var hesitation = Hesitation.pause
        /// Where the learner's words go on after the hesitation (the filler is not words):
        /// a turn that ends before it cut the learner off.
        public var resume: Double { hesitation == .restart ? cut + pause : cut + pause + (hesitation == .filler ? HesitantSpeech.fillerSeconds : 0) }
    }

    static let fillerSeconds = 0.4

    public static func phrases(_ x: [Float]) -> [(Int, Int)] {
        let block = 240
        let levels = stride(from: 0, to: x.count - block, by: block).map { i in
            (x[i..<i + block].reduce(0) { $0 + $1 * $1 } / Float(block)).squareRoot()
        }
        let sorted = levels.sorted()
        // Quiet: 30 times under the loud tenth, and 8 dB over the recording's own floor (an
        // old recording's hiss is louder than a studio's silence).
        let quiet = max(sorted[sorted.count * 9 / 10] / 30, sorted[sorted.count / 10] * 2.5)
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
        if let s = start { phrases.append((s * block, (last + 1) * block)) }
        // 1.5 to 8 s: an answer's phrase, not a monologue's run-on.
        return phrases.filter { $0.1 - $0.0 > 36_000 && $0.1 - $0.0 <= 192_000 }
    }

    /// The tuning set's stimuli: asterisk's prompts `prompts` of `readers`.
    public static func stimuli(pauses: [Double], readers: [String] = HumanSpeech.readers, prompts: [String] = ["demo-congrats"],
                               phrases count: Int = 2, snr: Float? = nil, babbleBelow: Float? = nil,
                               hesitations: [Hesitation] = [.pause]) throws -> [Stimulus] {
        var recordings: [(speaker: String, samples: [Float])] = []
        for reader in readers {
            for prompt in prompts { recordings.append((reader, try HumanSpeech.prompt(reader, prompt, sampleRate: 24_000))) }
        }
        return try stimuli(recordings, pauses: pauses, phrases: count, snr: snr, babbleBelow: babbleBelow, hesitations: hesitations, level: nil)
    }

    /// Stimuli of any recordings at 24 kHz (``HeldOutSpeech/speech(sampleRate:)``), each
    /// phrase's RMS set to `level` dBFS when given (the tuning set's phrases are about −24:
    /// the codec2 recordings come far quieter and louder).
    public static func stimuli(_ recordings: [(speaker: String, samples: [Float])], pauses: [Double], phrases count: Int = 2,
                               snr: Float? = nil, babbleBelow: Float? = nil, hesitations: [Hesitation] = [.pause],
                               level: Float? = -24) throws -> [Stimulus] {
        var generator = HumanSpeech.SplitMix(1)
        let lead = babbleBelow == nil ? 0 : 4 * 24_000, tail = babbleBelow == nil ? 0 : 10 * 24_000
        let room = try babbleBelow.map { _ in try babble(count: 60 * 24_000) }
        func tone(_ n: Int) -> [Float] { (0..<n).map { _ in generator.nextSigned() * 50 / 32_768 } }
        var out: [Stimulus] = []
        for (reader, x) in recordings {
            for (s, t) in phrases(x).prefix(count) {
                let phrase = level.map { HumanSpeech.scaled(Array(x[s..<t]), toRMS: powf(10, $0 / 20)) } ?? Array(x[s..<t])
                let blocks = phrase.count / 240
                let middle = (blocks / 3)..<(2 * blocks / 3)
                let quietest = middle.min { a, b in
                    phrase[a * 240..<(a + 1) * 240].reduce(0) { $0 + $1 * $1 } < phrase[b * 240..<(b + 1) * 240].reduce(0) { $0 + $1 * $1 }
                }!
                let cut = quietest * 240
                for pause in pauses {
                    for hesitation in pause == 0 ? [.pause] : hesitations {
                        let n = Int(pause * 24_000)
                        var inserted: [Float]
                        switch hesitation {
                        case .pause: inserted = tone(n)
                        case .filler: inserted = tone(n * 2 / 5) + filler(phrase) + tone(n - n * 2 / 5)
                        case .restart: inserted = tone(n) + phrase[max(0, cut - 12_000)..<cut]
                        }
                        var audio = tone(24_000 + lead) + phrase[..<cut] + inserted + phrase[cut...] + tone(96_000 + tail)
                        if let below = babbleBelow, let room {
                            let gain = HumanSpeech.rms(phrase) / powf(10, below / 20) / HumanSpeech.rms(room)
                            for i in 24_000..<audio.count { audio[i] += room[(i - 24_000) % room.count] * gain }
                        }
                        if let snr {
                            let noise = HumanSpeech.pinkNoise(count: audio.count, rms: HumanSpeech.rms(phrase) / powf(10, snr / 20), seed: UInt64(s + 1))
                            for i in audio.indices { audio[i] += noise[i] }
                        }
                        let start = 1 + Double(lead) / 24_000
                        var stimulus = Stimulus(samples: audio.map { Int16(max(-32_768, min(32_767, $0 * 32_768))) },
                                                cut: start + Double(cut) / 24_000, pause: pause,
                                                end: start + Double(phrase.count + inserted.count) / 24_000, reader: reader, start: start)
                        stimulus.hesitation = hesitation
                        out.append(stimulus)
                    }
                }
            }
        }
        return out
    }

    /// A filler "uh" in the speaker's own voice: one pitch period of the phrase's most
    /// periodic 30 ms (a vowel), repeated for ``fillerSeconds`` with a 40 ms rise and a
    /// 150 ms fall, 3 dB under that vowel.
    static func filler(_ phrase: [Float]) -> [Float] {
        let block = 720, shortest = 24_000 / 400, longest = 24_000 / 70
        var best = (score: Float(0), start: 0, period: 120)
        let energies = stride(from: 0, to: phrase.count - block - longest, by: block / 2).map { i in
            (i, phrase[i..<i + block].reduce(0) { $0 + $1 * $1 })
        }
        let loud = energies.map(\.1).sorted()[energies.count / 2]
        for (i, energy) in energies where energy >= loud {
            for lag in shortest...longest {
                var c: Float = 0, e: Float = 0
                for k in 0..<block { c += phrase[i + k] * phrase[i + k + lag]; e += phrase[i + k + lag] * phrase[i + k + lag] }
                let score = c / max((energy * e).squareRoot(), 1e-12)
                if score > best.score { best = (score, i, lag) }
            }
        }
        let cycle = Array(phrase[best.start..<best.start + best.period])
        let n = Int(fillerSeconds * 24_000), rise = 960, fall = 3_600
        return (0..<n).map { i in
            let envelope = i < rise ? 0.5 - 0.5 * cosf(.pi * Float(i) / Float(rise))
                : i >= n - fall ? 0.5 + 0.5 * cosf(.pi * Float(i - (n - fall)) / Float(fall)) : 1
            return cycle[i % cycle.count] * envelope * 0.708
        }
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
