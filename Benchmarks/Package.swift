// swift-tools-version: 6.1
//
// Benchmarks of practiced, in their own package so that their tooling never becomes a
// dependency of the library or the daemon. Run from this folder:
//   swift package benchmark                      (all benchmarks, table output)
//   swift package benchmark thresholds check     (CI: malloc counts against Thresholds/)
import PackageDescription

let package = Package(
    name: "practiced-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "practiced", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // The C references the Swift kernels are measured against: plain C loops that the
        // C compiler auto-vectorizes for the same baseline CPU (no -march=native). Run with
        // `-Xcc -O3` as docs/performance.md shows; SwiftPM's release default for C is -O2.
        .target(name: "CReference"),
        // Short runs for CI's allocation gate (PRACTICED_BENCHMARK_GATE).
        .target(name: "BenchmarkGate", dependencies: [.product(name: "Benchmark", package: "benchmark")]),
        .executableTarget(
            name: "KernelBenchmarks",
            dependencies: [
                .product(name: "AudioKernel", package: "practiced"),
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkGate",
                "CReference",
            ],
            path: "Benchmarks/KernelBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "DeviceBenchmarks",
            dependencies: [
                .product(name: "AudioKernel", package: "practiced"),
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkGate",
            ],
            path: "Benchmarks/DeviceBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "EngineBenchmarks",
            dependencies: [
                .product(name: "AudioKernel", package: "practiced"),
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkGate",
            ],
            path: "Benchmarks/EngineBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // libsoxr, speexdsp and libsamplerate, the references of the resampler benchmark.
        .systemLibrary(name: "CResamplers", path: "Sources/CResamplers",
                       providers: [.apt(["libsoxr-dev", "libspeexdsp-dev", "libsamplerate0-dev"])]),
        .executableTarget(
            name: "ResamplerBenchmarks",
            dependencies: [
                .product(name: "AudioKernel", package: "practiced"),
                .product(name: "AudioMeasurement", package: "practiced"),
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkGate",
                "CResamplers",
            ],
            path: "Benchmarks/ResamplerBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Rubber Band, the reference of the time-stretch benchmark.
        .systemLibrary(name: "CRubberBand", path: "Sources/CRubberBand", providers: [.apt(["librubberband-dev"])]),
        .executableTarget(
            name: "TimeStretchBenchmarks",
            dependencies: [
                .product(name: "AudioKernel", package: "practiced"),
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkGate",
                "CRubberBand",
            ],
            path: "Benchmarks/TimeStretchBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // libavcodec, the reference of the AAC benchmark.
        .systemLibrary(name: "CAVCodec", path: "Sources/CAVCodec", providers: [.apt(["libavcodec-dev", "libavutil-dev"])]),
        .executableTarget(
            name: "AACBenchmarks",
            dependencies: [
                .product(name: "AudioKernel", package: "practiced"),
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkGate",
                "CAVCodec",
            ],
            path: "Benchmarks/AACBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "SpeechModelBenchmarks",
            dependencies: [
                .product(name: "SpeechModels", package: "practiced"),
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkGate",
            ],
            path: "Benchmarks/SpeechModelBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "SSEBenchmarks",
            dependencies: [
                .product(name: "PracticeNet", package: "practiced"),
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkGate",
            ],
            path: "Benchmarks/SSEBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
