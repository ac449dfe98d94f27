import AudioKernel

#if canImport(Glibc)
import Glibc
#endif

/// `audiokernel-demo convert IN OUT [--bitrate BPS]`: any file `play` takes (a WAV of any
/// encoding the decoder reads, or an MPEG-4 AAC-LC `.m4a`/`.mp4`) into OUT, whose extension
/// says the format: `.m4a` AAC-LC at BPS (48000 by default), `.wav` PCM16. Rate and channels
/// are kept. An MPEG-4 input is decoded as it is read; the output is streamed.
enum Converter {
    static func main(_ arguments: [String]) -> Int32 {
        var positional: [String] = []
        var bitRate = 48_000
        var i = 0
        while i < arguments.count {
            if arguments[i] == "--bitrate" {
                guard i + 1 < arguments.count, let value = Int(arguments[i + 1]), value > 0 else {
                    printError("audiokernel-demo convert: --bitrate takes bits per second, as 48000")
                    return 2
                }
                bitRate = value
                i += 2
            } else {
                positional.append(arguments[i])
                i += 1
            }
        }
        guard positional.count == 2 else {
            printError(AudioKernelDemo.usage)
            return 2
        }
        let (input, output) = (positional[0], positional[1])
        let lower = output.lowercased()
        guard lower.hasSuffix(".m4a") || lower.hasSuffix(".mp4") || lower.hasSuffix(".wav") else {
            printError("audiokernel-demo convert: \(output): the output's extension says its format: .m4a (AAC-LC) or .wav (PCM16)")
            return 2
        }
        do {
            try convert(input, to: output, aac: !lower.hasSuffix(".wav"), bitRate: bitRate)
            return 0
        } catch {
            printError("audiokernel-demo convert: \(error)")
            return 1
        }
    }

    /// Where the samples come from: a WAV decoded whole, or an MPEG-4 file decoded as read.
    private enum Source {
        case wav(DecodedWAV, next: Int)
        case mpeg4(MPEG4AudioDecoder)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func convert(_ input: String, to output: String, aac: Bool, bitRate: Int) throws {
        var source: Source
        let rate: Int, channels: Int, frames: Int
        if isMPEG4(input) {
            let decoder: MPEG4AudioDecoder
            do { decoder = try MPEG4AudioDecoder(path: input) } catch { throw Failure(description: "\(input): \(error)") }
            (rate, channels, frames) = (decoder.sampleRate, decoder.channels, decoder.frameCount)
            source = .mpeg4(decoder)
        } else {
            let wav: DecodedWAV
            do { wav = try WAVDecoder.decode(contentsOfFile: input) } catch { throw Failure(description: "\(input): \(error)") }
            (rate, channels, frames) = (wav.format.sampleRate, wav.format.channels, wav.samples.count / max(wav.format.channels, 1))
            source = .wav(wav, next: 0)
        }
        print("input    \(input): \(rate) Hz, \(channels) channel(s), \(frames) frames (\(AudioKernelDemo.format(Double(frames) / Double(rate), 3)) s)")

        let started = Monotonic.now()
        let aacWriter: AACFileWriter?
        let wavWriter: WAVFileWriter?
        if aac {
            do {
                aacWriter = try AACFileWriter(path: output, sampleRate: rate, channels: channels, bitRate: bitRate)
            } catch {
                throw Failure(description: "\(output): \(error)")
            }
            wavWriter = nil
        } else {
            wavWriter = try WAVFileWriter(path: output, format: WAVFormat(sampleRate: rate, channels: channels, sampleFormat: .s16))
            aacWriter = nil
        }
        var buffer = [Int16](repeating: 0, count: 4_096 * channels)
        var done = 0
        while true {
            var count = 0
            switch source {
            case .wav(let wav, let next):
                count = min(4_096, frames - next)
                if count > 0 {
                    wav.samples.withUnsafeBufferPointer { all in
                        buffer.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: all.baseAddress! + next * channels, count: count * channels) }
                    }
                }
                source = .wav(wav, next: next + count)
            case .mpeg4(let decoder):
                count = try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0.baseAddress!, frames: 4_096) }
            }
            guard count > 0 else { break }
            if let aacWriter {
                try buffer.withUnsafeBufferPointer { try aacWriter.write($0.baseAddress!, frames: count) }
            } else if let wavWriter {
                try wavWriter.write(Array(buffer[0..<(count * channels)]))
            }
            done += count
        }
        if let aacWriter { try aacWriter.finish(sync: true) }
        if let wavWriter { try wavWriter.close(sync: true) }
        let seconds = Double(Monotonic.now() - started) / 1e9
        let audio = Double(done) / Double(rate)
        let speed = seconds > 0 ? "\(AudioKernelDemo.format(audio / seconds, 0))× real time" : "instant"
        if let aacWriter {
            let encoder = aacWriter.encoder
            let average = encoder.inputFrames > 0 ? Double(encoder.outputBits) / (Double(encoder.outputFrames * 1_024) / Double(rate)) : 0
            print("wrote    \(output): AAC-LC \(bitRate) bit/s asked, \(Int(average.rounded())) bit/s coded, \(encoder.outputFrames) frames, \(speed)")
        } else {
            print("wrote    \(output): PCM16 WAV, \(done) frames, \(speed)")
        }
    }

    /// An MPEG-4 file starts with a box whose type is `ftyp`.
    private static func isMPEG4(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 8)
        guard pread(fd, &header, 8, 0) == 8 else { return false }
        return Array(header[4..<8]) == Array("ftyp".utf8)
    }
}
