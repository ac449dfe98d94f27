import AudioKernel
import Foundation
import PracticeControl
import PracticeKit
import PracticeNet
import PracticeProtocol
import SimulatorKit
import TestSupport
import XCTest

/// A whole kiosk with every part real: PulseAudio headless with a pipe-source microphone
/// (`mic`, fed in real time by ``MicrophoneFeeder``) and a null-sink speaker (`kiosk`, whose
/// monitor the rig records), practice-sim on loopback TCP, and `practiced` as a process
/// using both, driven by clients on its socket.
final class KioskRig {
    /// What sound hardware the kiosk has.
    enum Hardware {
        /// The engine's own format: a 24 kHz mono speaker and microphone (nothing converted).
        case speech
        /// A USB speaker at 48 kHz stereo float32 and a USB microphone at 48 kHz stereo s16:
        /// the engine converts both ways.
        case usb48kStereo
        /// A speaker the microphone hears, with the sound server's echo canceller between
        /// them (``EchoCancellingRoom``); the learner speaks into the room (``learnerSays(_:)``).
        case echoCancellingRoom
    }

    let pulse: PulseAudioServer
    private(set) var microphone: MicrophoneFeeder
    let sim: SimulatorHarness
    /// The Chatterbox backend, when the kiosk practises cues (`backend.kind = chatterbox`).
    private(set) var cues: ChatterboxHarness?
    private(set) var daemon: DaemonHarness!
    let directory: String
    private let speaker: CaptureDevice
    /// Samples the speaker played (the `kiosk.monitor` source), louder than a whisper.
    let heard = Awaitable((loud: 0, total: 0))
    /// When the monitor heard a sound begin after quiet (uptime ns, as the period arrived:
    /// the monitor's own latency is in it).
    let soundOnsets = Awaitable([UInt64]())
    private let extraArguments: [String]

    static let learner: [Int16] = try! WAVDecoder.decode(contentsOfFile: SimulatorHarness.samplesDirectory + "/learner-1.wav").samples
    static let learner2: [Int16] = try! WAVDecoder.decode(contentsOfFile: SimulatorHarness.samplesDirectory + "/learner-2.wav").samples

    let hardware: Hardware
    /// The sink the daemon plays to, the one whose monitor the rig hears, and the source the
    /// daemon records.
    private var sinkName: String {
        switch hardware {
        case .speech: "kiosk"
        case .usb48kStereo: "usbspeaker"
        case .echoCancellingRoom: EchoCancellingRoom.speaker
        }
    }
    private var sourceName: String { hardware == .echoCancellingRoom ? EchoCancellingRoom.microphone : "mic" }
    /// The learner's voice in the echo-cancelling room.
    private var learnerVoice: StreamingPlayer?

    /// With `tls`, the daemon reaches practice-sim as `https://localhost` through Debian's
    /// stunnel4, trusting the test CA (`--backend-ca-file`).
    private(set) var tunnel: TLSTunnel?
    private static let certificates = try! TestCertificates()

    init(arguments: [String] = [], hardware: Hardware = .speech, tls: Bool = false, chatterbox: ChatterboxHarness? = nil,
         tutor: SpeechLibrary = SimulatorHarness.speech, _ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
        cues = chatterbox
        ProtocolConformance.install()
        self.hardware = hardware
        pulse = try PulseAudioServer()
        try pulse.start()
        try Self.plugSpeaker(pulse, hardware)
        microphone = try Self.plugMicrophone(pulse, hardware)
        sim = try SimulatorHarness(speech: tutor, configure)
        if tls { tunnel = try TLSTunnel(to: UInt16(sim.baseURL.port!), certificates: Self.certificates) }
        directory = DaemonHarness.makeDirectory()
        var stream = AudioStreamConfiguration()
        stream.pulseServer = pulse.address
        // The rig hears the speaker's monitor at 24 kHz mono, whatever the sink runs.
        let heardSink = hardware == .echoCancellingRoom ? EchoCancellingRoom.loudspeaker : hardware == .speech ? "kiosk" : "usbspeaker"
        speaker = try CaptureDevice(name: AudioDeviceName(parsing: "pulse:\(heardSink).monitor"), configuration: stream)
        if hardware == .echoCancellingRoom {
            learnerVoice = try StreamingPlayer(device: AudioDeviceName(parsing: "pulse:\(EchoCancellingRoom.room)"), stream: stream) { _ in }
            try learnerVoice?.start()
        }
        let (heard, onsets) = (heard, soundOnsets)
        let quietSamples = Awaitable(Int.max)
        try speaker.start(onPeriod: { period in
            let loud = period.reduce(0) { $0 + (abs(Int($1)) > 500 ? 1 : 0) }
            heard.update {
                $0.loud += loud
                $0.total += period.count
            }
            // A sound's onset: a loud period after a tenth of a second of quiet.
            let quiet = quietSamples.value
            if loud > 0, quiet >= 2_400 { onsets.update { $0.append(DispatchTime.now().uptimeNanoseconds) } }
            quietSamples.update { $0 = loud > 0 ? 0 : quiet &+ period.count }
        }, onEvent: { _ in })
        extraArguments = arguments
        try startDaemon()
    }

    /// Starts (or restarts, after a kill) the daemon on the same directory and spool.
    func startDaemon() throws {
        let tlsArguments = tunnel.map { _ in ["--backend-ca-file", Self.certificates.caFile] } ?? []
        let cueArguments = cues.map { _ in ["--backend-kind", "chatterbox", "--cue-poll-ms", "100"] } ?? []
        daemon = try DaemonHarness(backend: tunnel?.url(host: "localhost") ?? cues?.baseURL ?? sim.baseURL, arguments: cueArguments + [
            "--capture-device", "pulse:\(sourceName)", "--playback-device", "pulse:\(sinkName)", "--review-poll-ms", "200", "--turn-retry-s", "20",
        ] + tlsArguments + extraArguments, environment: ["PULSE_SERVER": pulse.address], directory: directory)
        daemon.keepsDirectory = true
    }

    /// The microphone: a pipe source `mic` and its feeder.
    /// The USB speaker, a null sink of its own (the server's `kiosk` is 24 kHz mono).
    private static func plugSpeaker(_ pulse: PulseAudioServer, _ hardware: Hardware) throws {
        if hardware == .echoCancellingRoom { _ = try EchoCancellingRoom(on: pulse) }
        guard hardware == .usb48kStereo else { return }
        _ = try pulse.pactl(["load-module", "module-null-sink", "sink_name=usbspeaker", "format=float32le", "rate=48000", "channels=2",
                             "norewinds=1"])
    }

    private static func plugMicrophone(_ pulse: PulseAudioServer, _ hardware: Hardware) throws -> MicrophoneFeeder {
        let fifo = pulse.directory.appendingPathComponent("mic.fifo").path
        // PulseAudio 16 refuses a FIFO it did not create, and a killed server leaves its own.
        unlink(fifo)
        let (rate, channels) = hardware == .speech ? (24_000, 1) : (48_000, 2)
        try pulse.pactl(["load-module", "module-pipe-source", "source_name=mic", "file=\(fifo)", "format=s16le", "rate=\(rate)", "channels=\(channels)"])
        // Capturing while the daemon's stream rests (the kiosk speaking), as a real microphone does.
        return try MicrophoneFeeder(fifo: fifo, rate: rate, channels: channels, keepCapturing: (pulse.address, "mic"))
    }

    /// Both devices gone at once, as when the sound server crashes (SIGKILL).
    func crashAudioServer() { pulse.kill() }

    /// The sound server back, with its microphone (a new feeder: speech queued is lost).
    func restartAudioServer() throws {
        microphone.stop()
        try pulse.start()
        try Self.plugSpeaker(pulse, hardware)
        microphone = try Self.plugMicrophone(pulse, hardware)
    }

    /// The learner speaks in the echo-cancelling room: the microphone hears it with the
    /// speaker's echo.
    func learnerSays(_ samples: [Int16]) {
        guard let learnerVoice else { return XCTFail("only the echo-cancelling room has a learner's voice") }
        learnerVoice.beginReply()
        _ = samples.withUnsafeBytes { learnerVoice.enqueue($0) }
        learnerVoice.endReply()
    }

    /// One push-to-talk turn: `turn.start`, `samples` into the microphone (the learner's
    /// words by default), `turn.stop` once they were all spoken.
    func pushToTalk(_ control: ControlClient, _ samples: [Int16] = KioskRig.learner, file: StaticString = #filePath, line: UInt = #line) throws {
        _ = try control.request(Command.TurnStart.self)
        let before = microphone.spoken.value
        microphone.say(samples)
        XCTAssertTrue(microphone.spoken.wait(timeout: 10) { $0 >= before + samples.count }, file: file, line: line)
        _ = try control.request(Command.TurnStop.self)
    }

    func stop() {
        learnerVoice?.shutdown()
        microphone.stop()
        speaker.stop()
        daemon?.process.terminate(signal: SIGKILL)
        daemon = nil
        pulse.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A client that records every event of the topics it follows, on its own thread.
    func watcher(topics: [String] = ["session", "playback"]) throws -> EventWatcher {
        try EventWatcher(client: daemon.client(), topics: topics)
    }

    /// The practice-sim requests to `/chat` so far.
    var chatRequests: [JSONValue] { sim.simulator.requestLog.filter { $0["path"]?.stringValue?.hasSuffix("/chat") == true } }

    /// Loud samples the speaker has played so far.
    var loudSamples: Int { heard.value.loud }
}

/// Collects events in arrival order; tests wait for one with a deadline.
final class EventWatcher: @unchecked Sendable {
    private let client: ControlClient
    let events = Awaitable([JSONValue]())
    private let running = Awaitable(true)
    private var thread: TestThread?

    init(client: ControlClient, topics: [String]) throws {
        self.client = client
        _ = try client.request(Command.Subscribe.self, ["topics": .array(topics.map { .string($0) })])
        // The thread holds what it needs, not the watcher: `deinit` stops it.
        struct Reader: @unchecked Sendable { let client: ControlClient }
        let reader = Reader(client: client), events = events, running = running
        thread = TestThread(name: "event-watcher") {
            while running.value {
                guard let event = try? reader.client.nextEvent(timeout: 0.2) else { continue }
                var stamped = event
                if case .object(var members) = event {
                    members.append(("received_ns", .int(Int(DispatchTime.now().uptimeNanoseconds))))
                    stamped = .object(members)
                }
                events.update { $0.append(stamped) }
            }
        }
    }

    /// Stops reading; the thread ends within its 0.2 s read timeout.
    func stop() {
        running.update { $0 = false }
        if thread?.join(timeout: 10) == false { XCTFail("the event watcher's thread did not end") }
    }

    deinit { stop() }

    /// The first event named `name` after `index` (an index into `events`) that matches.
    @discardableResult
    func wait(for name: String, after index: Int = 0, timeout: Double = 20, where predicate: (JSONValue) -> Bool = { _ in true },
              file: StaticString = #filePath, line: UInt = #line) -> JSONValue? {
        var found: JSONValue?
        _ = events.wait(timeout: timeout) { list in
            found = list.dropFirst(index).first { $0["event"]?.stringValue == name && predicate($0["data"] ?? .null) }
            return found != nil
        }
        if found == nil {
            XCTFail("no \(name) within \(timeout) s; events: \(names(after: index))", file: file, line: line)
        }
        return found
    }

    /// The first event `E` after `index` that matches.
    @discardableResult
    func wait<E: ProtocolEvent>(for event: E.Type, after index: Int = 0, timeout: Double = 20, where predicate: (JSONValue) -> Bool = { _ in true },
                                file: StaticString = #filePath, line: UInt = #line) -> JSONValue? {
        wait(for: E.name, after: index, timeout: timeout, where: predicate, file: file, line: line)
    }

    func waitForStage(_ stage: String, after index: Int = 0, timeout: Double = 20, file: StaticString = #filePath, line: UInt = #line) -> JSONValue? {
        wait(for: Event.SessionStage.self, after: index, timeout: timeout, where: { $0["stage"]?.stringValue == stage }, file: file, line: line)
    }

    var count: Int { events.value.count }

    func names(after index: Int = 0) -> [String] { events.value.dropFirst(index).compactMap { $0["event"]?.stringValue } }

    func all(_ name: String, after index: Int = 0) -> [JSONValue] {
        events.value.dropFirst(index).filter { $0["event"]?.stringValue == name }.map { $0["data"] ?? .null }
    }

    func all<E: ProtocolEvent>(_ event: E.Type, after index: Int = 0) -> [JSONValue] { all(E.name, after: index) }

    func position<E: ProtocolEvent>(of event: E.Type, after index: Int = 0) -> Int? { position(of: E.name, after: index) }

    /// Position of the first event named `name` after `index`.
    func position(of name: String, after index: Int = 0) -> Int? {
        events.value.enumerated().dropFirst(index).first { $0.element["event"]?.stringValue == name }?.offset
    }
}
