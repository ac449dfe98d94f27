import CFuzzerDriver

#if canImport(Glibc)
import Glibc
#endif

/// The entry point every fuzz target shares. Built with `-DFUZZING` (see `.ci/fuzz`) it
/// hands control to libFuzzer; otherwise it replays the files named on the command line, a
/// crash reproducer. A target calls ``run(_:)`` from its `@main` and defines the
/// `LLVMFuzzerTestOneInput` symbol itself (a symbol must live in the executable).
public enum FuzzMain {
    /// The check of the running target; set once, before any input runs.
    nonisolated(unsafe) private static var check: ((UnsafeRawBufferPointer) -> Void)?

    /// Runs `check` on every input, under libFuzzer or over the files given.
    public static func run(_ check: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
        self.check = check
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(practiced_fuzzer_run(&argc, &argv) { data, size in
            FuzzMain.runOne(UnsafeRawBufferPointer(start: data, count: size))
            return 0
        })
        #else
        let paths = CommandLine.arguments.dropFirst()
        if paths.isEmpty {
            printError("usage: \(CommandLine.arguments[0]) FILE...  (build with .ci/fuzz to fuzz; see docs/development.md)")
            exit(2)
        }
        for path in paths {
            guard let file = fopen(path, "rb") else { fail("cannot open \(path)") }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&chunk, 1, chunk.count, file)
                if n <= 0 { break }
                bytes += chunk[0..<n]
            }
            fclose(file)
            bytes.withUnsafeBytes { runOne($0) }
            print("\(path): ok")
        }
        exit(0)
        #endif
    }

    /// Runs the check on one input (what `LLVMFuzzerTestOneInput` calls).
    public static func runOne(_ bytes: UnsafeRawBufferPointer) {
        check?(bytes)
    }

    /// Reports a broken invariant and aborts, which libFuzzer records as a finding.
    public static func fail(_ message: String) -> Never {
        printError("fuzz check failed: \(message)")
        abort()
    }

    static func printError(_ message: String) {
        var line = message + "\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
}
