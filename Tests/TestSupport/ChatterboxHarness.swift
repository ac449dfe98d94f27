import Foundation
import PracticeKit
import SimulatorKit

/// practice-sim's Chatterbox backend in the test process, on a loopback port, with fast
/// results (transcripts in 0.3 s, evaluations in 0.6 s, instead of the traces' 4 and 11).
public final class ChatterboxHarness {
    public let simulator: ChatterboxSimulator
    public let server: HTTPServer
    public let baseURL: URL

    public convenience init(_ configure: (inout ChatterboxSimulatorConfiguration) -> Void = { _ in }) throws {
        try self.init(now: { Date().timeIntervalSince1970 }, configure)
    }

    /// `now`: the simulator's clock (seconds since 1970), for tests that hold time still.
    public init(now: @escaping @Sendable () -> Double, _ configure: (inout ChatterboxSimulatorConfiguration) -> Void) throws {
        var configuration = ChatterboxSimulatorConfiguration()
        configuration.transcriptionSeconds = 0.3
        configuration.evaluationSeconds = 0.6
        configure(&configuration)
        simulator = ChatterboxSimulator(configuration: configuration, now: now)
        let simulator = simulator
        server = HTTPServer { request, writer in simulator.handle(request, writer) }
        let port = try server.start()
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
        simulator.baseURL = baseURL.absoluteString
    }

    deinit { server.stop() }

    /// A client of the simulator keeping its tokens in `stateDirectory`.
    public func client(stateDirectory: String) -> ChatterboxClient {
        ChatterboxClient(configuration: SimulatorHarness.configuration(baseURL) { $0.retry = .none },
                         tokens: ChatterboxTokenStore(stateDirectory: stateDirectory))
    }
}
