// swift-tools-version: 6.1
//
// practiced: the audio engine and daemon of a speaking-practice kiosk.
// Dependencies point one way: executables -> PracticeKit -> PracticeControl -> PracticeProtocol ->
// PracticeNet -> AudioKernel -> SpeechModels, C modules; PracticeSupport (log, clock, files) under
// the practice modules.
// The shipped targets depend on nothing beyond the toolchain and the system's ALSA,
// PulseAudio and OpenSSL libraries; benchmarks live in their own package under Benchmarks/.
import PackageDescription

let package = Package(
    name: "practiced",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AudioKernel", targets: ["AudioKernel"]),
        .library(name: "PracticeNet", targets: ["PracticeNet"]),
        .library(name: "PracticeSupport", targets: ["PracticeSupport"]),
        .library(name: "PracticeProtocol", targets: ["PracticeProtocol"]),
        .library(name: "PracticeControl", targets: ["PracticeControl"]),
        .library(name: "PracticeKit", targets: ["PracticeKit"]),
        .library(name: "SpeechModels", targets: ["SpeechModels"]),
        .executable(name: "audiokernel-demo", targets: ["audiokernel-demo"]),
        .executable(name: "practice-sim", targets: ["practice-sim"]),
        .executable(name: "practiced", targets: ["practiced"]),
        .executable(name: "practicectl", targets: ["practicectl"]),
        .executable(name: "practiced-kiosk-bridge", targets: ["practiced-kiosk-bridge"]),
        // Not shipped: the spectrum the resampler's tests and benchmarks measure with.
        .library(name: "AudioMeasurement", targets: ["AudioMeasurement"]),
    ],
    targets: [
        // The system's audio libraries, found with pkg-config.
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CPulse", pkgConfig: "libpulse", providers: [.apt(["libpulse-dev"])]),
        // The system's OpenSSL: TLS for https:// backends in the client's own transport.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // What Swift cannot import from Glibc (eventfd, per-thread counters), prefixed practiced_.
        .target(name: "CAudioShim"),

        // Sample kernels and conversion, the resampler, WAV, AAC-LC and MPEG-4, speech
        // detection, ring buffers, the capture and playback devices (ALSA, PulseAudio, WAV
        // file, null), the recorder and the streaming player. The C modules are imported
        // internally: no C type appears in its public API.
        .target(name: "AudioKernel", dependencies: ["CALSA", "CPulse", "CAudioShim", "SpeechModels"]),

        // The learned speech models, run in Swift on the weights of their ONNX files: Silero VAD
        // (is this frame speech?) and smart-turn v3.2 (does this pause end the turn?), with the
        // ONNX reader, Whisper's log-mel features and the float and int8 kernels they need.
        // Pure computation (the shim only names its helper thread): no system library, no I/O
        // beyond the bytes it is given.
        .target(name: "SpeechModels", dependencies: ["CAudioShim", "CSpeechKernels"]),
        // The package's one C of its own (issue 70): the models' integer inner loops for the
        // instruction sets baseline x86-64 lacks (AVX2, AVX-VNNI, AVX-512 VNNI), each compiled
        // for its target by clang's per-function attribute, chosen at run time from the CPU's
        // features. Kernels only: no model, no graph, no allocation.
        .target(name: "CSpeechKernels"),

        // The network layer, which knows nothing of practice: the epoll thread the daemon's
        // sockets wait on, the client's own HTTP/1.1 transport with TLS through the system's
        // OpenSSL, the SSE parser and its base64 audio payloads, JSON values.
        .target(name: "PracticeNet", dependencies: ["AudioKernel", "CAudioShim", "COpenSSL"]),

        // The control protocol, which knows no flow and no daemon: every command, event and
        // value a client and the daemon exchange, typed (the values the backends send that
        // clients are shown among them), their wire coding, the command table, and the schema,
        // reference and JavaScript module printed from them.
        .target(name: "PracticeProtocol", dependencies: ["AudioKernel", "PracticeNet", "CAudioShim"]),

        // What the daemon's parts run on, knowing no practice: the logger and its sinks, the
        // one clock (its timers, a repeating one), file paths and reads, CRC-32, printf.
        .target(name: "PracticeSupport", dependencies: ["AudioKernel"]),

        // The control socket: the Unix listener (bind, stale sockets, activation), the server
        // with its clients, limits, fair scheduling and its own commands, and the client.
        .target(name: "PracticeControl", dependencies: ["AudioKernel", "PracticeNet", "PracticeProtocol", "PracticeSupport", "CAudioShim"]),

        // The practice flows and the daemon: the backends' clients (TalkCo, Chatterbox), the
        // conversation's session and cue practice, the spool, the daemon that wires them.
        .target(name: "PracticeKit", dependencies: ["AudioKernel", "PracticeNet", "PracticeProtocol", "PracticeSupport", "PracticeControl", "CAudioShim"]),

        // practice-sim, the local stand-in for both backends (TalkCo, and Chatterbox's
        // gateway): an HTTP/1.1 server, the routes with the real servers' oddities, faults.
        .target(name: "SimulatorKit", dependencies: ["AudioKernel", "PracticeNet", "PracticeSupport", "PracticeKit"]),
        .executableTarget(name: "practice-sim", dependencies: ["SimulatorKit"]),

        // The daemon (wiring: configuration, signals, systemd) and its command-line client.
        .executableTarget(name: "practiced", dependencies: ["PracticeKit", "PracticeProtocol", "PracticeControl", "PracticeSupport"]),
        .executableTarget(name: "practicectl", dependencies: ["AudioKernel", "PracticeNet", "PracticeProtocol", "PracticeControl", "PracticeSupport", "PracticeKit"]),

        // The learner UI's bridge: its files over HTTP on loopback, and the page's WebSocket
        // (RFC 6455, checked frame by frame) relayed to the daemon's control socket once it
        // offers the start's token. One process, one poll loop; OpenSSL for SHA-1 only.
        .target(name: "KioskBridge", dependencies: ["COpenSSL"]),
        .executableTarget(name: "practiced-kiosk-bridge", dependencies: ["KioskBridge"]),

        // The kernels on a WAV file, and WAV <-> AAC-LC .m4a conversion (README, Quick start).
        .executableTarget(name: "audiokernel-demo", dependencies: ["AudioKernel", "SpeechModels"]),

        // Fuzz targets. Built normally they replay the inputs named on the command line;
        // built by `.ci/fuzz` (libFuzzer and AddressSanitizer) they fuzz.
        .target(name: "CFuzzerDriver", path: "Sources/Fuzz/CFuzzerDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzerDriver"], path: "Sources/Fuzz/FuzzSupport"),
        .executableTarget(
            name: "fuzz-wav-decoder",
            dependencies: ["AudioKernel", "FuzzSupport"],
            path: "Sources/Fuzz/WAVDecoderFuzzer"
        ),
        .executableTarget(
            name: "fuzz-mpeg4-demuxer",
            dependencies: ["AudioKernel", "FuzzSupport"],
            path: "Sources/Fuzz/MPEG4DemuxerFuzzer"
        ),
        .executableTarget(
            name: "fuzz-aac-decoder",
            dependencies: ["AudioKernel", "FuzzSupport"],
            path: "Sources/Fuzz/AACDecoderFuzzer"
        ),

        .executableTarget(
            name: "fuzz-sse-parser",
            dependencies: ["PracticeNet", "FuzzSupport"],
            path: "Sources/Fuzz/SSEParserFuzzer"
        ),

        .executableTarget(
            name: "fuzz-control-request",
            dependencies: ["PracticeProtocol", "PracticeNet", "FuzzSupport"],
            path: "Sources/Fuzz/ControlRequestFuzzer"
        ),

        .executableTarget(
            name: "fuzz-http-response",
            dependencies: ["PracticeNet", "FuzzSupport"],
            path: "Sources/Fuzz/HTTPResponseFuzzer"
        ),
        .executableTarget(
            name: "fuzz-bridge-input",
            dependencies: ["KioskBridge", "FuzzSupport"],
            path: "Sources/Fuzz/BridgeInputFuzzer"
        ),

        // What the test targets share: child processes, sound servers, practice-sim and the
        // trace replays on loopback ports, the schema every protocol line is checked against,
        // waiting on a condition with a deadline. AudioMeasurement: the resampler's spectrum.
        .target(name: "AudioMeasurement", path: "Tests/AudioMeasurement"),
        .target(name: "TestSupport", dependencies: ["AudioKernel", "PracticeNet", "PracticeProtocol", "PracticeSupport", "PracticeControl", "PracticeKit", "SimulatorKit"], path: "Tests/TestSupport"),
        .testTarget(
            name: "PracticeNetTests",
            dependencies: ["PracticeNet", "AudioKernel", "TestSupport"],
            exclude: ["Fixtures"]  // read by path: inputs kept from fuzzing runs
        ),
        // The protocol alone: its schema, its reference and the UI's module of names against
        // what is committed, every type's wire form, the request decoder.
        .testTarget(name: "PracticeProtocolTests", dependencies: ["PracticeProtocol", "PracticeNet", "TestSupport"],
                    exclude: ["Fixtures"]),  // read by path: inputs kept from fuzzing runs
        .testTarget(name: "PracticeSupportTests", dependencies: ["PracticeSupport"]),
        // The control socket alone: its parts (the line framer, the pacer, the scheduler), the
        // server on a real socket with a real client, on the test's clock.
        .testTarget(name: "PracticeControlTests", dependencies: ["PracticeControl", "PracticeProtocol", "PracticeSupport", "PracticeNet", "TestSupport"]),
        .testTarget(name: "PracticeKitTests", dependencies: ["PracticeKit", "PracticeProtocol", "PracticeSupport", "PracticeControl", "PracticeNet", "SimulatorKit", "TestSupport"]),
        // The models beside onnxruntime (PyPI, in the environment .ci/setup builds).
        .testTarget(name: "SpeechModelsTests", dependencies: ["SpeechModels", "AudioKernel", "TestSupport"]),
        .testTarget(name: "SimulatorKitTests", dependencies: ["SimulatorKit", "PracticeNet", "PracticeProtocol", "PracticeSupport", "PracticeKit"]),
        .testTarget(name: "KioskBridgeTests", dependencies: ["KioskBridge", "TestSupport"], exclude: ["Fixtures"]),
        // The daemon as a real process, with real clients on its socket.
        .testTarget(name: "PracticedTests", dependencies: ["PracticeKit", "PracticeProtocol", "PracticeControl", "PracticeSupport", "PracticeNet", "SimulatorKit", "TestSupport", "AudioMeasurement"]),
        .testTarget(
            name: "AudioKernelTests",
            dependencies: ["AudioKernel", "AudioMeasurement", "TestSupport"],
            exclude: ["Fixtures"]  // read by path: inputs kept from fuzzing runs
        ),
    ],
    swiftLanguageModes: [.v6]
)
