import Dispatch
import FoundationEssentials
import Glibc
import PracticeControl
import PracticeKit
import PracticeProtocol

/// practiced: wiring only. Reads the configuration, starts the daemon, maps signals
/// (SIGTERM/SIGINT stop, SIGHUP reloads) and exits with sysexits-style codes.
@main
struct Practiced {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let loader = ConfigurationLoader()
        let loaded: ConfigurationLoader.Result
        do {
            loaded = try loader.load(arguments: arguments)
        } catch {
            fail("\(error)", code: 78)  // EX_CONFIG
        }
        switch loaded.action {
        case .help:
            print(ConfigurationLoader.usage)
            return
        case .version:
            print("practiced \(PracticeDaemon.version) (protocol \(ControlProtocol.identifier))")
            return
        case .checkConfig:
            print("# configuration is valid\(loaded.file.map { " (file \($0))" } ?? " (no config file)")")
            for (key, value) in ConfigurationLoader.describe(loaded.configuration) { print("\(key) = \(value)") }
            return
        case .printSchema:
            print(ProtocolSchema.text, terminator: "")
            return
        case .printProtocolReference:
            print(ProtocolReference.markdown, terminator: "")
            return
        case .printProtocolModule:
            print(ProtocolJavaScriptModule.text, terminator: "")
            return
        case .run:
            break
        }

        // Before the daemon allocates anything large (the models' files): see HeapPolicy.
        HeapPolicy.apply()
        signal(SIGPIPE, SIG_IGN)
        for number in [SIGTERM, SIGINT, SIGHUP] { signal(number, SIG_IGN) }  // handled by dispatch sources
        let daemon = PracticeDaemon(configuration: loaded.configuration)
        let stop = { @Sendable (number: Int32) in
            daemon.stop()
            exit(0)
        }
        let reload = { @Sendable in
            do {
                daemon.reload(try loader.load(arguments: loaded.arguments).configuration)
            } catch {
                daemon.reloadFailed(error)
            }
        }
        // Before start(): READY=1 goes out from there, and a SIGHUP or SIGTERM sent the moment
        // it does must find its source (they are ignored until then, and would be lost).
        signalSources = [SIGTERM, SIGINT, SIGHUP].map { number -> DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler { number == SIGHUP ? reload() : stop(number) }
            source.resume()
            return source
        }
        // The daemon starts on the main queue, after dispatchMain() has parked the main
        // thread. As it parks it, libdispatch makes the main queue's wake-up descriptor (an
        // eventfd, `_dispatch_runloop_queue_handle_init`) and traps if it cannot: clients
        // let in by READY=1, or already waiting on an activated socket, could use up the
        // descriptors first (CI: SIGILL with 56 clients at a 48-descriptor limit). This
        // async is the first work for the main queue, which makes that descriptor now, while
        // there are descriptors to spare, and the daemon is started only after it.
        DispatchQueue.main.async {
            do {
                try daemon.start()
            } catch let error as ControlSocketError where error.alreadyRunning {
                fail("\(error)", code: 75)  // EX_TEMPFAIL: another instance owns the socket
            } catch let error as ConfigurationError {
                fail("\(error)", code: 78)
            } catch {
                fail("cannot start: \(error)", code: 1)
            }
        }
        dispatchMain()
    }

    /// The signal sources, alive as long as the process. `withExtendedLifetime(sources) {
    /// dispatchMain() }` did not keep them in the release build: `dispatchMain` never
    /// returns, so the optimizer ended their lifetime at the call, the released sources were
    /// cancelled, and SIGTERM (ignored so that the sources get it) did nothing.
    nonisolated(unsafe) static var signalSources: [DispatchSourceSignal] = []

    static func fail(_ message: String, code: Int32) -> Never {
        let line = Array("practiced: \(message)\n".utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(code)
    }
}
