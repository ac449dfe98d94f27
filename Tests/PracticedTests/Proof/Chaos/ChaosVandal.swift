import Foundation
import Glibc
import PracticeControl
import PracticeKit
import PracticeProtocol
import SimulatorKit

/// The clients that misbehave at the socket level: they connect and vanish (before the
/// hello, in the middle of a line, with a request in flight), hang up half-way, hold a
/// connection without a word, and subscribe to everything (level meters included) and
/// then stop reading. None of them may cost anybody else anything; the daemon disconnects
/// the silent ones and the ones that do not read.
final class ChaosVandal: @unchecked Sendable {
    private let socket: String
    private let ledger: ChaosLedger
    private var random: SeededRandom
    /// Connections held open (silent, or subscribed and not reading) until their time.
    private var held: [(fd: Int32, until: Date, client: ControlClient?)] = []

    init(seed: UInt64, socket: String, ledger: ChaosLedger) {
        self.socket = socket
        self.ledger = ledger
        random = SeededRandom(seed: seed ^ 0x5A5A_5A5A_5A5A_5A5A)
    }

    func run(until end: Date) {
        while Date() < end {
            release(before: Date())
            switch random.next() % 7 {
            case 0:
                if let descriptor = rawConnection() { Glibc.close(descriptor) }
                ledger.count("op.connect-and-vanish")
            case 1:
                if let fd = rawConnection() {
                    write(fd, "{\"id\":7,\"command\":\"sess")
                    Glibc.close(fd)
                    ledger.count("op.vanish-mid-line")
                }
            case 2:
                if let fd = rawConnection() {
                    write(fd, "{\"id\":8,\"command\":\"status\"}\n{\"id\":9,\"command\":\"devices\"}\n")
                    Glibc.close(fd)
                    ledger.count("op.vanish-with-requests")
                }
            case 3:
                if let fd = rawConnection() {
                    // Half-close: the request, then the end of what this client sends.
                    write(fd, "{\"id\":10,\"command\":\"ping\"}\n")
                    shutdown(fd, Int32(SHUT_WR))
                    held.append((fd, Date().addingTimeInterval(1), nil))
                    ledger.count("op.half-close")
                }
            case 4 where held.count < 6:
                if let fd = rawConnection() {
                    held.append((fd, Date().addingTimeInterval(Double(random.next() % 20)), nil))
                    ledger.count("op.silent-hold")
                }
            case 5 where held.count < 6:
                // Subscribes to every topic and turns the level meter on, then never reads.
                if let client = try? ControlClient(path: socket, timeout: 15) {
                    _ = try? client.request(Command.Subscribe.self, ["topics": ["level", "speech", "playback", "device", "session", "daemon"]], timeout: 15)
                    _ = try? client.request(Command.LevelWatch.self, ["enabled": true], timeout: 15)
                    held.append((client.fd, Date().addingTimeInterval(Double(5 + random.next() % 60)), client))
                    ledger.count("op.subscribe-and-stop-reading")
                }
            default:
                break
            }
            usleep(UInt32(50_000 + random.next() % 250_000))  // pacing
        }
        release(before: .distantFuture)
    }

    private func release(before date: Date) {
        held.removeAll { entry in
            guard entry.until <= date else { return false }
            if entry.client == nil { Glibc.close(entry.fd) }  // a client closes its own
            return true
        }
    }

    /// A connection without the client library (nothing read, not even the hello).
    private func rawConnection() -> Int32? {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard UnixListener.withAddress(socket, { connect(fd, $0, $1) }) == 0 else {
            Glibc.close(fd)
            return nil
        }
        return fd
    }

    private func write(_ fd: Int32, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}
