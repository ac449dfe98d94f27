import Foundation
import SimulatorKit

/// practice-sim: the practice backend's contract on a loopback port, for the daemon's
/// tests, the demo and development without the real server.
@main
struct PracticeSim {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.contains("--help") || arguments.contains("-h") {
            print(SimulatorCommandLine.usage)
            return
        }
        let options: SimulatorCommandLine
        do {
            options = try SimulatorCommandLine.parse(arguments)
        } catch {
            FileHandle.standardError.write(Data("practice-sim: \(error)\n(see practice-sim --help)\n".utf8))
            exit(64)  // EX_USAGE
        }
        if options.chatterbox { serveChatterbox(options) }
        guard let directory = options.samplesDirectory ?? SpeechLibrary.defaultDirectory() else {
            fail("no speech samples: pass --samples DIR (samples/sim of the checkout)")
        }
        let speech: SpeechLibrary
        do { speech = try SpeechLibrary.load(directory: directory) } catch { fail("cannot load speech from \(directory): \(error)") }

        let simulator = PracticeSimulator(configuration: options.configuration, speech: speech)
        simulator.controlRoutesEnabled = options.controlRoutes
        if !options.quiet {
            simulator.logLine = { line in FileHandle.standardError.write(Data("practice-sim: \(line)\n".utf8)) }
        }
        serve(simulator.handle, options, name: "practice-sim", details: "pace \(options.configuration.pace)") { simulator.shutdown() }
    }

    /// practice-sim --chatterbox: the Chatterbox backend on the port instead.
    static func serveChatterbox(_ options: SimulatorCommandLine) -> Never {
        let simulator = ChatterboxSimulator(configuration: options.chatterboxConfiguration, seed: options.configuration.seed)
        simulator.controlRoutesEnabled = options.controlRoutes
        if !options.quiet {
            simulator.logLine = { line in FileHandle.standardError.write(Data("practice-sim: \(line)\n".utf8)) }
        }
        serve(simulator.handle, options, name: "practice-sim (chatterbox)", bound: { simulator.baseURL = "http://\(options.host):\($0)" }) {}
    }

    /// Serves `handler` until SIGTERM or SIGINT: the port file, the banner, the signals.
    static func serve(_ handler: @escaping HTTPServer.Handler, _ options: SimulatorCommandLine, name: String, details: String? = nil,
                      bound: (UInt16) -> Void = { _ in }, shutdown: @escaping @Sendable () -> Void) -> Never {
        let server = HTTPServer(host: options.host, port: options.port, handler: handler)
        let port: UInt16
        do { port = try server.start() } catch { fail("\(error)") }
        bound(port)
        // Written unbuffered, so that a reader on a pipe sees it at once.
        let settings = ["seed \(options.configuration.seed)", details].compactMap { $0 }.joined(separator: ", ")
        announce(port, banner: "\(name) listening on http://\(options.host):\(port) (\(settings))\n", options) {
            shutdown()
            server.stop()
        }
        dispatchMain()
    }

    /// The port file, the banner, and the signals that stop the server.
    static func announce(_ port: UInt16, banner: String, _ options: SimulatorCommandLine, shutdown: @escaping @Sendable () -> Void) {
        if let file = options.portFile {
            // Written whole under a temporary name, then renamed: a reader never sees half.
            let temporary = file + ".tmp"
            do {
                try "\(port)\n".write(toFile: temporary, atomically: false, encoding: .utf8)
                guard rename(temporary, file) == 0 else { fail("cannot write \(file): \(String(cString: strerror(errno)))") }
            } catch { fail("cannot write \(file): \(error)") }
        }
        FileHandle.standardOutput.write(Data(banner.utf8))

        // SIGTERM and SIGINT stop the server: connections are closed, then the process exits.
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        let stop = { @Sendable in
            shutdown()
            exit(0)
        }
        signalSources = [SIGTERM, SIGINT].map { number -> DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler(handler: stop)
            source.resume()
            return source
        }
    }

    /// Alive as long as the process (see practiced's: `withExtendedLifetime` around
    /// `dispatchMain()` let the release build release them, and SIGTERM did nothing).
    nonisolated(unsafe) static var signalSources: [DispatchSourceSignal] = []

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("practice-sim: \(message)\n".utf8))
        exit(1)
    }
}
