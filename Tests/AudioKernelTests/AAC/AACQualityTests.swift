import AudioKernel
import Foundation
import TestSupport
import XCTest

/// The encoder's quality beside ffmpeg's native AAC encoder at the same bit rate, both decoded
/// by ffmpeg: wideband PESQ (ITU-T P.862.2, PyPI's `pesq`, built by .ci/setup) on recorded
/// speech at the recorder's 24 kHz mono, and pre-echo on a click train.
final class AACQualityTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory()
        addTeardownBlock { [directory] in try? FileManager.default.removeItem(at: directory!) }
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static let traces = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../../shared/talkco-traces").standardized

    /// The tutor's speech in a TalkCo trace: the PCM16 of its `audio` events, in order.
    static func tutorSpeech(_ trace: String) throws -> [Int16] {
        let record = try JSONSerialization.jsonObject(with: Data(contentsOf: traces.appendingPathComponent(trace))) as! [String: Any]
        let body = try XCTUnwrap(Data(base64Encoded: (record["response"] as! [String: Any])["body_base64"] as! String))
        var pcm = Data()
        for block in String(decoding: body, as: UTF8.self).components(separatedBy: "\n\n") {
            let lines = block.split(separator: "\n", maxSplits: 1).map(String.init)
            guard lines.count == 2, lines[0] == "event: audio", lines[1].hasPrefix("data: ") else { continue }
            let data = try JSONSerialization.jsonObject(with: Data(lines[1].dropFirst(6).utf8)) as! [String: Any]
            pcm.append(try XCTUnwrap(Data(base64Encoded: data["audio"] as! String)))
        }
        return pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Five recordings of speech at 24 kHz: the repository's sample and four of the tutor's
    /// replies as the real TalkCo server sent them.
    private func corpus() throws -> [String] {
        // A copy: the coded files go beside each recording, and never into the repository.
        let sample = path("hello.wav")
        try FileManager.default.copyItem(atPath: AACEncoderTests.hello, toPath: sample)
        var files = [sample]
        for trace in ["03-start-greeting.json", "04-chat-audio-speech.json", "07-chat-text.json", "35-review-mode-start-greeting.json"] {
            let samples = try Self.tutorSpeech(trace)
            XCTAssertGreaterThan(samples.count, 24_000 * 3, trace)
            let wav = path("tutor-\(trace.prefix(2)).wav")
            let writer = try WAVFileWriter(path: wav, format: WAVFormat(sampleRate: 24_000, channels: 1))
            try writer.write(samples)
            try writer.close(sync: false)
            files.append(wav)
        }
        return files
    }

    /// Recorded human voices, women's and men's, from packages: Debian's
    /// asterisk-core-sounds-{en,fr,it,ru}-g722 (16 kHz G.722: Allison, a woman, in US English;
    /// June, a woman, in Canadian French; Carlo, a man, in Italian; a Russian woman's IVR
    /// voice), each three prompts read one after the other, 10 s from their start and 10 s
    /// from 30 s on; and PyPI's pyannote.audio 4.0.7 sample (16 kHz: a conversation of two
    /// speakers, 30 s in three parts). All brought to the recorder's 24 kHz by ffmpeg's soxr
    /// (.ci/setup installs them; docs/audio.md names them).
    private func humanVoices() throws -> [String] {
        var files: [String] = []
        for voice in ["en_US_f_Allison", "fr_CA_f_June", "it_IT_m_Carlo", "ru_RU_f_IvrvoiceRU"] {
            let prompts = ["demo-instruct", "priv-callee-options", "demo-congrats"].map { "\(Self.asteriskSounds)/\(voice)/\($0).g722" }
            for start in [0, 30] {
                let wav = path("\(voice)-\(start).wav")
                try runTool("ffmpeg", ["-v", "error", "-y"] + prompts.flatMap { ["-f", "g722", "-i", $0] } + [
                    "-filter_complex", "[0][1][2]concat=n=3:v=0:a=1,aresample=24000:resampler=soxr:precision=28,atrim=\(start):\(start + 10),asetpts=N/SR/TB",
                    "-ac", "1", "-c:a", "pcm_s16le", wav,
                ])
                files.append(wav)
            }
        }
        for part in 0..<3 {
            let wav = path("conversation-\(part).wav")
            try runTool("ffmpeg", ["-v", "error", "-y", "-i", Self.pyannoteSample, "-af",
                                   "aresample=24000:resampler=soxr:precision=28,atrim=\(part * 10):\(part * 10 + 10),asetpts=N/SR/TB",
                                   "-ac", "1", "-c:a", "pcm_s16le", wav])
            files.append(wav)
        }
        return files
    }

    /// Voices the encoder was never tuned on, telephone-band (8 kHz, nothing above 4 kHz: the
    /// old recordings and band-limited microphones a kiosk also hears), from other Debian
    /// packages: asterisk-prompt-fr-armelle (Armelle Desjardins, a woman, French, GSM),
    /// asterisk-prompt-es-co (Colombian Spanish, GSM), asterisk-prompt-it-menardi-wav (Menardi,
    /// a woman, Italian, 8 kHz PCM); and asterisk-core-sounds-es-g722 (Allison reading
    /// Mexican Spanish, 16 kHz). Three prompts each, the first 10 s.
    private func heldOutVoices() throws -> [String] {
        let sets: [(String, [String])] = [
            ("armelle", ["fr/conf-adminmenu.gsm", "fr/priv-callee-options.gsm", "fr/vm-options.gsm"]),
            ("es-co", ["es/conf-usermenu.gsm", "es/vm-options.gsm", "es/dir-intro.gsm"]),
            ("menardi", ["it_IT_f_Menardi/demo-instruct.wav", "it_IT_f_Menardi/demo-thanks.wav", "it_IT_f_Menardi/priv-callee-options.wav"]),
            ("allison-es", ["es_MX_f_Allison/demo-instruct.g722", "es_MX_f_Allison/demo-congrats.g722", "es_MX_f_Allison/vm-intro.g722"]),
        ]
        return try sets.map { name, prompts in
            let wav = path("held-out-\(name).wav")
            let inputs = prompts.flatMap { prompt in (prompt.hasSuffix(".g722") ? ["-f", "g722"] : []) + ["-i", "\(Self.asteriskSounds)/\(prompt)"] }
            try runTool("ffmpeg", ["-v", "error", "-y"] + inputs + [
                "-filter_complex", "[0][1][2]concat=n=3:v=0:a=1,aresample=24000:resampler=soxr:precision=28,atrim=0:10,asetpts=N/SR/TB",
                "-ac", "1", "-c:a", "pcm_s16le", wav,
            ])
            return wav
        }
    }

    static let asteriskSounds = "/usr/share/asterisk/sounds"
    static let pyannoteSample = "/opt/practiced-ci/voices/pyannote-sample.wav"

    /// Coded by the shipped encoder: `audiokernel-demo convert` (AACFileWriter, as the recorder
    /// writes a turn), the release build in CI, where the debug build's encoder took most of
    /// this suite's minutes.
    private func encodeOurs(_ wav: String, bitRate: Int) throws -> String {
        let out = wav + ".ours-\(bitRate).m4a"
        try runTool(ShippedBinaries.path(of: "audiokernel-demo"), ["convert", wav, out, "--bitrate", "\(bitRate)"])
        return out
    }

    private func encodeFFmpeg(_ wav: String, bitRate: Int) throws -> String {
        let out = wav + ".ffmpeg-\(bitRate).m4a"
        try runTool("ffmpeg", ["-v", "error", "-y", "-i", wav, "-c:a", "aac", "-b:a", "\(bitRate)", out])
        return out
    }

    /// PESQ-WB of each (reference, coded) pair: both decoded by ffmpeg and brought to 16 kHz by
    /// its soxr resampler, scored by PyPI's pesq in the environment .ci/setup builds.
    private func pesq(_ pairs: [(String, String)]) throws -> [Double] {
        let python = FileManager.default.isExecutableFile(atPath: "/opt/practiced-ci/pesq/bin/python3") ? "/opt/practiced-ci/pesq/bin/python3" : "python3"
        let script = """
            import subprocess, sys, numpy
            from pesq import pesq
            def pcm(f):
                raw = subprocess.run(['ffmpeg', '-v', 'error', '-i', f, '-af', 'aresample=16000:resampler=soxr:precision=28',
                                      '-ac', '1', '-f', 's16le', '-'], capture_output=True, check=True).stdout
                return numpy.frombuffer(raw, dtype=numpy.int16).astype(float)
            for pair in sys.argv[1:]:
                ref, deg = pair.split('|')
                r, d = pcm(ref), pcm(deg)
                n = min(len(r), len(d))
                print('%.4f' % pesq(16000, r[:n], d[:n], 'wb'))
            """
        let output = try runTool(python, ["-c", script] + pairs.map { "\($0.0)|\($0.1)" })
        return output.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// Ours against ffmpeg's at 24, 32 and 48 kbit/s on `files`: mean PESQ-WB at least
    /// ffmpeg's, at no more bytes; the table printed.
    private func compareWithFFmpeg(_ files: [String], _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        var table = "PESQ-WB, \(what) at 24 kHz mono (mean of \(files.count) recordings; bytes in all)\n| kbit/s | ours | ffmpeg aac |\n|---|---|---|\n"
        for bitRate in [24_000, 32_000, 48_000] {
            let oursFiles = try files.map { try encodeOurs($0, bitRate: bitRate) }, theirFiles = try files.map { try encodeFFmpeg($0, bitRate: bitRate) }
            let ours = try pesq(Array(zip(files, oursFiles))), theirs = try pesq(Array(zip(files, theirFiles)))
            XCTAssertEqual(ours.count, files.count, file: file, line: line)
            XCTAssertEqual(theirs.count, files.count, file: file, line: line)
            let bytes = { (paths: [String]) in paths.reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int) ?? 0) } }
            let mean = { (scores: [Double]) in scores.reduce(0, +) / Double(max(scores.count, 1)) }
            table += "| \(bitRate / 1_000) | \(String(format: "%.2f", mean(ours))) at \(bytes(oursFiles)) B | \(String(format: "%.2f", mean(theirs))) at \(bytes(theirFiles)) B |\n"
            XCTAssertGreaterThanOrEqual(mean(ours), mean(theirs), "at \(bitRate) bit/s: ours \(ours), ffmpeg's \(theirs)", file: file, line: line)
            XCTAssertLessThanOrEqual(bytes(oursFiles), bytes(theirFiles), "at \(bitRate) bit/s: more bytes than ffmpeg's", file: file, line: line)
            XCTAssertGreaterThan(mean(ours), 2.5, "\(bitRate) bit/s", file: file, line: line)
        }
        print(table)
    }

    /// Recorded human voices (``humanVoices()``): four readers and a conversation.
    func testHumanVoicesScoreAtLeastFFmpegsAt24And32And48Kbits() throws {
        try compareWithFFmpeg(try humanVoices(), "recorded human voices")
    }

    /// Voices from packages the encoder's tuning never heard (``heldOutVoices()``), telephone-band.
    func testHeldOutTelephoneBandVoicesScoreAtLeastFFmpegsAt24And32And48Kbits() throws {
        try compareWithFFmpeg(try heldOutVoices(), "held-out telephone-band voices")
    }

    func testSpeechScoresAtLeastFFmpegsAt24And32And48Kbits() throws {
        let files = try corpus()
        try compareWithFFmpeg(files, "the tutor's and the sample's speech")
        let samples = URL(fileURLWithPath: AACEncoderTests.hello).deletingLastPathComponent().path
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: samples).filter { $0.hasSuffix(".m4a") }, [],
                       "nothing coded lands in the repository's samples/")
    }

    /// Clicks over quiet noise at 48 kbit/s: the coding noise in the 5 ms before each click (pre-
    /// echo, what block switching exists to prevent) is no more than ffmpeg's.
    func testAClickTrainShowsNoMorePreEchoThanFFmpegs() throws {
        let rate = 24_000, period = rate / 4
        var seed: UInt32 = 1
        var samples = [Int16](repeating: 0, count: rate * 4)
        for i in samples.indices {
            seed = seed &* 1_103_515_245 &+ 12_345
            let noise = (Double(seed >> 16) / 32_768 - 1) * 0.003
            let phase = (i + period / 2) % period
            samples[i] = Int16(((phase < 24 ? 0.8 * sin(Double(phase) * 0.9) : 0) + noise) * 32_767)
        }
        let wav = path("clicks.wav")
        let writer = try WAVFileWriter(path: wav, format: WAVFormat(sampleRate: rate, channels: 1))
        try writer.write(samples)
        try writer.close(sync: false)
        func preEcho(_ m4a: String) throws -> Double {
            let raw = m4a + ".raw"
            try runTool("ffmpeg", ["-v", "error", "-y", "-i", m4a, "-f", "s16le", raw])
            let decoded = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
            var energy = 0.0
            var click = period / 2
            while click < samples.count {
                for i in max(0, click - rate / 200)..<click {
                    let e = Double(decoded[i]) - Double(samples[i])
                    energy += e * e
                }
                click += period
            }
            return energy
        }
        let ours = try preEcho(try encodeOurs(wav, bitRate: 48_000))
        let theirs = try preEcho(try encodeFFmpeg(wav, bitRate: 48_000))
        print("pre-echo energy in the 5 ms before 16 clicks: ours \(String(format: "%.3g", ours)), ffmpeg's \(String(format: "%.3g", theirs))")
        XCTAssertLessThanOrEqual(ours, theirs)
    }
}
