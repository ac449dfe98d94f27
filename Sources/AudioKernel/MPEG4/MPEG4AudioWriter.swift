#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes AAC frames into an MPEG-4 audio file (`.m4a`) as they are encoded, with `moov`
/// before `mdat` so that a browser plays it from its first bytes.
///
/// **How `moov` ends up first.** Its size depends on the number of frames, which is known
/// only at the end, so the frames are streamed to a scratch file beside the destination
/// (`PATH.partial`) while only the sample table (4 bytes per frame: 1.4 KiB a minute at
/// 24 kHz) stays in memory. ``finish(priming:length:sync:)`` writes `ftyp` and `moov`, then
/// copies the frames behind them into `PATH.assembling` through a 64 KiB buffer and renames
/// it to `PATH`. The cost is one copy of the coded audio (360 KiB a minute at 48 kbit/s) at
/// the end, and `PATH` never exists half-written.
///
/// The edit list hides the encoder's priming, and the last frame's duration in `stts` is
/// what it holds of the input (as ffmpeg writes it, and as ffmpeg's reader trims), so a
/// decoder's output is exactly `length` samples long. One owner at a time: not shared between threads.
public final class MPEG4AudioWriter {
    /// Samples per channel in an AAC-LC frame.
    public static let samplesPerFrame = 1024

    public let path: String
    public let config: AudioSpecificConfig
    /// The frames written so far.
    public var frameCount: Int { sizes.count }

    private var sizes: [UInt32] = []
    private var payloadBytes = 0
    private let payloadPath: String
    private let mode: mode_t
    private var fd: Int32 = -1

    /// Starts a file at `path` (written at ``finish(priming:length:sync:)``).
    public init(path: String, config: AudioSpecificConfig, mode: mode_t = 0o644) throws(MPEG4Error) {
        self.path = path
        self.config = config
        self.mode = mode
        payloadPath = path + ".partial"
        switch SystemCall.retryingOnInterrupt({ open(payloadPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) }) {
        case .success(let opened): fd = opened
        case .failure(let errno): throw .io(errno, operation: "creating \(payloadPath)")
        }
    }

    deinit { cancel() }

    /// Appends one AAC frame (a raw_data_block, without an ADTS header).
    public func append(_ frame: UnsafeRawBufferPointer) throws(MPEG4Error) {
        precondition(fd >= 0, "append after finish or cancel")
        // 6144 bits per channel is the decoder's input buffer (14496-3, 4.5.3.1): no legal
        // frame is larger.
        guard frame.count <= 6_144 / 8 * config.channels else { throw .tooLarge("a frame of \(frame.count) bytes") }
        if case .failure(let errno) = SystemCall.writeAll(fd, frame) { throw .io(errno, operation: "writing \(payloadPath)") }
        sizes.append(UInt32(frame.count))
        payloadBytes += frame.count
    }

    /// Writes the file: `priming` samples at the start and whatever lies past `length`
    /// samples after them are hidden by the edit list. Flushed to stable storage with `sync`.
    public func finish(priming: Int, length: Int, sync: Bool = false) throws(MPEG4Error) {
        precondition(fd >= 0, "finish after finish or cancel")
        let coded = sizes.count * Self.samplesPerFrame
        precondition(priming >= 0 && length >= 0 && priming + length <= coded, "the edit runs past the coded samples")
        precondition(sizes.isEmpty || priming + length > coded - Self.samplesPerFrame, "a frame past the last presented sample")
        let assembling = path + ".assembling"
        let out: Int32
        switch SystemCall.retryingOnInterrupt({ open(assembling, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode) }) {
        case .success(let opened): out = opened
        case .failure(let errno): throw .io(errno, operation: "creating \(assembling)")
        }
        var closed = false
        defer {
            if !closed {
                Glibc.close(out)
                unlink(assembling)
            }
        }
        let head = header(priming: priming, length: length)
        if case .failure(let errno) = head.withUnsafeBytes({ SystemCall.writeAll(out, $0) }) { throw .io(errno, operation: "writing \(assembling)") }
        try copyPayload(to: out, name: assembling)
        if sync, case .failure(let errno) = SystemCall.retryingOnInterrupt({ fsync(out) }) { throw .io(errno, operation: "syncing \(assembling)") }
        closed = true
        Glibc.close(out)
        if case .failure(let errno) = SystemCall.retryingOnInterrupt({ rename(assembling, path) }) {
            unlink(assembling)
            throw .io(errno, operation: "renaming \(assembling) to \(path)")
        }
        cancel()
    }

    /// Drops what was written; the destination is left as it was.
    public func cancel() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
        unlink(payloadPath)
    }

    private func copyPayload(to out: Int32, name: String) throws(MPEG4Error) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        var offset = 0
        while offset < payloadBytes {
            let wanted = min(buffer.count, payloadBytes - offset)
            let read = SystemCall.retryingOnInterrupt { pread(fd, buffer.baseAddress!, wanted, off_t(offset)) }
            guard case .success(let count) = read, count > 0 else {
                if case .failure(let errno) = read { throw .io(errno, operation: "reading \(payloadPath)") }
                throw .io(Errno(rawValue: EIO), operation: "reading \(payloadPath): it ended early")
            }
            if case .failure(let errno) = SystemCall.writeAll(out, UnsafeRawBufferPointer(rebasing: buffer[..<count])) {
                throw .io(errno, operation: "writing \(name)")
            }
            offset += count
        }
    }

    // MARK: - The boxes

    /// `ftyp`, `moov` and the `mdat` header, for the frames written.
    func header(priming: Int, length: Int) -> [UInt8] {
        // The first frame follows this header (the mdat header included); the header's size
        // does not depend on that offset's value: built once to measure, once for real.
        let large = payloadBytes + 8 > Int(UInt32.max)
        let measured = boxes(priming: priming, length: length, payloadOffset: 0, wide: false, largeMdat: large).count
        let wide = measured + payloadBytes > Int(UInt32.max)
        let sized = boxes(priming: priming, length: length, payloadOffset: 0, wide: wide, largeMdat: large).count
        return boxes(priming: priming, length: length, payloadOffset: sized, wide: wide, largeMdat: large)
    }

    private func boxes(priming: Int, length: Int, payloadOffset: Int, wide: Bool, largeMdat: Bool) -> [UInt8] {
        let rate = config.sampleRate
        let media = priming + length  // the media's duration: the last frame cut to the input
        var b = MP4BoxBuilder()
        b.box("ftyp") { b in
            b.fourCC("M4A ")
            b.u32(0)
            for brand in ["M4A ", "mp42", "isom"] { b.fourCC(brand) }
        }
        b.box("moov") { b in
            b.fullBox("mvhd") { b in
                b.u32(0); b.u32(0)  // creation and modification times: none (reproducible files)
                b.u32(rate)
                b.u32(length)
                b.u32(0x0001_0000)  // rate 1.0
                b.u16(0x0100)  // volume 1.0
                b.zeros(10)
                b.unityMatrix()
                b.zeros(24)
                b.u32(2)  // next track ID
            }
            b.box("trak") { b in
                b.fullBox("tkhd", flags: 0x3) { b in  // enabled, in the movie
                    b.u32(0); b.u32(0)
                    b.u32(1)  // track ID
                    b.u32(0)
                    b.u32(length)
                    b.zeros(8)
                    b.u16(0)  // layer
                    b.u16(1)  // alternate group: audio
                    b.u16(0x0100)  // volume 1.0
                    b.u16(0)
                    b.unityMatrix()
                    b.u32(0); b.u32(0)  // no width or height
                }
                b.box("edts") { b in
                    b.fullBox("elst") { b in
                        b.u32(1)
                        b.u32(length)  // in the movie's timescale (the sample rate)
                        b.u32(priming)  // where the presentation starts in the media
                        b.u32(0x0001_0000)  // rate 1.0
                    }
                }
                b.box("mdia") { b in
                    b.fullBox("mdhd") { b in
                        b.u32(0); b.u32(0)
                        b.u32(rate)
                        b.u32(media)
                        b.u16(0x55C4)  // language "und", packed 5 bits a letter
                        b.u16(0)
                    }
                    b.fullBox("hdlr") { b in
                        b.u32(0)
                        b.fourCC("soun")
                        b.zeros(12)
                        b.raw(Array("SoundHandler".utf8) + [0])
                    }
                    b.box("minf") { b in
                        b.fullBox("smhd") { b in b.u16(0); b.u16(0) }
                        b.box("dinf") { b in
                            b.fullBox("dref") { b in
                                b.u32(1)
                                b.fullBox("url ", flags: 1) { _ in }  // the media is in this file
                            }
                        }
                        sampleTable(&b, media: media, payloadOffset: payloadOffset, wide: wide)
                    }
                }
            }
        }
        if largeMdat {
            b.u32(1)
            b.fourCC("mdat")
            b.u64(payloadBytes + 16)
        } else {
            b.u32(payloadBytes + 8)
            b.fourCC("mdat")
        }
        return b.bytes
    }

    private func sampleTable(_ b: inout MP4BoxBuilder, media: Int, payloadOffset: Int, wide: Bool) {
        b.box("stbl") { b in
            b.fullBox("stsd") { b in
                b.u32(1)
                b.box("mp4a") { b in
                    b.zeros(6)
                    b.u16(1)  // data reference index
                    b.zeros(8)  // version, revision, vendor
                    b.u16(config.channels)
                    b.u16(16)  // sample size
                    b.u16(0); b.u16(0)  // compression ID, packet size
                    b.u32(config.sampleRate << 16)
                    esds(&b)
                }
            }
            b.fullBox("stts") { b in
                let last = media - (sizes.count - 1) * Self.samplesPerFrame
                var runs: [(count: Int, delta: Int)] = []
                if sizes.count > 1 { runs.append((sizes.count - 1, Self.samplesPerFrame)) }
                if !sizes.isEmpty { runs.append((1, last)) }
                if runs.count == 2, last == Self.samplesPerFrame { runs = [(sizes.count, last)] }
                b.u32(runs.count)
                for run in runs {
                    b.u32(run.count)
                    b.u32(run.delta)
                }
            }
            // One chunk holds every frame: the audio is the file's only track.
            b.fullBox("stsc") { b in
                if sizes.isEmpty {
                    b.u32(0)
                } else {
                    b.u32(1)
                    b.u32(1); b.u32(sizes.count); b.u32(1)
                }
            }
            b.fullBox("stsz") { b in
                b.u32(0)  // sizes vary
                b.u32(sizes.count)
                for size in sizes { b.u32(Int(size)) }
            }
            b.fullBox(wide ? "co64" : "stco") { b in
                b.u32(sizes.isEmpty ? 0 : 1)
                if !sizes.isEmpty { wide ? b.u64(payloadOffset) : b.u32(payloadOffset) }
            }
            // AAC's pre-roll: a decoder starting at a frame needs the one before it
            // (an overlapped MDCT), said as a 'roll' group of distance -1 for every frame.
            guard !sizes.isEmpty else { return }
            b.fullBox("sgpd", version: 1) { b in
                b.fourCC("roll")
                b.u32(2)  // default description length
                b.u32(1)
                b.u16(0xFFFF)  // roll distance -1
            }
            b.fullBox("sbgp") { b in
                b.fourCC("roll")
                b.u32(1)
                b.u32(sizes.count)
                b.u32(1)
            }
        }
    }

    /// The elementary stream descriptor: MPEG-4 audio (0x40), the largest frame, the bit
    /// rates, and the AudioSpecificConfig.
    private func esds(_ b: inout MP4BoxBuilder) {
        let seconds = Double(max(1, sizes.count) * Self.samplesPerFrame) / Double(config.sampleRate)
        let average = sizes.isEmpty ? 0 : Int(Double(payloadBytes * 8) / seconds)
        b.fullBox("esds") { b in
            b.descriptor(0x03) { b in
                b.u16(1)  // ES ID
                b.u8(0)
                b.descriptor(0x04) { b in
                    b.u8(0x40)  // MPEG-4 audio
                    b.u8(0x15)  // audio stream, upstream 0, reserved 1
                    b.u24(Int(sizes.max() ?? 0))
                    b.u32(max(average, peakBitRate()))
                    b.u32(average)
                    b.descriptor(0x05) { b in b.raw(config.bytes) }
                }
                b.descriptor(0x06) { b in b.u8(0x02) }  // SL config: predefined for MP4
            }
        }
    }

    /// The most bits in any second of frames.
    private func peakBitRate() -> Int {
        let window = max(1, (config.sampleRate + Self.samplesPerFrame - 1) / Self.samplesPerFrame)
        var running = 0, peak = 0
        for (index, size) in sizes.enumerated() {
            running += Int(size)
            if index >= window { running -= Int(sizes[index - window]) }
            peak = max(peak, running)
        }
        return Int(Double(peak * 8) * Double(config.sampleRate) / Double(window * Self.samplesPerFrame))
    }
}
