import Foundation
import SimulatorKit

/// Recorded human speech from packages, for the tests of anything that listens: Debian's
/// asterisk-core-sounds-{en,fr,it,ru}-g722 (G.722 at 16 kHz: Allison, a woman, in US English;
/// June, a woman, in Canadian French; Carlo, a man, in Italian; a Russian woman's IVR voice)
/// and PyPI's pyannote.audio 4.0.7 sample (16 kHz, a conversation of two speakers), which
/// .ci/setup installs; and the non-speech a kiosk hears: pink noise, chords, keyboard clicks.
/// Decoded by ffmpeg (a tool the project did not write) to float at 16 kHz mono.
public enum HumanSpeech {
    public static let asteriskSounds = "/usr/share/asterisk/sounds"
    public static let pyannoteSample = "/opt/practiced-ci/voices/pyannote-sample.wav"
    public static let readers = ["en_US_f_Allison", "fr_CA_f_June", "it_IT_m_Carlo", "ru_RU_f_IvrvoiceRU"]

    /// One prompt of a reader, e.g. `demo-congrats`, at `sampleRate`.
    public static func prompt(_ reader: String, _ name: String, sampleRate: Int = 16_000) throws -> [Float] {
        try decode(["-f", "g722", "-i", "\(asteriskSounds)/\(reader)/\(name).g722"], sampleRate: sampleRate)
    }

    /// A prompt as PCM16 at `sampleRate`, its speech (32 ms frames above a twentieth of the
    /// loudest) at `speechLevel` dBFS, the way practice-sim's voices are set (about −20 dBFS);
    /// `trimmed` cuts the prompt's leading and trailing quiet to 100 ms.
    public static func voice(_ reader: String, _ name: String, sampleRate: Int = 24_000, speechLevel: Double = -20,
                             trimmed: Bool = false) throws -> [Int16] {
        let samples = try prompt(reader, name, sampleRate: sampleRate)
        let frame = sampleRate * 32 / 1000
        let frames = stride(from: 0, to: samples.count - frame + 1, by: frame).map { start in
            (samples[start..<(start + frame)].map { Double($0 * $0) }.reduce(0, +) / Double(frame)).squareRoot()
        }
        let loudest = frames.max() ?? 0
        let loud = frames.filter { $0 > loudest / speechFloor }
        let level = (loud.map { $0 * $0 }.reduce(0, +) / Double(max(loud.count, 1))).squareRoot()
        let gain = 32_768 * pow(10, speechLevel / 20) / max(level, 1e-9)
        var range = samples.indices
        if trimmed, let first = frames.firstIndex(where: { $0 > loudest / speechFloor }),
           let last = frames.lastIndex(where: { $0 > loudest / speechFloor }) {
            let margin = sampleRate / 10
            range = max(0, first * frame - margin)..<min(samples.count, (last + 1) * frame + margin)
        }
        return samples[range].map { Int16(clamping: Int((Double($0) * gain).rounded())) }
    }

    /// Speech is what is louder than the loudest 32 ms frame divided by this (26 dB down).
    static let speechFloor = 20.0

    /// Where the words begin in `clip` (PCM16 at `sampleRate`): its first 10 ms block above
    /// the speech floor of its loudest 32 ms frame, as ``voice(_:_:sampleRate:speechLevel:trimmed:)``
    /// measures speech; a prompt's quiet lead is not words.
    public static func wordsStart(_ clip: [Int16], sampleRate: Int = 24_000) -> Int {
        func rms(_ range: Range<Int>) -> Double {
            (clip[range].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(range.count)).squareRoot()
        }
        let frame = sampleRate * 32 / 1000, block = sampleRate / 100
        let loudest = stride(from: 0, to: clip.count - frame + 1, by: frame).map { rms($0..<($0 + frame)) }.max() ?? 0
        return stride(from: 0, to: clip.count - block + 1, by: block).first { rms($0..<($0 + block)) > loudest / speechFloor } ?? 0
    }

    /// The pyannote conversation (30 s, two speakers) at `sampleRate`.
    public static func conversation(sampleRate: Int = 16_000) throws -> [Float] {
        try decode(["-i", pyannoteSample], sampleRate: sampleRate)
    }

    /// ffmpeg's decoding of `input` to float mono at `sampleRate` (soxr when it resamples).
    public static func decode(_ input: [String], sampleRate: Int) throws -> [Float] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("speech-\(UUID().uuidString).f32")
        defer { try? FileManager.default.removeItem(at: output) }
        _ = try runTool("ffmpeg", ["-v", "error", "-y"] + input + [
            "-af", "aresample=\(sampleRate):resampler=soxr:precision=28", "-ac", "1", "-f", "f32le", output.path,
        ])
        let data = try Data(contentsOf: output)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Pink noise (Paul Kellet's filter on white noise from a fixed seed) at `rms` (linear, of
    /// full scale).
    public static func pinkNoise(count: Int, rms: Float, seed: UInt64 = 0x5EED) -> [Float] {
        var generator = SplitMix(seed)
        var b = [Float](repeating: 0, count: 7)
        var out = [Float](repeating: 0, count: count)
        for i in 0..<count {
            let white = generator.nextSigned()
            b[0] = 0.99886 * b[0] + white * 0.0555179
            b[1] = 0.99332 * b[1] + white * 0.0750759
            b[2] = 0.96900 * b[2] + white * 0.1538520
            b[3] = 0.86650 * b[3] + white * 0.3104856
            b[4] = 0.55000 * b[4] + white * 0.5329522
            b[5] = -0.7616 * b[5] - white * 0.0168980
            out[i] = b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + white * 0.5362
            b[6] = white * 0.115926
        }
        return scaled(out, toRMS: rms)
    }

    /// Chords of three sine tones with harmonics, changing every half second (music-like).
    public static func chords(count: Int, rms: Float, sampleRate: Int = 16_000) -> [Float] {
        let roots: [Float] = [220, 196, 174.6, 246.9]
        var out = [Float](repeating: 0, count: count)
        for i in 0..<count {
            let root = roots[(i / (sampleRate / 2)) % roots.count]
            let t = Float(i) / Float(sampleRate)
            var x: Float = 0
            for ratio: Float in [1, 1.26, 1.5] {
                for harmonic: Float in [1, 2, 3] { x += sin(2 * .pi * root * ratio * harmonic * t) / harmonic }
            }
            out[i] = x
        }
        return scaled(out, toRMS: rms)
    }

    /// Keyboard clicks: short decaying bursts of noise at irregular intervals (80 to 250 ms).
    public static func keyboardClicks(count: Int, peak: Float, sampleRate: Int = 16_000, seed: UInt64 = 0xC11C) -> [Float] {
        var generator = SplitMix(seed)
        var out = [Float](repeating: 0, count: count)
        var at = 0
        while at < count {
            for j in 0..<min(sampleRate / 100, count - at) {
                out[at + j] = peak * generator.nextSigned() * expf(-Float(j) / Float(sampleRate / 1000))
            }
            at += sampleRate * (80 + Int(generator.next() % 170)) / 1000
        }
        return out
    }

    public static func rms(_ x: [Float]) -> Float {
        x.isEmpty ? 0 : (x.reduce(0) { $0 + $1 * $1 } / Float(x.count)).squareRoot()
    }

    public static func scaled(_ x: [Float], toRMS target: Float) -> [Float] {
        let level = rms(x)
        return level > 0 ? x.map { $0 * target / level } : x
    }

    /// A deterministic generator (practice-sim's SplitMix64): tests that add noise are repeatable.
    public typealias SplitMix = SeededRandom
}

extension SeededRandom {
    public init(_ seed: UInt64) { self.init(seed: seed) }

    /// Uniform in [-1, 1).
    public mutating func nextSigned() -> Float { Float(next() >> 40) / Float(1 << 23) - 1 }
}
