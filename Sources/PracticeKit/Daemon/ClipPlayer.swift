import AudioKernel
import Dispatch
import FoundationEssentials
import Glibc
import PracticeNet
import PracticeProtocol
import PracticeSupport

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
    /// Whose time the open deadline runs on (the daemon's one clock).
    private let clock: any PracticeClock
    /// Where `playback.failed` goes (the control server).
    private let publish: EventPublisher

    init(audio: KioskAudio, logger: Logger, clock: any PracticeClock, deadlines: DispatchQueue, publish: @escaping EventPublisher) {
        self.clock = clock
        self.audio = audio
        self.logger = logger
        self.deadlines = deadlines
        self.publish = publish
    }

    /// Plays the file at `path` for `client`, if it is a WAV (8-192 kHz, 1-8 channels, 8-bit
    /// unsigned, 16/24/32-bit integer, 32-bit float, A-law or µ-law) or an MPEG-4 AAC-LC file
    /// the client may read (see ``ClipFile`` for what is refused), converted on the fly to the
    /// player's `format`. The answer goes out when
    /// the file is open and checked, or after `play.timeout_ms` as an error even if the
    /// filesystem still hangs.
    func play(path: String, mixed: Bool, rate: Double = 1, client: ControlClientInfo, format: WAVFormat, configuration: DaemonConfiguration,
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
        clock.after(Double(timeout) / 1000, on: deadlines) { [logger] in
            if once.send(.failure(ControlError(.fileError, "\(path): not opened within \(timeout) ms (a stalled filesystem?)", retryable: true))) {
                logger.warning("play \(path) (pid \(client.credentials.pid)): not opened within \(timeout) ms")
            }
        }
        let play: @Sendable () -> Void = { [self, audio, logger] in
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
            let source = clip.format
            guard (8_000...192_000).contains(source.sampleRate), (1...8).contains(source.channels) else {
                _ = once.send(.failure(ControlError(.fileError, "\(path) is \(source); play takes 8,000 to 192,000 Hz and 1 to 8 channels")))
                return
            }
            let converter: InputConverter
            do throws(AudioError) {
                converter = try InputConverter(source: source.streamFormat, maximumFrames: Self.chunkBytes / source.bytesPerFrame,
                                               targetRate: format.sampleRate, targetChannels: format.channels)
            } catch {
                _ = once.send(.failure(ControlError(.fileError, "\(path): \(error.message)")))
                return
            }
            guard !once.isSent, let target = audio.beginClip(mixed: mixed, rate: rate) else { return }
            _ = once.send(.success(ProtocolEncoder.encode(Command.Play.Result(path: path, durationS: (clip.duration * 1000).rounded() / 1000,
                                                                              sound: target.number, mixed: target.mixed))))
            if let failure = Self.stream(clip, through: converter, to: audio, clip: target) {
                logger.error("play \(path) (pid \(client.credentials.pid)): \(failure); what was read plays out")
                publish(Event.PlaybackFailed(path: path, message: failure, sound: target.number, mixed: target.mixed))
            }
        }
        do {
            try IOThread.detach(name: "practiced-play", stackBytes: 1 << 18, body: play)
        } catch {
            filesInUse.withLock { $0 -= 1 }
            logger.error("play \(path): \(error)")
            _ = once.send(.failure(ControlError(.fileError, "\(path): no thread to open it on (\(error))", retryable: true)))
        }
    }

    /// The file is read in pieces of at most this much.
    static let chunkBytes = 65_536

    /// Feeds a clip to the player in pieces of whole frames as it has room, each converted
    /// (decoded, mixed down, resampled) on the way: constant memory for any length. Ends
    /// when the file does, or when the clip is stopped or replaced.
    ///
    /// - Returns: why the file could not be read to the end its header gave, or nil. What
    ///   was read is played out either way.
    private static func stream(_ file: ClipFile, through converter: InputConverter, to audio: KioskAudio, clip: KioskAudio.Clip) -> String? {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkBytes, alignment: 16)
        defer { buffer.deallocate() }
        defer { audio.endClip(clip) }
        let frameBytes = file.format.bytesPerFrame
        // Output samples per input frame; the filter may give a few more on a call.
        let outputPerFrame = Double(converter.targetRate * converter.targetChannels) / Double(file.format.sampleRate)
        var done = 0
        while done < file.frameCount {
            guard let space = audio.space(for: clip) else { return nil }  // stopped
            let frames = min(converter.maximumFrames, chunkBytes / frameBytes, Int(Double(space - 64) / outputPerFrame), file.frameCount - done)
            guard frames >= 1_024 || frames == file.frameCount - done, frames > 0 else {
                usleep(20_000)  // the player drains a period at a time
                continue
            }
            let read: (frames: Int, failure: String?)
            switch file.content {
            case .wav(let layout):
                let offset = done * frameBytes
                switch file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<(frames * frameBytes)]), at: offset, layout: layout) {
                case .success(let n) where n >= frameBytes: read = (n / frameBytes, nil)
                case .success: read = (0, "the file ended at byte \(layout.dataOffset + offset) of \(layout.dataOffset + layout.dataByteCount)")
                case .failure(let error): read = (0, "reading failed at byte \(layout.dataOffset + offset) of \(layout.dataOffset + layout.dataByteCount): \(error)")
                }
            case .mpeg4(let decoder):
                do throws(MPEG4Error) {
                    let n = try decoder.read(into: buffer.baseAddress!.assumingMemoryBound(to: Int16.self), frames: frames)
                    read = (n, n > 0 ? nil : "the file ended at frame \(done) of \(file.frameCount)")
                } catch {
                    read = (0, "decoding failed at frame \(done) of \(file.frameCount): \(error)")
                }
            }
            // The file shrank, failed or does not decode: play what came, and say so.
            if let failure = read.failure { return failure }
            audio.enqueue(samples: converter.convert(buffer.baseAddress!, frames: read.frames), clip: clip)
            done += read.frames
        }
        return nil
    }
}

/// A reply that goes out once: from the work, or from its deadline, whichever comes first.
final class ReplyOnce: @unchecked Sendable {
    private let lock = Lock()
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
