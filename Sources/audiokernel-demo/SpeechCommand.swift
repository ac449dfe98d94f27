import AudioKernel
import SpeechModels

#if canImport(Glibc)
import Glibc
#endif

/// `audiokernel-demo speech …`: how the recorder's models hear a recording, and the hooks the
/// conformance tests drive the shipped build through.
///
///     speech vad MODEL INPUT              Silero VAD's probability per 32 ms frame
///     speech turn MODEL INPUT             smart-turn's probability that INPUT's end (its
///                                         last 8 s) is a finished turn
///     speech turn MODEL --features F.f32  ... of each [80][800] float32 feature window
///     speech features AUDIO.f32 OUT.f32   Whisper features of each 8 s window (128000 float32)
///     speech endpoint SILERO SMART INPUT  where the hands-free recorder's two rules would start
///                                         and end turns in a 24 kHz PCM16 WAV: the learned one
///                                         (``TurnEndpointer``, smart-turn's answer taken
///                                         as late as it took to compute, as in the daemon) and
///                                         the level hangover (``SpeechDetector``), one event a
///                                         line: RULE EVENT SECONDS [PROBABILITY]
///
/// INPUT is a WAV file (brought to 16 kHz by the project's resampler) or raw float32 mono at
/// 16 kHz (`.f32`). Probabilities print one a line, with 9 decimals.
enum SpeechCommand {
    static let usage = """
        usage: audiokernel-demo speech vad MODEL.onnx INPUT.{wav,f32}
               audiokernel-demo speech turn MODEL.onnx INPUT.{wav,f32}
               audiokernel-demo speech turn MODEL.onnx --features FEATURES.f32 [--dump DIR]
               audiokernel-demo speech features AUDIO.f32 OUTPUT.f32
               audiokernel-demo speech endpoint SILERO.onnx SMART_TURN.onnx INPUT.wav [--finished P] [--pause-ms N] [--kept-pause-ms N] [--lead-ms N] [--answer-ms N] [--max-pause-ms N] [--later MS:DISTANCE[:ABOVE],…|none] [--trace [MS,MS,…]]
               (turn takes --threads 2: the model in two lanes of rows on two threads; every
               command --kernels auto|portable|avx2|avx-vnni|avx512-vnni: which build of the
               integer kernels runs, auto the best this CPU runs, as the daemon chooses)
        """

    nonisolated(unsafe) static var threads = 1
    nonisolated(unsafe) static var finishedProbability = TurnEndpointerConfiguration().finishedProbability
    nonisolated(unsafe) static var trace = false
    nonisolated(unsafe) static var tracePoints = [100, 150, 200, 250, 300, 350, 400, 500, 650, 800, 1_000, 1_300, 1_600, 2_000, 2_500]
    nonisolated(unsafe) static var pauseMilliseconds = TurnEndpointerConfiguration().pauseMilliseconds
    nonisolated(unsafe) static var keptPauseMilliseconds = TurnEndpointerConfiguration().keptPauseMilliseconds
    nonisolated(unsafe) static var leadMilliseconds = TurnEndpointerConfiguration().questionLeadMilliseconds
    nonisolated(unsafe) static var answerMilliseconds: Int?
    nonisolated(unsafe) static var maximumPauseMilliseconds = TurnEndpointerConfiguration().maximumPauseMilliseconds
    nonisolated(unsafe) static var laterQuestions = TurnEndpointerConfiguration().laterQuestions

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func main(_ arguments: [String]) -> Int32 {
        // --threads N (smart-turn's products on N threads, 1 or 2), anywhere; --finished P
        // (endpoint: smart-turn's probability that ends a turn).
        var arguments = arguments
        if let at = arguments.firstIndex(of: "--finished"), at + 1 < arguments.count, let p = Float(arguments[at + 1]), (0...1).contains(p) {
            finishedProbability = p
            arguments.removeSubrange(at...at + 1)
        }
        // --trace (endpoint): smart-turn also asked at points up to 2.5 s into each pause,
        // one `model trace PAUSE_START MS PROBABILITY` line each: how its answer moves as the
        // pause grows (for designing the rule; the rule itself asks once).
        if let at = arguments.firstIndex(of: "--trace") {
            trace = true
            arguments.remove(at: at)
            // --trace 150,350,800: at those points instead.
            if at < arguments.count {
                let points = arguments[at].split(separator: ",").compactMap { Int($0) }
                if !points.isEmpty, points.count == arguments[at].split(separator: ",").count {
                    tracePoints = points.sorted()
                    arguments.remove(at: at)
                }
            }
        }
        // --pause-ms N (endpoint): speech.pause_ms, the pause at which smart-turn is asked.
        if let at = arguments.firstIndex(of: "--pause-ms"), at + 1 < arguments.count, let n = Int(arguments[at + 1]), (32...2_000).contains(n) {
            pauseMilliseconds = n
            arguments.removeSubrange(at...at + 1)
        }
        // --kept-pause-ms N (endpoint): how much of a waited pause smart-turn hears when asked
        // again (a large N: all of it, as before the pauses were shortened).
        if let at = arguments.firstIndex(of: "--kept-pause-ms"), at + 1 < arguments.count, let n = Int(arguments[at + 1]), n >= 0 {
            keptPauseMilliseconds = n
            arguments.removeSubrange(at...at + 1)
        }
        // --lead-ms N (endpoint): how long before its question point a pause is asked about
        // (0: at the point, on the audio as heard).
        if let at = arguments.firstIndex(of: "--lead-ms"), at + 1 < arguments.count, let n = Int(arguments[at + 1]), (0...1_000).contains(n) {
            leadMilliseconds = n
            arguments.removeSubrange(at...at + 1)
        }
        // --answer-ms N (endpoint): smart-turn's answer taken N ms after it was asked for
        // (default: as long as it took here; 0: at once, the model's time left out).
        if let at = arguments.firstIndex(of: "--answer-ms"), at + 1 < arguments.count, let n = Int(arguments[at + 1]), (0...10_000).contains(n) {
            answerMilliseconds = n
            arguments.removeSubrange(at...at + 1)
        }
        // --max-pause-ms N (endpoint): speech.max_pause_ms, the pause ceiling.
        if let at = arguments.firstIndex(of: "--max-pause-ms"), at + 1 < arguments.count, let n = Int(arguments[at + 1]), (200...10_000).contains(n) {
            maximumPauseMilliseconds = n
            arguments.removeSubrange(at...at + 1)
        }
        // --later MS:DISTANCE[:ABOVE],… or --later none (endpoint): the later questions of a
        // pause (TurnEndpointerConfiguration.laterQuestions), for the proof's policy sweeps.
        if let at = arguments.firstIndex(of: "--later"), at + 1 < arguments.count {
            let text = arguments[at + 1]
            let questions = text == "none" ? [] : text.split(separator: ",").compactMap { item -> TurnEndpointerConfiguration.Question? in
                let parts = item.split(separator: ":")
                guard (2...3).contains(parts.count), let ms = Int(parts[0]), let distance = Float(parts[1]), ms > 0, distance > 0,
                      let above = parts.count == 3 ? Float(parts[2]) : 0, (0...1).contains(above) else { return nil }
                return TurnEndpointerConfiguration.Question(ms, distance: distance, askedAbove: above)
            }
            if text == "none" || questions.count == text.split(separator: ",").count {
                laterQuestions = questions
                arguments.removeSubrange(at...at + 1)
            }
        }
        if let at = arguments.firstIndex(of: "--threads"), at + 1 < arguments.count, let n = Int(arguments[at + 1]), (1...2).contains(n) {
            threads = n
            arguments.removeSubrange(at...at + 1)
        }
        if let at = arguments.firstIndex(of: "--kernels"), at + 1 < arguments.count {
            do throws(KernelVariant.Unavailable) {
                try KernelVariant.use(try KernelVariant.named(arguments[at + 1]))
            } catch {
                printError("audiokernel-demo speech: \(error)")
                return 2
            }
            arguments.removeSubrange(at...at + 1)
        }
        do {
            switch (arguments.first, arguments.count) {
            case ("vad", 3): try vad(model: arguments[1], input: arguments[2])
            case ("turn", 3): try turn(model: arguments[1], input: arguments[2])
            case ("turn", 4) where arguments[2] == "--features": try turn(model: arguments[1], features: arguments[3])
            case ("turn", 6) where arguments[2] == "--features" && arguments[4] == "--dump":
                try turn(model: arguments[1], features: arguments[3], dump: arguments[5])
            case ("features", 3): try features(input: arguments[1], output: arguments[2])
            case ("endpoint", 4): try endpoint(silero: arguments[1], smartTurn: arguments[2], input: arguments[3])
            default:
                printError(usage)
                return 2
            }
            return 0
        } catch {
            printError("audiokernel-demo speech: \(error)")
            return 1
        }
    }

    static func readFile(_ path: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw Failure(description: "\(path): \(String(cString: strerror(errno)))") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return bytes
    }

    static func floats(_ path: String) throws -> [Float] {
        let bytes = try readFile(path)
        guard bytes.count % 4 == 0 else { throw Failure(description: "\(path): not whole float32 samples") }
        return bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// 16 kHz mono float: a `.f32` file as it is, a WAV through the resampler.
    static func audio(_ path: String) throws -> [Float] {
        if path.hasSuffix(".f32") { return try floats(path) }
        let wav = try WAVDecoder.decode(contentsOfFile: path)
        let channels = wav.format.channels
        var mono = [Float](repeating: 0, count: wav.samples.count / channels)
        for i in mono.indices {
            var sum: Float = 0
            for c in 0..<channels { sum += Float(wav.samples[i * channels + c]) / 32_768 }
            mono[i] = sum / Float(channels)
        }
        guard wav.format.sampleRate != 16_000 else { return mono }
        let resampler = try Resampler(inputRate: wav.format.sampleRate, outputRate: 16_000, quality: .high, maximumInputFrames: 4_096)
        var out: [Float] = []
        var buffer = [Float](repeating: 0, count: resampler.maximumOutputFrames(forInputFrames: 4_096))
        var start = 0
        while start < mono.count {
            let end = min(mono.count, start + 4_096)
            let made = mono[start..<end].withUnsafeBufferPointer { input in
                buffer.withUnsafeMutableBufferPointer { resampler.process(input, into: $0) }
            }
            out += buffer[0..<made]
            start = end
        }
        return out
    }

    static func vad(model: String, input: String) throws {
        let vad = try SileroVAD(onnx: readFile(model))
        let samples = try audio(input)
        samples.withUnsafeBufferPointer { samples in
            var start = 0
            while start + SileroVAD.frameLength <= samples.count {
                let p = vad.probability(of: UnsafeBufferPointer(rebasing: samples[start..<start + SileroVAD.frameLength]))
                print(AudioKernelDemo.format(Double(p), 9))
                start += SileroVAD.frameLength
            }
        }
    }

    static func turn(model: String, input: String) throws {
        let model = try SmartTurnModel(onnx: readFile(model), threads: threads)
        var samples = try audio(input).suffix(WhisperFeatures.windowSamples)
        samples = ArraySlice(repeating: 0, count: WhisperFeatures.windowSamples - samples.count) + samples
        var features = [Float](repeating: 0, count: WhisperFeatures.bins * WhisperFeatures.frames)
        Array(samples).withUnsafeBufferPointer { samples in
            features.withUnsafeMutableBufferPointer { WhisperFeatures().compute(samples, into: $0.baseAddress!) }
        }
        print(AudioKernelDemo.format(Double(features.withUnsafeBufferPointer { model.probability(features: $0.baseAddress!) }), 9))
    }

    static func turn(model: String, features path: String, dump: String? = nil) throws {
        let model = try SmartTurnModel(onnx: readFile(model), threads: threads)
        if let dump {
            // Each quantized activation to DIR/NAME.u8, appended window after window.
            var seen: [String: Int] = [:]
            model.inspect = { name, values in
                let index = seen[name, default: 0]
                seen[name] = index + 1
                guard let file = fopen("\(dump)/\(name).u8", "ab") else { return }
                _ = values.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
                fclose(file)
            }
        }
        let all = try floats(path)
        let size = WhisperFeatures.bins * WhisperFeatures.frames
        guard all.count % size == 0 else { throw Failure(description: "\(path): not whole [80][800] windows") }
        // Each window from the model's own scratch, as the daemon's worker hands them over
        // (``SmartTurnModel/featureScratch``: read first, then overwritten by the model).
        let scratch = model.featureScratch
        all.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: all.count, by: size) {
                scratch.update(from: all.baseAddress! + start, count: size)
                print(AudioKernelDemo.format(Double(model.probability(features: scratch)), 9))
            }
        }
    }

    static func features(input: String, output: String) throws {
        let all = try floats(input)
        guard all.count % WhisperFeatures.windowSamples == 0 else { throw Failure(description: "\(input): not whole 8 s windows") }
        let extractor = WhisperFeatures()
        var out = [Float](repeating: 0, count: all.count / WhisperFeatures.windowSamples * WhisperFeatures.bins * WhisperFeatures.frames)
        all.withUnsafeBufferPointer { all in
            out.withUnsafeMutableBufferPointer { out in
                for w in 0..<(all.count / WhisperFeatures.windowSamples) {
                    extractor.compute(UnsafeBufferPointer(rebasing: all[w * WhisperFeatures.windowSamples..<(w + 1) * WhisperFeatures.windowSamples]),
                                      into: out.baseAddress! + w * WhisperFeatures.bins * WhisperFeatures.frames)
                }
            }
        }
        guard let file = fopen(output, "wb") else { throw Failure(description: "\(output): \(String(cString: strerror(errno)))") }
        defer { fclose(file) }
        guard out.withUnsafeBytes({ fwrite($0.baseAddress, 1, $0.count, file) }) == out.count * 4 else {
            throw Failure(description: "\(output): write failed")
        }
    }

    static func endpoint(silero: String, smartTurn: String, input: String) throws {
        let wav = try WAVDecoder.decode(contentsOfFile: input)
        guard wav.format.sampleRate == 24_000, wav.format.channels == 1 else {
            throw Failure(description: "\(input): the recorder's format, 24 kHz mono PCM16, please")
        }
        let seconds = { (position: Int) in AudioKernelDemo.format(Double(position) / 24_000, 3) }
        // The learned rule, period by period (10 ms). smart-turn's answer is taken at the first
        // period after it would be ready in the daemon: asked at a frame's end, ready the
        // model's time later (measured here, or --answer-ms).
        let stream = try VoiceActivityStream(model: SileroVAD(onnx: readFile(silero)))
        let model = try SmartTurnModel(onnx: readFile(smartTurn), threads: threads)
        let extractor = WhisperFeatures()
        var window = [Int16](repeating: 0, count: WhisperFeatures.windowSamples)
        var configuration = TurnEndpointerConfiguration()
        configuration.finishedProbability = finishedProbability
        configuration.pauseMilliseconds = pauseMilliseconds
        configuration.keptPauseMilliseconds = keptPauseMilliseconds
        configuration.questionLeadMilliseconds = leadMilliseconds
        configuration.maximumPauseMilliseconds = maximumPauseMilliseconds
        configuration.laterQuestions = laterQuestions
        var endpointer = TurnEndpointer(configuration: configuration)
        var omitted: [(start: Int, end: Int)] = []
        func ask(continuing: Int = 0) -> Float {
            // As the recorder asks: the turn's waited pauses shortened.
            endpointer.omittedSpans(into: &omitted)
            window.withUnsafeMutableBufferPointer { stream.copyRecent(into: $0, omitting: omitted, continuing: continuing) }
            // Into the model's own scratch, as the daemon's worker computes them.
            window.withUnsafeBufferPointer { extractor.compute($0, into: model.featureScratch) }
            return model.probability(features: model.featureScratch)
        }
        // The pause being traced: where it began, the trace points still to come (ms).
        var traced: (start: Int, points: [Int])?
        // The answer on its way: its probability and the stream position it is ready at.
        var pending: (probability: Float, ready: Int)?
        func report(_ decision: TurnEndpointer.Decision) {
            switch decision {
            case .none: break
            case .speechStarted(let onset): print("model started \(seconds(onset))")
            case .askModel(let pause, let continuing):
                var started = timespec(), ended = timespec()
                clock_gettime(CLOCK_MONOTONIC, &started)
                let p = ask(continuing: continuing)
                clock_gettime(CLOCK_MONOTONIC, &ended)
                let took = answerMilliseconds.map { Double($0) / 1000 }
                    ?? Double(ended.tv_sec - started.tv_sec) + Double(ended.tv_nsec - started.tv_nsec) / 1e9
                pending = (p, stream.position + Int(took * 24_000))
                print("model asked \(seconds(pause)) \(AudioKernelDemo.format(Double(p), 3)) snr \(endpointer.signalToNoise.map { AudioKernelDemo.format($0, 1) } ?? "-") threshold \(AudioKernelDemo.format(Double(endpointer.finishedThreshold), 3)) took \(AudioKernelDemo.format(took, 3))")
                if trace { traced = (pause, tracePoints) }
            case .stillListening: break
            case .resumed:
                traced = nil
                pending = nil
                print("model resumed \(seconds(stream.position))")
            case .ended(let end, let ending):
                switch ending {
                case .finished(let p): print("model finished \(seconds(end)) \(AudioKernelDemo.format(Double(p), 3)) decided \(seconds(stream.position))")
                case .pauseCeiling: print("model pause_ceiling \(seconds(end)) decided \(seconds(stream.position))")
                case .maximumLength: print("model maximumLength \(seconds(end))")
                case .backgroundSpeech: print("model background_speech \(seconds(end))")
                }
            }
        }
        var detector = SpeechDetector()
        wav.samples.withUnsafeBufferPointer { samples in
            var start = 0
            while start < samples.count {
                let period = UnsafeBufferPointer(rebasing: samples[start..<min(samples.count, start + 240)])
                if let answer = pending, stream.position >= answer.ready {
                    pending = nil
                    report(endpointer.answer(answer.probability))
                }
                stream.process(period) { p, end, level in
                    if let t = traced, let next = t.points.first, end - t.start >= next * 24 {
                        print("model trace \(seconds(t.start)) \(next) \(AudioKernelDemo.format(Double(ask()), 3)) snr \(endpointer.signalToNoise.map { AudioKernelDemo.format($0, 1) } ?? "-") vad \(AudioKernelDemo.format(Double(p), 3))")
                        traced = t.points.count > 1 ? (t.start, Array(t.points.dropFirst())) : nil
                    }
                    report(endpointer.frame(probability: p, end: end, level: level))
                }
                switch detector.process(SignalLevel(measuring: period)) {
                case .speechStarted(let onset): print("hangover started \(seconds(onset))")
                case .speechEnded(let end): print("hangover ended \(seconds(end)) decided \(seconds(detector.position))")
                case .maximumReached(let end): print("hangover maximumLength \(seconds(end))")
                case .none: break
                }
                start += 240
            }
        }
    }
}
