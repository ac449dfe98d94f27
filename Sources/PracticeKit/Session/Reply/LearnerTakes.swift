import AudioKernel
import FoundationEssentials

/// The learner's own turns of the session, as they were sent (PCM16, 24 kHz mono), for
/// `turn.replay` ("hear me", issue 69): the newest first to stay, at most two minutes in all
/// (5.8 MB), an older turn dropped when a new one needs its room; forgotten with the session.
/// A turn no longer here may still be in the spool (not yet delivered), which
/// ``ReplayPlayback`` reads instead. On the session's queue.
struct LearnerTakes {
    static let maximumBytes = 120 * 48_000

    private var takes: [(id: String, pcm: [UInt8])] = []
    private var bytes = 0

    /// Keeps turn `id` (its WAV as it was spooled); a WAV that is not the engine's own
    /// format is not kept (it never is: the recorder writes it).
    mutating func keep(id: String, wav: [UInt8]) {
        guard let pcm = Self.pcm(of: wav), !pcm.isEmpty, pcm.count <= Self.maximumBytes else { return }
        takes.append((id, pcm))
        bytes += pcm.count
        while bytes > Self.maximumBytes, let oldest = takes.first {
            bytes -= oldest.pcm.count
            takes.removeFirst()
        }
    }

    /// The last turn kept.
    var lastID: String? { takes.last?.id }

    func pcm(of id: String) -> [UInt8]? { takes.last { $0.id == id }?.pcm }

    mutating func forget() {
        takes.removeAll()
        bytes = 0
    }

    /// A turn's samples as little-endian PCM16 bytes, nil unless it is 24 kHz mono PCM16.
    static func pcm(of wav: some Collection<UInt8>) -> [UInt8]? {
        guard let decoded = try? WAVDecoder.decode(Array(wav)), decoded.format == .speech else { return nil }
        return decoded.samples.withUnsafeBytes { Array($0) }
    }
}
