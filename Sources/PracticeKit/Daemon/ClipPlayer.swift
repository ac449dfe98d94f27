import AudioKernel
import Dispatch
import Foundation

/// `play`'s files: each opened, checked and streamed to the speaker on a thread of its own,
/// which nothing else waits on.
///
/// A thread, not Dispatch's pool: a thread stuck in a hung filesystem's `open` (or
/// streaming a two-hour clip) would hold a pool worker, and Linux's libdispatch adds
/// workers only after noticing, a second or more later; every queue of the daemon would
/// wait meanwhile (seen: `play` deadlines of 0.5 s answered after 2.5 s). The threads are
/// bounded: an open on a filesystem that hangs never returns and keeps its thread in the
/// kernel; unbounded, a client repeating such a `play` would pile up threads without end.
final class ClipPlayer: @unchecked Sendable {
    static let maximumFilesInUse = 4
    /// Files opening or streaming now.
    private let filesInUse = Locked(0)
    private let audio: KioskAudio
    private let logger: Logger
    /// Where the answer's deadline runs.
    private let deadlines: DispatchQueue

    init(audio: KioskAudio, logger: Logger, deadlines: DispatchQueue) {
        self.audio = audio
        self.logger = logger
        self.deadlines = deadlines
    }

    /// Plays the file at `path` for `client`, if it is a WAV in `format` the client may
    /// read (see ``ClipFile`` for what is refused). The answer goes out when the file is
    /// open and checked, or after `play.timeout_ms` as an error even if the filesystem
    /// still hangs.
    func play(path: String, client: ControlClientInfo, format: WAVFormat, configuration: DaemonConfiguration,
              _ reply: CommandReply<Command.Play>) throws(ControlError) {
        guard path.hasPrefix("/") else { throw ControlError(.badArguments, "'path' must be absolute") }
        let reserved = filesInUse.withLock { count in
            guard count < Self.maximumFilesInUse else { return false }
            count += 1
            return true
        }
        guard reserved else {
            logger.warning("play \(path) (pid \(client.credentials.pid)): \(Self.maximumFilesInUse) files still opening or playing; refused")
            throw ControlError(.fileError, "\(Self.maximumFilesInUse) earlier files are still opening or playing (a stalled filesystem?); "
                               + "try again later", retryable: true)
        }
        let once = ReplyOnce(reply.send)
        let timeout = configuration.playTimeoutMilliseconds
        deadlines.asyncAfter(deadline: .now() + .milliseconds(timeout)) { [logger] in
            if once.send(.failure(ControlError(.fileError, "\(path): not opened within \(timeout) ms (a stalled filesystem?)", retryable: true))) {
                logger.warning("play \(path) (pid \(client.credentials.pid)): not opened within \(timeout) ms")
            }
        }
        let thread = Thread { [self, audio, logger] in
            defer { filesInUse.withLock { $0 -= 1 } }
            let clip: ClipFile
            do throws(ControlError) {
                clip = try ClipFile(path: path, peer: client.credentials.uid, directories: configuration.playDirectoryList,
                                    maximumBytes: configuration.playMaximumBytes)
            } catch {
                logger.notice("play refused for uid \(client.credentials.uid) (pid \(client.credentials.pid)): \(error.code.rawValue)")
                _ = once.send(.failure(error))
                return
            }
            guard clip.layout.format == format else {
                _ = once.send(.failure(ControlError(.fileError, "\(path) is \(clip.layout.format); the player plays \(format)")))
                return
            }
            guard !once.isSent, let number = audio.beginClip() else { return }
            _ = once.send(.success(ProtocolEncoder.encode(Command.Play.Result(path: path, durationS: (clip.layout.duration * 1000).rounded() / 1000))))
            Self.stream(clip, to: audio, reply: number)
        }
        thread.name = "practiced-play"
        thread.stackSize = 1 << 18
        thread.start()
    }

    /// Feeds a clip to the player in 64 KiB pieces as it has room: constant memory for any
    /// length. Ends when the file does, or when the clip is stopped or replaced.
    private static func stream(_ clip: ClipFile, to audio: KioskAudio, reply: Int) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        var offset = 0
        while offset < clip.layout.dataByteCount {
            guard let space = audio.space(for: reply) else { return }  // stopped
            let bytes = min(buffer.count, space * 2) & ~1
            guard bytes >= 4_096 || bytes >= clip.layout.dataByteCount - offset else {
                usleep(20_000)  // the player drains a period at a time
                continue
            }
            let n = clip.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<bytes]), at: offset)
            guard n > 0 else { break }  // the file shrank or failed: play what came
            audio.enqueue(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), reply: reply)
            offset += n
        }
        audio.endReply(reply)
    }
}

/// A reply that goes out once: from the work, or from its deadline, whichever comes first.
final class ReplyOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var reply: (@Sendable (Result<JSONValue, ControlError>) -> Void)?

    init(_ reply: @escaping @Sendable (Result<JSONValue, ControlError>) -> Void) { self.reply = reply }

    var isSent: Bool { lock.withLock { reply == nil } }

    /// Sends `result` unless a result went out already; whether this one did.
    func send(_ result: Result<JSONValue, ControlError>) -> Bool {
        guard let reply = lock.withLock({ () -> (@Sendable (Result<JSONValue, ControlError>) -> Void)? in
            defer { self.reply = nil }
            return self.reply
        }) else { return false }
        reply(result)
        return true
    }
}
