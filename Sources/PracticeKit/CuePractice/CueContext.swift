import Dispatch
import PracticeProtocol
import PracticeSupport

/// What the pieces of cue practice (``AnswerDelivery``, ``ResultPolling``) share, owned by
/// ``CuePractice``: the queue they all run on, the settings, the events, the clock and the
/// backend, as ``SessionContext`` is for a conversation's pieces.
protocol CueContext: AnyObject, Sendable {
    var queue: DispatchQueue { get }
    var settings: CueSettings { get }
    var metrics: Metrics { get }
    var logger: Logger { get }
    /// The clock and timers of the pieces (a test's moves by hand).
    var scheduler: any PracticeClock { get }
    /// The backend's client, with the tokens of the learner signed in.
    var client: @Sendable () -> ChatterboxClient { get }

    func publish(_ event: any ProtocolEvent)
    /// Sign-in is needed: the learner is forgotten (not the spooled answers).
    func signedOut(reason: String)
    /// An upload ended, delivered or not (a visit's end may wait for it).
    func uploadSettled()
}

extension CueContext {
    /// Runs `body` on the queue after `delay` seconds (by the scheduler's clock). The pieces
    /// hold their context unowned (it owns them): this keeps it alive until then.
    func after(_ delay: Double, _ body: @escaping @Sendable () -> Void) {
        scheduler.after(delay, on: queue) { [self] in
            withExtendedLifetime(self) { body() }
        }
    }

    /// Runs a backend call off the queue and hands its result back on the queue: the one
    /// place where cue practice leaves its queue for the client's async world.
    func call<T: Sendable>(_ body: @escaping @Sendable (ChatterboxClient) async throws -> T,
                           then: @escaping @Sendable (Result<T, ChatterboxError>) -> Void) {
        let client = client()
        Task { [self] in
            let result: Result<T, ChatterboxError>
            do { result = .success(try await body(client)) } catch let error as ChatterboxError { result = .failure(error) } catch {
                result = .failure(.backend(.invalidResponse("\(error)")))
            }
            queue.async { [self] in
                withExtendedLifetime(self) { then(result) }
            }
        }
    }
}
