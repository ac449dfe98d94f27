import AudioKernel
import FoundationEssentials
import Glibc

/// What a session needs of the microphone and the speaker. ``KioskAudio`` is the real
/// one; unit tests of the session pass their own.
public protocol SessionAudio: AnyObject, Sendable {
    /// Starts a reply on the speaker: its number (carried by the player's `started` and
    /// `finished` events), or nil when there is no speaker.
    func beginReply() -> Int?
    /// Queues a chunk of `reply`; dropped when that reply was stopped or another began.
    func enqueue(_ bytes: UnsafeRawBufferPointer, reply: Int)
    func endReply(_ reply: Int)
    /// Stops `reply` within one period (with a fade) if it is the one playing; later
    /// chunks of it are dropped.
    func stopReply(_ reply: Int)
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
}

public enum RecorderCommand: Sendable {
    case end, cancel
}

/// The daemon's microphone and speaker as the session sees them. The devices come and go
/// (reopened after a failure, replaced on reload); a lock keeps one caller at a time on
/// the player's network side (its contract) and makes "is this reply still the one
/// playing" and "queue this chunk" one step, so a chunk of a stopped reply can never
/// slip into the next one.
public final class KioskAudio: SessionAudio, @unchecked Sendable {
    private let lock = Lock()
    private var player: StreamingPlayer?
    private var recorder: Recorder?
    /// The last reply begun, and whether it may still queue chunks (not stopped or ended).
    private var current: Int?
    private var open = false
    /// The last clip mixed over the speaker, and whether it may still queue samples.
    private var currentMix: Int?
    private var mixOpen = false

    public init() {}

    public func attach(player: StreamingPlayer?) { lock.withLock {
            self.player = player
            current = nil
            open = false
            currentMix = nil
            mixOpen = false
        } }
    public func attach(recorder: Recorder?) { lock.withLock { self.recorder = recorder } }

    public func beginReply() -> Int? {
        lock.withLock {
            guard let player else { return nil }
            let reply = player.beginReply()
            current = reply
            open = true
            return reply
        }
    }

    public func enqueue(_ bytes: UnsafeRawBufferPointer, reply: Int) {
        lock.withLock {
            guard open, current == reply, let player else { return }
            player.enqueue(bytes)
        }
    }

    public func endReply(_ reply: Int) {
        lock.withLock {
            guard open, current == reply, let player else { return }
            player.endReply()
            open = false
        }
    }

    public func stopReply(_ reply: Int) {
        lock.withLock {
            // An ended reply still playing out what was queued stops too.
            guard current == reply, let player else { return }
            player.stop()
            open = false
        }
    }

    public func stopAll() -> Bool {
        lock.withLock {
            guard let player else { return false }
            let playing = player.isActive || open || mixOpen
            player.stop()
            player.stopMix()
            open = false
            mixOpen = false
            return playing
        }
    }

    /// A clip being streamed (the `play` command): played as a reply of its own, or mixed
    /// over whatever plays.
    public struct Clip: Sendable, Equatable {
        public let number: Int
        public let mixed: Bool
    }

    /// Starts a clip streamed in pieces; feed it with ``enqueue(samples:clip:)`` and end it
    /// with ``endClip(_:)``.
    public func beginClip(mixed: Bool) -> Clip? {
        lock.withLock {
            guard let player else { return nil }
            if mixed {
                let number = player.beginMix()
                currentMix = number
                mixOpen = true
                return Clip(number: number, mixed: true)
            }
            let reply = player.beginReply()
            current = reply
            open = true
            return Clip(number: reply, mixed: false)
        }
    }

    /// Samples the clip's queue can take now; nil without a player or when the clip was
    /// stopped or replaced.
    public func space(for clip: Clip) -> Int? {
        lock.withLock {
            guard let player else { return nil }
            if clip.mixed { return mixOpen && currentMix == clip.number ? player.mixQueueSpace : nil }
            return open && current == clip.number ? player.queueSpace : nil
        }
    }

    /// Queues a clip's samples, converted to the player's format.
    public func enqueue(samples: UnsafeBufferPointer<Float>, clip: Clip) {
        lock.withLock {
            guard let player else { return }
            if clip.mixed {
                guard mixOpen, currentMix == clip.number else { return }
                player.enqueueMix(samples: samples)
            } else {
                guard open, current == clip.number else { return }
                player.enqueue(samples: samples)
            }
        }
    }

    /// The clip's last samples are queued.
    public func endClip(_ clip: Clip) {
        guard clip.mixed else { return endReply(clip.number) }
        lock.withLock {
            guard mixOpen, currentMix == clip.number, let player else { return }
            player.endMix()
            mixOpen = false
        }
    }

    /// Plays a whole clip (the `play` command) as a reply of its own.
    public func play(_ samples: UnsafeRawBufferPointer) -> Int? {
        lock.withLock {
            guard let player else { return nil }
            let reply = player.beginReply()
            player.enqueue(samples)
            player.endReply()
            current = reply
            open = false
            return reply
        }
    }

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
