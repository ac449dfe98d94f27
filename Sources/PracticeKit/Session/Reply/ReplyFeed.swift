import AudioKernel
import Dispatch
import FoundationEssentials

/// The part of a reply the backend's callback queue touches: it starts the speaker on the
/// first chunk and queues every chunk, unless the reply was stopped meanwhile. The audio
/// goes from the stream to the speaker without waiting for the session's queue.
final class ReplyFeed: @unchecked Sendable {
    private let lock = Lock()
    private let audio: any SessionAudio
    private var number: Int?
    private var stopped = false
    private var ended = false
    private var sawAudio = false

    init(audio: any SessionAudio) { self.audio = audio }

    /// Queues a chunk; for the reply's first chunk, the time it came (uptime ns).
    func enqueue(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        // Taken before the chunk is queued: a speaker without a clock (a file) starts the
        // sound on its own thread the moment the chunk lands, so a time taken after
        // `enqueue` could be later than the sound's `started`.
        let arrived = DispatchTime.now().uptimeNanoseconds
        return lock.withLock {
            guard !stopped, !ended else { return nil }
            if number == nil { number = audio.beginReply() }
            if let number { audio.enqueue(bytes, reply: number) }
            guard !sawAudio else { return nil }
            sawAudio = true
            return arrived
        }
    }

    /// Stops the sound at once; later chunks are dropped.
    func stop() {
        lock.withLock {
            stopped = true
            if let number { audio.stopReply(number) }
        }
    }

    /// No more chunks: the speaker plays out what it has. Returns whether anything
    /// plays (false: no audio came, or it was stopped).
    func end() -> Bool {
        lock.withLock {
            ended = true
            guard let number, !stopped else { return false }
            audio.endReply(number)
            return true
        }
    }

    func owns(_ reply: Int) -> Bool { lock.withLock { number == reply } }
}
