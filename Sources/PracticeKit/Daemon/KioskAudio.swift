import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc

/// What a session needs of the microphone and the speaker. ``KioskAudio`` is the real
/// one; unit tests of the session pass their own.
public protocol SessionAudio: ReplySpeakerProvider {
    /// Stops whatever plays; whether something did.
    func stopAll() -> Bool
    /// Starts a recording, push-to-talk or hands-free: its number, which the turn it
    /// yields carries (``RecordedTurn/recording``); nil when there is no microphone.
    func startRecording(handsFree: Bool) -> UInt64?
    /// Ends (push-to-talk) or drops the recording in progress; false when there is no microphone.
    func record(_ command: RecorderCommand) -> Bool
    /// Whether the microphone is echo-cancelled, so that the learner may interrupt the
    /// tutor by speaking (voice barge-in).
    var inputIsEchoCancelled: Bool { get }
    /// Plays `pcm` (24 kHz mono PCM16, all at hand: a reply kept for a replay) again at
    /// `rate`, as a sound of its own that starts without the jitter lead; the player's
    /// number for it, nil when there is no speaker.
    func replay(_ pcm: [UInt8], rate: Double) -> Int?
    /// Stops sound `number` (a replay) if it is still the one playing.
    func stop(sound number: Int)
    /// The rate replies play at (`playback.rate`).
    var playbackRate: Double { get }
}

public enum RecorderCommand: Sendable {
    case end, cancel
}

/// The daemon's microphone and speaker as the session sees them. The devices come and go
/// (reopened after a failure, replaced on reload): a lock guards which ones are attached.
/// Whether a reply or a clip is still the one playing is the player's alone to know: every
/// call names its sound by the number the player gave it, and the player drops what
/// belongs to a sound it has stopped, ended or replaced (``StreamingPlayer/enqueue(_:reply:)``).
public final class KioskAudio: SessionAudio, @unchecked Sendable {
    private let lock = Lock()
    private var attachedPlayer: StreamingPlayer?
    private var recorder: Recorder?
    private var rate = 1.0
    /// Where a replay is fed to the player, piece by piece as it has room.
    private let feeder = DispatchQueue(label: "practiced.replay")

    public init() {}

    /// A player reopened or replaced plays at the rate in force.
    public func attach(player: StreamingPlayer?) {
        lock.withLock {
            attachedPlayer = player
            try? player?.setPlaybackRate(rate)
        }
    }
    public func attach(recorder: Recorder?) { lock.withLock { self.recorder = recorder } }

    private var player: StreamingPlayer? { lock.withLock { attachedPlayer } }

    public func beginReply() -> SpeakerReply? {
        guard let player else { return nil }
        return SpeakerReply(speaker: player, number: player.beginReply())
    }

    public func stopAll() -> Bool {
        guard let player else { return false }
        let playing = player.isActive || player.isTakingSound
        player.stop()
        player.stopMix()
        return playing
    }

    /// A clip being streamed (the `play` command): played as a reply of its own, or mixed
    /// over whatever plays.
    public struct Clip: Sendable, Equatable {
        public let number: Int
        public let mixed: Bool
    }

    /// Starts a clip streamed in pieces; feed it with ``enqueue(samples:clip:)`` and end it
    /// with ``endClip(_:)``. A clip plays at its own speed, whatever `playback.rate` says of
    /// replies, unless `rate` says otherwise (a cue recording heard again slower); a mixed
    /// one always at 1.0.
    public func beginClip(mixed: Bool, rate: Double = 1) -> Clip? {
        guard let player else { return nil }
        return mixed ? Clip(number: player.beginMix(), mixed: true) : Clip(number: player.beginReply(rate: rate), mixed: false)
    }

    /// Samples the clip's queue can take now; nil without a player or when the clip was
    /// stopped or replaced.
    public func space(for clip: Clip) -> Int? {
        guard let player else { return nil }
        return clip.mixed ? player.mixQueueSpace(mix: clip.number) : player.queueSpace(reply: clip.number)
    }

    /// Queues a clip's samples, converted to the player's format.
    public func enqueue(samples: UnsafeBufferPointer<Float>, clip: Clip) {
        guard let player else { return }
        if clip.mixed { player.enqueueMix(samples: samples, mix: clip.number) } else { player.enqueue(samples: samples, reply: clip.number) }
    }

    /// The clip's last samples are queued.
    public func endClip(_ clip: Clip) {
        guard let player else { return }
        if clip.mixed { player.endMix(clip.number) } else { player.endReply(clip.number) }
    }

    /// Plays a whole clip (the `play` command) as a reply of its own.
    public func play(_ samples: UnsafeRawBufferPointer) -> Int? {
        guard let player else { return nil }
        let reply = player.beginReply(rate: 1)
        player.enqueue(samples, reply: reply)
        player.endReply(reply)
        return reply
    }

    public var playbackRate: Double { lock.withLock { rate } }

    /// Sets the rate replies play at (checked by ``StreamingPlayer/checkRate(_:)``).
    public func setPlaybackRate(_ newRate: Double) throws(TimeStretcher.Failure) {
        try StreamingPlayer.checkRate(newRate)
        lock.withLock {
            rate = newRate
            try? attachedPlayer?.setPlaybackRate(newRate)
        }
    }

    public func replay(_ pcm: [UInt8], rate: Double) -> Int? {
        guard let player else { return nil }
        let number = player.beginReply(rate: rate, immediate: true)
        feed(pcm, from: 0, rate: rate, to: player, number: number)
        return number
    }

    public func stop(sound number: Int) { player?.stop(reply: number) }

    /// A replay is fed a quarter of a second of its input at a time: its first piece is
    /// stretched in about a millisecond, so the sound starts at once, and the rest follows
    /// as the ring has room (a minute at 0.5 fills it).
    static let replayPieceBytes = 12_000

    private func feed(_ pcm: [UInt8], from start: Int, rate: Double, to player: StreamingPlayer, number: Int) {
        feeder.async { [self] in
            var offset = start
            while offset < pcm.count {
                guard let space = player.queueSpace(reply: number) else { return }  // stopped or replaced
                let piece = min(Self.replayPieceBytes, pcm.count - offset)
                // The piece at the rate, and what the stretcher held (its latency, 30 ms).
                guard Double(space) >= Double(piece / 2) / rate + 2_048 else {
                    // The device drains a period at a time: try again after one.
                    let resume = offset
                    feeder.asyncAfter(deadline: .now() + .milliseconds(20)) { [self] in feed(pcm, from: resume, rate: rate, to: player, number: number) }
                    return
                }
                pcm.withUnsafeBytes { all in _ = player.enqueue(UnsafeRawBufferPointer(rebasing: all[offset..<(offset + piece)]), reply: number) }
                offset += piece
            }
            player.endReply(number)
        }
    }

    /// Recorder commands stay under the lock: the session and cue practice may both ask.
    public func startRecording(handsFree: Bool) -> UInt64? {
        lock.withLock {
            guard let recorder else { return nil }
            return handsFree ? recorder.listen() : recorder.beginTurn()
        }
    }

    public var inputIsEchoCancelled: Bool { lock.withLock { recorder?.inputIsEchoCancelled ?? false } }

    public func record(_ command: RecorderCommand) -> Bool {
        lock.withLock {
            guard let recorder else { return false }
            switch command {
            case .end: recorder.endTurn()
            case .cancel: recorder.cancelTurn()
            }
            return true
        }
    }
}
