// swift-tools-version: 6.1
//
// practiced: the audio engine and daemon of a speaking-practice kiosk.
// Dependencies point one way: executables -> PracticeKit -> AudioKernel -> C modules.
// The shipped targets depend on nothing beyond the toolchain and the system's ALSA and
// PulseAudio libraries; benchmarks live in their own package under Benchmarks/.
import PackageDescription

let package = Package(
    name: "practiced",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "AudioKernel", targets: ["AudioKernel"]),
        .executable(name: "audiokernel-demo", targets: ["audiokernel-demo"]),
    ],
    targets: [
        // Sample kernels, WAV, speech detection and ring buffers. Devices, the recorder and
        // the streaming player join this target in later work, under Devices/ and Engine/.
        .target(name: "AudioKernel"),

        // A demo of the kernels on a WAV file: the README's first quick-start command.
        .executableTarget(name: "audiokernel-demo", dependencies: ["AudioKernel"]),

        // Fuzz targets. Built normally they replay the inputs named on the command line;
        // built with `-sanitize=fuzzer -DFUZZING` (see README) they run libFuzzer.
        .target(name: "CFuzzerDriver", path: "Sources/Fuzz/CFuzzerDriver"),
        .executableTarget(
            name: "fuzz-wav-decoder",
            dependencies: ["AudioKernel", "CFuzzerDriver"],
            path: "Sources/Fuzz/WAVDecoderFuzzer"
        ),

        .testTarget(
            name: "AudioKernelTests",
            dependencies: ["AudioKernel"],
            exclude: ["Fixtures"]  // read by path: inputs kept from fuzzing runs
        ),
    ],
    swiftLanguageModes: [.v6]
)
