import AudioKernel

#if canImport(Glibc)
import Glibc
#endif

/// Runs the AudioKernel kernels over a WAV file and prints what a kiosk would see: the
/// format, a level meter every 100 ms, the speech-gate verdict, and a Float32 round trip;
/// then writes a copy with a 20 ms fade-out, as the player does on `stop`.
///
/// `audiokernel-demo convert IN OUT [--bitrate BPS]` converts between WAV and MPEG-4 AAC-LC
/// (see ``Converter``); `audiokernel-demo stretch IN OUT --rate R` plays a recording slower or
/// faster at its pitch (see ``StretchCommand``); `audiokernel-demo speech …` runs the speech models on a recording
/// (see ``SpeechCommand``).
@main
struct AudioKernelDemo {
    static let usage = """
        usage: audiokernel-demo INPUT.wav [OUTPUT.wav]
               audiokernel-demo convert INPUT OUTPUT [--bitrate BPS]
               audiokernel-demo stretch INPUT.wav OUTPUT.wav --rate R
               audiokernel-demo speech vad|turn|features ... (see `audiokernel-demo speech`)
        """

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "convert" {
            exit(Converter.main(Array(arguments.dropFirst())))
        }
        if arguments.first == "stretch" {
            exit(StretchCommand.main(Array(arguments.dropFirst())))
        }
        if arguments.first == "speech" {
            exit(SpeechCommand.main(Array(arguments.dropFirst())))
        }
        guard let input = arguments.first, !input.hasPrefix("-") else {
            printError(usage)
            exit(2)
        }
        let output = arguments.dropFirst().first ?? "/tmp/audiokernel-demo-out.wav"
        do {
            try run(input: input, output: output)
        } catch {
            printError("audiokernel-demo: \(input): \(error)")
            exit(1)
        }
    }

    static func run(input: String, output: String) throws(WAVError) {
        let wav = try WAVDecoder.decode(contentsOfFile: input)
        print("file     \(input)")
        print("format   \(wav.format), \(wav.samples.count) samples, \(format(wav.duration, 3)) s")

        // A level meter as the recorder reports it: RMS and peak per 100 ms window.
        let window = max(1, wav.format.sampleRate * wav.format.channels / 10)
        print("levels   (100 ms windows, RMS dBFS)")
        wav.samples.withUnsafeBufferPointer { all in
            var start = 0
            while start < all.count {
                let end = min(all.count, start + window)
                let level = SignalLevel(measuring: UnsafeBufferPointer(rebasing: all[start..<end]))
                let bar = String(repeating: "#", count: max(0, Int((level.rmsDBFS + 60) / 2)))
                print("  \(format(Double(start) / Double(window) / 10, 1).leftPad(5)) s  \(format(level.rmsDBFS, 1).leftPad(6))  \(bar)")
                start = end
            }
        }

        let level = SignalLevel(measuring: wav.samples)
        let gate = SpeechGate()
        print("overall  RMS \(format(level.rms, 1)) (\(format(level.rmsDBFS, 1)) dBFS), peak \(level.peak) (\(format(level.peakDBFS, 1)) dBFS)")
        print("gate     \(gate.holdsSpeech(level) ? "speech" : "no speech") (RMS threshold \(Int(gate.threshold)))")

        // Int16 → Float32 → Int16 must come back within one step of rounding.
        var floats = [Float](repeating: 0, count: wav.samples.count)
        var back = [Int16](repeating: 0, count: wav.samples.count)
        SampleConverter.int16ToFloat32(wav.samples, into: &floats)
        SampleConverter.float32ToInt16(floats, into: &back)
        let maxError = zip(wav.samples, back).map { abs(Int($0) - Int($1)) }.max() ?? 0
        print("float    Int16→Float32→Int16 round trip: max error \(maxError) LSB")

        // The click-free stop: fade the last 20 ms to silence.
        var faded = wav.samples
        let fade = min(faded.count, wav.format.sampleRate * wav.format.channels / 50)
        faded.withUnsafeMutableBufferPointer { buffer in
            Gain.fadeOut(UnsafeMutableBufferPointer(rebasing: buffer[(buffer.count - fade)...]))
        }
        let writer = try WAVFileWriter(path: output, format: wav.format)
        try writer.write(faded)
        try writer.close(sync: true)
        print("wrote    \(output) (\(format(writer.duration, 3)) s, last 20 ms faded out)")
    }

    static func format(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "\(value)" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        var text = "\(rounded)"
        if let dot = text.firstIndex(of: ".") {
            let have = text.distance(from: dot, to: text.endIndex) - 1
            if have < decimals { text += String(repeating: "0", count: decimals - have) }
        }
        return text
    }
}

extension String {
    func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

/// Writes a line to standard error (the C `stderr` global is not concurrency-safe in Swift 6).
func printError(_ message: String) {
    var line = message + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
