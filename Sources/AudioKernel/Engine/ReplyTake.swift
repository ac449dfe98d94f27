/// A reply's audio as it came from the network (PCM16 little-endian, the player's format),
/// kept so that the learner can hear it again (`reply.replay`): the first
/// ``maximumSeconds`` of it, the rest counted but not kept. A 60 s take is 2.9 MB at 24 kHz
/// mono; a session keeps one (the last reply's), so a replay never waits on the network.
///
/// Appended on the network's queue (``ReplyFeed``), read on any: a lock, taken once a chunk.
public final class ReplyTake: @unchecked Sendable {
    /// The most kept: a tutor's reply is a few sentences (10–25 s in the traces); one
    /// minute keeps any of them whole at a bounded cost.
    public static let maximumSeconds = 60

    private let lock = Lock()
    private var bytes: [UInt8] = []
    private let capacity: Int
    private var dropped = 0

    /// `bytesPerSecond`: the player's format (48,000 for 24 kHz mono PCM16).
    public init(bytesPerSecond: Int, maximumSeconds: Int = ReplyTake.maximumSeconds) {
        capacity = bytesPerSecond * maximumSeconds
    }

    /// Keeps `chunk` (as far as the take has room).
    func append(_ chunk: UnsafeRawBufferPointer) {
        lock.withLock {
            let room = capacity - bytes.count
            let kept = min(room, chunk.count)
            if kept > 0 { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<kept])) }
            dropped += chunk.count - kept
        }
    }

    /// The bytes kept so far, whole samples only.
    public var pcm: [UInt8] {
        lock.withLock { bytes.count % 2 == 0 ? bytes : Array(bytes.dropLast()) }
    }

    /// Bytes kept.
    public var byteCount: Int { lock.withLock { bytes.count } }

    /// Bytes that came past ``maximumSeconds`` and were not kept.
    public var droppedBytes: Int { lock.withLock { dropped } }
}
