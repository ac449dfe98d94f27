import Dispatch
import FoundationEssentials
import KioskBridge
#if canImport(Glibc)
import Glibc
#endif

// practiced-kiosk-bridge: the learner UI's files over HTTP on loopback, and the page's
// WebSocket relayed to practiced's control socket once it offers this start's token
// (practiced-kiosk-ui(1) starts it; docs/kiosk-ui.md). One process, one thread.

let usage = """
    usage: practiced-kiosk-bridge --web DIR --unix-target SOCKET --token-file LAUNCH_PAGE [--listen 127.0.0.1:PORT]
      --web DIR               the UI's files (index.html, js/, style.css)
      --unix-target SOCKET    practiced's control socket
      --token-file FILE       the launch page that holds this start's token (#token=<64 hex digits>)
      --listen HOST:PORT      where to listen (default 127.0.0.1:8642; loopback only is the point)
      --max-connections N     connections at once (default 32)
    """

/// One line on stderr (the journal under systemd), written whole.
func logLine(_ text: String) {
    let line = Array("practiced-kiosk-bridge: \(text)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func fail(_ message: String, status: Int32) -> Never {
    logLine(message)
    exit(status)
}

var options: [String: String] = [:]
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument == "-h" || argument == "--help" { print(usage); exit(0) }
    guard ["--web", "--unix-target", "--token-file", "--listen", "--max-connections"].contains(argument) else {
        fail("unknown option \(argument)\n\(usage)", status: 64)
    }
    guard let value = arguments.popFirst() else { fail("\(argument) needs a value", status: 64) }
    options[argument] = value
}
guard let web = options["--web"], let target = options["--unix-target"], let tokenFile = options["--token-file"] else {
    fail("--web, --unix-target and --token-file are needed\n\(usage)", status: 64)
}
let listen = (options["--listen"] ?? "127.0.0.1:8642").split(separator: ":")
guard listen.count == 2, let port = UInt16(listen[1]) else { fail("--listen wants HOST:PORT", status: 64) }
let token: BridgeToken
do { token = try BridgeToken(launchPageAt: tokenFile) } catch { fail("\(error)", status: 66) }

var configuration = BridgeServer.Configuration(webRoot: web, unixTarget: target, token: token)
configuration.host = String(listen[0])
configuration.port = port
if let limit = options["--max-connections"] {
    guard let value = Int(limit), (1...1024).contains(value) else { fail("--max-connections wants 1 to 1024", status: 64) }
    configuration.maximumConnections = value
}

// The log is stderr (the journal under systemd); it never holds the token.
let server: BridgeServer
do {
    server = try BridgeServer(configuration, log: logLine)
} catch {
    fail("\(error)", status: 69)
}

// SIGTERM and SIGINT end the loop (ignored, so that the dispatch sources get them). Made in a
// nonisolated function: a handler written in top-level code would belong to the main actor,
// whose thread is in poll(2), and trap when run on the sources' queue.
nonisolated func stopOnSignals(_ server: BridgeServer) -> [DispatchSourceSignal] {
    signal(SIGPIPE, SIG_IGN)
    let queue = DispatchQueue(label: "signals")
    return [SIGTERM, SIGINT].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
        source.setEventHandler { server.stop() }
        source.resume()
        return source
    }
}
let signalSources = stopOnSignals(server)
server.run()
signalSources.forEach { $0.cancel() }
exit(0)
