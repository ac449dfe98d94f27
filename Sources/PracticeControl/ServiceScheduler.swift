import Dispatch
import FoundationEssentials
import Glibc

/// Which client's line the control server serves next: the one served least lately. Each
/// client with lines waiting (and within its limits) is in the ready list; every turn
/// serves one line of the client whose recent service, decayed with a time constant of a
/// second, is smallest, then gives the queue back (reads, writes and other work go between
/// turns). A client that asks now and then is thus served at its next turn, ahead of
/// clients that pipeline: served in plain rotation, 64 flooding clients held such a ping
/// behind one line of each, 20-30 ms at the 99th percentile, and a flood of `status` alone
/// 25 ms at the median. Nobody starves: every line served raises its client's place.
///
/// The order is kept as one number per client that does not change while it waits:
/// `key = ln(service at t) + t / τ`, where service decays as `e^(−Δt/τ)`; comparing keys
/// compares the services decayed to any common moment.
///
/// Confined to the server's queue.
final class ServiceScheduler: @unchecked Sendable {
    private let queue: DispatchQueue
    private var ready: [any ServiceClient] = []
    private var turnPosted = false
    /// The decay's time constant, in seconds.
    private static let tau = 1.0

    init(queue: DispatchQueue) { self.queue = queue }

    /// `connection` has a line it may be served now.
    func add(_ connection: any ServiceClient) {
        ready.append(connection)
        postTurn()
    }

    /// A line of `connection` was served at `now` (uptime nanoseconds): its place moves back.
    func served(_ connection: any ServiceClient, now: UInt64) {
        let t = Double(now) / 1e9 / Self.tau
        // The service so far, decayed to now, plus this line.
        let decayed = connection.serviceKey == -.infinity ? 0 : exp(connection.serviceKey - t)
        connection.serviceKey = log(decayed + 1) + t
    }

    private func postTurn() {
        guard !turnPosted, !ready.isEmpty else { return }
        turnPosted = true
        queue.async { [self] in
            turnPosted = false
            turn()
        }
    }

    /// Serves one line of the least-served ready client.
    private func turn() {
        guard !ready.isEmpty else { return }
        var chosen = 0
        for index in ready.indices.dropFirst() where ready[index].serviceKey < ready[chosen].serviceKey { chosen = index }
        let connection = ready.remove(at: chosen)
        connection.takeTurn()
        postTurn()
    }
}

/// A client the scheduler serves: a control connection (or a test's stand-in).
protocol ServiceClient: AnyObject {
    /// Its place in the order of service: lower goes first; −∞ before its first line.
    var serviceKey: Double { get set }
    /// Its turn: it serves one line (telling ``ServiceScheduler/served(_:now:)``) and
    /// adds itself again when it has more.
    func takeTurn()
}
