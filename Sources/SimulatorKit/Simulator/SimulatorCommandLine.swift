import Foundation

/// practice-sim's command line: where to listen, how to behave, which faults to inject.
public struct SimulatorCommandLine: Sendable {
    public var host = "127.0.0.1"
    public var port: UInt16 = 8000
    public var samplesDirectory: String?
    /// The bound port is written here once listening (handy with `--port 0`).
    public var portFile: String?
    public var controlRoutes = true
    public var quiet = false
    public var configuration = SimulatorConfiguration()
    /// Serve the Chatterbox backend (cue practice) instead of TalkCo's.
    public var chatterbox = false
    public var chatterboxConfiguration = ChatterboxSimulatorConfiguration()

    public static let usage = """
        usage: practice-sim [options]
          A local stand-in for the practice backend: the whole HTTP + SSE contract, with the
          real server's oddities and injectable faults.

          --host ADDR             listen address (default 127.0.0.1)
          --port N                port, 0 for any free one (default 8000)
          --port-file PATH        write the bound port to PATH once listening
          --samples DIR           the speech WAVs (default: samples/sim of the checkout)
          --seed N                seed of every random choice (default 1)
          --pace X                audio pace: 1 real time (default), 0 as fast as possible
          --fast                  same as --pace 0
          --connecting-ms N       /chat answers 503 this long after POST /sessions (300)
          --first-audio-ms N      delay before the first audio event (150)
          --start-timeout-ms N    how long /start waits before a 504 (15000)
          --upstream-idle-ms N    how long a second /start hangs (30000)
          --polls-until-marks N   review polls before marks appear (2)
          --polls-until-summary N polls after /end before the summary appears (2)
          --no-control            disable the test-only /_sim/ routes
          --quiet                 no request log on stderr
        faults (also settable at run time: PUT /_sim/faults with the snake_case names):
          --latency-ms N          added before every response
          --fail-count N          the next N calls answer --fail-status (default 503)
          --fail-status S         400...599
          --start-504             /start answers 504 after --start-timeout-ms
          --drop-after-events N   reply streams are cut (TCP reset) after N events
          --drip BYTES:MS         write replies BYTES at a time, MS apart
          --burst MS[:JITTER]     Wi-Fi bursts: one audio event per MS holding 1.0-1.2 x MS of
                                  audio, each up to JITTER ms late
          --malformed-sse         broken events and unusual (legal) SSE framing in replies
          --omit-done             streams end without the done event
          --odd-chunks            every audio chunk has an odd byte count
          --review-fails          no marks and a null summary
          --correction-fails      /corrections answers 500
          --late-void-transcript  turn replies start their audio, then an empty transcript
          --no-transcript         spoken turns are answered without a transcript event (not saved)
        Chatterbox (cue practice) instead of TalkCo:
          --chatterbox            serve Chatterbox's gateway and files service (from its traces)
          --login-code CODE       the code every sign-in mail carries (default 123456)
          --access-ttl-s N        access tokens live N s (3600; the traces' recording: 120)
          --transcription-ms N    a transcription is ready N ms after it is asked for (4000)
          --evaluation-ms N       an evaluation is ready N ms after it is asked for (11000)
          --provider-failures N   the next N transcriptions fail (processing, then none)
          --bad-refresh           every refresh token is refused (token_invalid)
          --hostile-cues          cue details in markdown with HTML in them
          --evaluation-padding N  each evaluation's summary padded to about N bytes
          --upload-base URL       upload URLs point at URL (a port that never answers)
          --extra-recordings N    each new profile starts with N recordings (a long history)
        """

    public struct UsageError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    public init() {}

    public static func parse(_ arguments: [String]) throws(UsageError) -> SimulatorCommandLine {
        var result = SimulatorCommandLine()
        var index = 0
        func value(_ flag: String) throws(UsageError) -> String {
            index += 1
            guard index < arguments.count else { throw UsageError(message: "\(flag) needs a value") }
            return arguments[index]
        }
        func integer(_ flag: String, _ range: ClosedRange<Int> = 0...Int(Int32.max)) throws(UsageError) -> Int {
            let text = try value(flag)
            guard let number = Int(text), range.contains(number) else {
                throw UsageError(message: "\(flag): '\(text)' is not a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return number
        }
        while index < arguments.count {
            let flag = arguments[index]
            var c = result.configuration
            switch flag {
            case "--host": result.host = try value(flag)
            case "--port": result.port = UInt16(try integer(flag, 0...65535))
            case "--port-file": result.portFile = try value(flag)
            case "--samples": result.samplesDirectory = try value(flag)
            case "--seed":
                let text = try value(flag)
                guard let seed = UInt64(text) else { throw UsageError(message: "--seed: '\(text)' is not an unsigned integer") }
                c.seed = seed
            case "--pace":
                let text = try value(flag)
                guard let pace = Double(text), pace >= 0, pace.isFinite else { throw UsageError(message: "--pace: '\(text)' is not a number >= 0") }
                c.pace = pace
            case "--fast": c.pace = 0
            case "--connecting-ms": c.connectingMs = try integer(flag)
            case "--first-audio-ms": c.firstAudioMs = try integer(flag)
            case "--start-timeout-ms": c.startTimeoutMs = try integer(flag)
            case "--upstream-idle-ms": c.upstreamIdleMs = try integer(flag)
            case "--polls-until-marks": c.pollsUntilMarks = try integer(flag)
            case "--polls-until-summary": c.pollsUntilSummary = try integer(flag)
            case "--no-control": result.controlRoutes = false
            case "--quiet": result.quiet = true
            case "--latency-ms": c.faults.latencyMs = try integer(flag)
            case "--fail-count": c.faults.failCount = try integer(flag)
            case "--fail-status": c.faults.failStatus = try integer(flag, 400...599)
            case "--start-504": c.faults.start504 = true
            case "--drop-after-events": c.faults.dropAfterEvents = try integer(flag)
            case "--drip":
                let text = try value(flag)
                let pieces = text.split(separator: ":")
                guard pieces.count == 2, let bytes = Int(pieces[0]), bytes > 0, let ms = Int(pieces[1]), ms >= 0 else {
                    throw UsageError(message: "--drip: '\(text)' is not BYTES:MS (BYTES > 0)")
                }
                c.faults.dripBytes = bytes
                c.faults.dripMs = ms
            case "--burst":
                let text = try value(flag)
                let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
                guard (1...2).contains(pieces.count), let ms = Int(pieces[0]), (1...10_000).contains(ms),
                      let jitter = pieces.count == 2 ? Int(pieces[1]) : 0, (0...10_000).contains(jitter) else {
                    throw UsageError(message: "--burst: '\(text)' is not MS[:JITTER] (MS 1-10000, JITTER 0-10000)")
                }
                c.faults.burstMs = ms
                c.faults.burstJitterMs = jitter
            case "--malformed-sse": c.faults.malformedSSE = true
            case "--omit-done": c.faults.omitDone = true
            case "--odd-chunks": c.faults.oddChunks = true
            case "--review-fails": c.faults.reviewFails = true
            case "--correction-fails": c.faults.correctionFails = true
            case "--late-void-transcript": c.faults.lateVoidTranscript = true
            case "--no-transcript": c.faults.noTranscript = true
            case "--chatterbox": result.chatterbox = true
            case "--login-code": result.chatterboxConfiguration.loginCode = try value(flag)
            case "--access-ttl-s": result.chatterboxConfiguration.accessTokenSeconds = Double(try integer(flag, 1...86_400))
            case "--transcription-ms": result.chatterboxConfiguration.transcriptionSeconds = Double(try integer(flag)) / 1000
            case "--evaluation-ms": result.chatterboxConfiguration.evaluationSeconds = Double(try integer(flag)) / 1000
            case "--provider-failures": result.chatterboxConfiguration.providerFailures = try integer(flag, 0...1_000)
            case "--bad-refresh": result.chatterboxConfiguration.badRefresh = true
            case "--hostile-cues": result.chatterboxConfiguration.hostileCueDetails = true
            case "--evaluation-padding": result.chatterboxConfiguration.evaluationPadding = try integer(flag, 0...(64 << 20))
            case "--upload-base": result.chatterboxConfiguration.uploadBase = try value(flag)
            case "--extra-recordings": result.chatterboxConfiguration.extraRecordings = try integer(flag, 0...1_000_000)
            default: throw UsageError(message: "unknown option '\(flag)'")
            }
            result.configuration = c
            index += 1
        }
        return result
    }
}
