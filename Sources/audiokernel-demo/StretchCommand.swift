import AudioKernel

#if canImport(Glibc)
import Glibc
#endif

/// `audiokernel-demo stretch IN.wav OUT.wav --rate R`: plays a recording at speed R (0.5 to
/// 2.0) at the same pitch, as the kiosk replays its tutor slower. Any WAV the decoder reads
/// goes in (its channels averaged, its rate converted to 24 kHz); 24 kHz mono PCM16 comes out,
/// streamed through ``TimeStretcher`` in 10 ms chunks, as the player feeds it.
enum StretchCommand {
    static func main(_ arguments: [String]) -> Int32 {
        var positional: [String] = []
        var rate: Double?
        var i = 0
        while i < arguments.count {
            if arguments[i] == "--rate" {
                guard i + 1 < arguments.count, let value = Double(arguments[i + 1]) else {
                    printError("audiokernel-demo stretch: --rate takes a speed, as 0.75")
                    return 2
                }
                rate = value
                i += 2
            } else {
                positional.append(arguments[i])
                i += 1
            }
        }
        guard positional.count == 2, let rate else {
            printError("usage: audiokernel-demo stretch IN.wav OUT.wav --rate R   (R from 0.5 to 2.0)")
            return 2
        }
        do {
            try stretch(positional[0], to: positional[1], rate: rate)
            return 0
        } catch {
            printError("audiokernel-demo stretch: \(error)")
            return 1
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func stretch(_ input: String, to output: String, rate: Double) throws {
        let outputRate = WAVFormat.speech.sampleRate
        let stretcher: TimeStretcher
        do { stretcher = try TimeStretcher(sampleRate: outputRate, rate: rate, maximumInputFrames: outputRate / 100) } catch {
            throw Failure(description: "\(error)")
        }
        let wav: DecodedWAV
        do { wav = try WAVDecoder.decode(contentsOfFile: input) } catch { throw Failure(description: "\(input): \(error)") }
        let mono = try monoSpeech(wav)
        print("input    \(input): \(wav.format.sampleRate) Hz, \(wav.format.channels) channel(s), \(AudioKernelDemo.format(wav.duration, 3)) s")

        let writer: WAVFileWriter
        do { writer = try WAVFileWriter(path: output, format: .speech) } catch { throw Failure(description: "\(output): \(error)") }
        let chunk = stretcher.maximumInputFrames
        var out = [Float](repeating: 0, count: stretcher.maximumOutputFrames(forInputFrames: chunk))
        var pcm = [Int16](repeating: 0, count: out.count)
        let started = Monotonic.now()
        func write(_ count: Int) throws {
            guard count > 0 else { return }
            SampleConverter.float32ToInt16(Array(out[0..<count]), into: &pcm)
            try writer.write(Array(pcm[0..<count]))
        }
        try mono.withUnsafeBufferPointer { all in
            var next = 0
            while next < all.count {
                let n = min(chunk, all.count - next)
                let count = out.withUnsafeMutableBufferPointer { stretcher.process(UnsafeBufferPointer(rebasing: all[next..<next + n]), into: $0) }
                try write(count)
                next += n
            }
        }
        try write(out.withUnsafeMutableBufferPointer { stretcher.flush(into: $0) })
        let seconds = Double(Monotonic.now() - started) / 1e9
        try writer.close(sync: true)
        let audio = Double(mono.count) / Double(outputRate)
        print("stretch  rate \(rate): \(AudioKernelDemo.format(audio, 3)) s → \(AudioKernelDemo.format(writer.duration, 3)) s, pitch kept (WSOLA, \(stretcher.latency * 1_000 / outputRate) ms latency)")
        print("speed    \(AudioKernelDemo.format(seconds * 1_000, 1)) ms, \(AudioKernelDemo.format(audio / max(seconds, 1e-9), 0))× real time")
        print("wrote    \(output) (24 kHz mono PCM16)")
    }

    /// The recording as the kiosk's speech, mixed down to mono and at 24 kHz by the engine's
    /// ``InputConverter`` (as `play` takes a clip); the resampler's delay is dropped from the
    /// start and drained from the end, so the speech keeps its length.
    static func monoSpeech(_ wav: DecodedWAV) throws -> [Float] {
        let rate = WAVFormat.speech.sampleRate, channels = max(1, wav.format.channels)
        let chunk = 4_096
        let converter: InputConverter
        do {
            converter = try InputConverter(source: wav.format.streamFormat, maximumFrames: chunk, targetRate: rate, targetChannels: 1, quality: .high)
        } catch { throw Failure(description: "\(error)") }
        let frames = wav.samples.count / channels
        var mono: [Float] = []
        mono.reserveCapacity(frames * rate / wav.format.sampleRate + chunk)
        func feed(_ samples: UnsafeBufferPointer<Int16>) {
            var next = 0
            while next < samples.count / channels {
                let n = min(chunk, samples.count / channels - next)
                mono += converter.convert(samples.baseAddress! + next * channels, frames: n)
                next += n
            }
        }
        wav.samples.withUnsafeBufferPointer { feed($0) }
        let delay = Int(converter.delayFrames.rounded())
        if delay > 0 {
            // The input's last samples are still in the filter: zeros push them out.
            let zeros = [Int16](repeating: 0, count: (delay * wav.format.sampleRate / rate + 64) * channels)
            zeros.withUnsafeBufferPointer { feed($0) }
        }
        return Array(mono.dropFirst(delay).prefix(frames * rate / wav.format.sampleRate))
    }
}
