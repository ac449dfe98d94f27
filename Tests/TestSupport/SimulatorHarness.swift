import AudioKernel
import Foundation
import PracticeKit
import PracticeNet
import PracticeSupport
import SimulatorKit

/// practice-sim's backend on a real loopback TCP port inside the test process, and a
/// client pointed at it. Fast by default (no pacing, no connecting window) so that tests
/// switch on exactly the behaviour they look at.
public final class SimulatorHarness {
    public let simulator: PracticeSimulator
    public private(set) var server: HTTPServer
    public let baseURL: URL
    private let port: UInt16
    /// Requests that reached the server, counted before the simulator answers them.
    public let arrived = Awaitable(0)

    public static let samplesDirectory: String = {
        // Tests/TestSupport/ → the package root.
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("samples/sim").path
    }()

    public static let speech: SpeechLibrary = try! SpeechLibrary.load(directory: samplesDirectory)

    /// `speech`: the voice practice-sim speaks with (its espeak-ng phrases unless told).
    public init(speech: SpeechLibrary = SimulatorHarness.speech, _ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
        var configuration = SimulatorConfiguration()
        configuration.pace = 0
        configuration.connectingMs = 0
        configuration.firstAudioMs = 0
        configuration.startTimeoutMs = 300
        configuration.upstreamIdleMs = 300
        configure(&configuration)
        simulator = PracticeSimulator(configuration: configuration, speech: speech)
        let simulator = simulator, arrived = arrived
        server = HTTPServer { request, writer in
            arrived.update { $0 += 1 }
            simulator.handle(request, writer)
        }
        port = try server.start()
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
    }

    /// The backend goes away (connections refused), keeping its sessions.
    public func goDown() { server.stop() }

    /// The backend comes back on the same port.
    public func comeBack() throws {
        let simulator = simulator, arrived = arrived
        server = HTTPServer(port: port) { request, writer in
            arrived.update { $0 += 1 }
            simulator.handle(request, writer)
        }
        _ = try server.start()
    }

    deinit {
        simulator.shutdown()
        server.stop()
    }

    public func client(logger: Logger = .disabled, _ configure: (inout BackendConfiguration) -> Void = { _ in }) -> BackendClient {
        BackendClient(configuration: Self.configuration(baseURL, configure), logger: logger)
    }

    /// Short deadlines and retry delays, so that a test never waits long.
    public static func configuration(_ url: URL, _ configure: (inout BackendConfiguration) -> Void = { _ in }) -> BackendConfiguration {
        var configuration = BackendConfiguration(baseURL: url)
        configuration.requestTimeout = 10
        configuration.streamIdleTimeout = 10
        configuration.streamTotalTimeout = 30
        configuration.retry.initialDelay = 0.02
        configuration.retry.maxDelay = 0.1
        configure(&configuration)
        return configuration
    }

    /// A loopback URL on a port that was just free (bound, read, closed): connections to it
    /// are refused.
    public static func closedPortURL() throws -> URL {
        let server = HTTPServer(handler: { _, _ in })
        let port = try server.start()
        server.stop()
        return URL(string: "http://127.0.0.1:\(port)")!
    }

    /// The requests the simulator logged for paths containing `fragment`.
    public func requests(_ method: String, containing fragment: String) -> [JSONValue] {
        simulator.requestLog.filter { $0["method"]?.stringValue == method && ($0["path"]?.stringValue ?? "").contains(fragment) }
    }

    /// A WAV file of the samples directory.
    public static func wav(_ name: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: samplesDirectory).appendingPathComponent("\(name).wav"))
    }

    /// A PCM16 24 kHz mono WAV of `samples`.
    public static func wav(samples: [Int16]) -> Data { Data(try! WAVEncoder.encode(samples)) }
}

/// The events of one reply, copied out of the callback (audio bytes included).
public final class ReplyRecorder: @unchecked Sendable {
    public enum Event: Equatable {
        case retrying(attempt: Int, status: Int?)
        case uploadProgress(sent: Int64, total: Int64)
        case accepted
        case transcript(String)
        case audio(Int)
        case response(String)
        case timing(String)
        case malformed(String)
        case done
    }

    private let lock = NSLock()
    private var recorded: [Event] = []
    private var pcm: [UInt8] = []
    private var audioSizes: [Int] = []
    /// Audio events so far, for waiting on them.
    private let audioEvents = Awaitable(0)

    public init() {}

    /// Waits until `count` audio events have come, at most `timeout` seconds.
    public func waitForAudioEvents(_ count: Int, timeout: Double = 10) -> Bool { audioEvents.wait(timeout: timeout) { $0 >= count } }

    public var events: [Event] { lock.withLock { recorded } }
    public var audio: [UInt8] { lock.withLock { pcm } }
    public var audioChunkSizes: [Int] { lock.withLock { audioSizes } }
    public var names: [String] {
        events.map {
            switch $0 {
            case .retrying: return "retrying"
            case .uploadProgress: return "progress"
            case .accepted: return "accepted"
            case .transcript: return "transcript"
            case .audio: return "audio"
            case .response: return "response"
            case .timing: return "timing"
            case .malformed: return "malformed"
            case .done: return "done"
            }
        }
    }

    /// The handler to give the client.
    public var handler: ReplyStream.EventHandler {
        { [self] event in
            defer { if case .audio = event { audioEvents.update { $0 += 1 } } }
            lock.withLock {
                switch event {
                case .retrying(let attempt, _, let reason): recorded.append(.retrying(attempt: attempt, status: reason.status))
                case .uploadProgress(let sent, let total): recorded.append(.uploadProgress(sent: sent, total: total))
                case .accepted: recorded.append(.accepted)
                case .transcript(let text): recorded.append(.transcript(text))
                case .audio(let bytes):
                    pcm.append(contentsOf: bytes)
                    audioSizes.append(bytes.count)
                    recorded.append(.audio(bytes.count))
                case .response(let text): recorded.append(.response(text))
                case .timing(let step, _): recorded.append(.timing(step))
                case .malformedEvent(let type, _): recorded.append(.malformed(type))
                case .done: recorded.append(.done)
                }
            }
        }
    }
}

/// A log sink that keeps every record, for checking what the network log writes.
public final class MemoryLogSink: LogSink, @unchecked Sendable {
    public init() {}
    private let lock = NSLock()
    private var stored: [LogRecord] = []
    public var records: [LogRecord] { lock.withLock { stored } }
    public func write(_ record: LogRecord) { lock.withLock { stored.append(record) } }
}
