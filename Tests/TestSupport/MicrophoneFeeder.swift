import AudioKernel
import Foundation
import Synchronization

/// A virtual microphone for PulseAudio's `module-pipe-source`, which has no clock of its
/// own: a thread writes PCM16 into the FIFO at the real-time rate, 10 ms at a time,
/// silence unless a test has queued speech with ``say(_:)``.
///
/// Speech is queued as PCM16 24 kHz mono; a microphone of another rate or channel count (a
/// USB microphone's 48 kHz stereo) gets it resampled (AudioKernel's resampler, `.high`) and
/// copied to every channel, as a real microphone would deliver the same voice.
///
/// A real microphone captures whether or not anyone records (an ALSA source in PulseAudio,
/// a PipeWire node): what nobody records is dropped. A pipe source stops reading its FIFO
/// while no stream records from it (the daemon corks its stream while a half-duplex kiosk
/// speaks), so the FIFO fills, the feeder's blocks are lost, and the next stream gets the
/// FIFO's backlog (1.4 s) at once. Given the source's server and name, the feeder also
/// records from it itself, as another application would, and keeps it capturing.
///
/// A real microphone delivers on the sound server's clock; this thread can wake late on a
/// loaded machine. PipeWire's pipe source reads its FIFO at the graph's clock and fills
/// whatever is not there yet with zeros, so a late block became a hole in the learner's
/// words, and the words after it came later (CI read a passband SNR of 18 dB). The feeder
/// therefore keeps `lead` of silence in the FIFO ahead of the server and catches up after a
/// late wake-up: a wake-up later than the lead is what still makes a hole, and the feeder
/// says so on stderr when it happens. The lead was 100 ms until CI's PipeWire step, on a
/// loaded machine, read a passband SNR of 12 dB for the words of an answer; it is 300 ms
/// now, in a FIFO made to hold it and a catch-up.
/// PulseAudio's pipe source is clocked by the data and takes the lead at once.
public final class MicrophoneFeeder: @unchecked Sendable {
    private let fd: Int32
    /// NSLock, not Synchronization's Mutex: ThreadSanitizer does not see the futex under a
    /// Mutex, and reported this queue as a race (once, in CI) where there is none.
    private let lock = NSLock()
    private var queued: [Int16] = []
    private let running = Atomic<Bool>(true)
    private var thread: TestThread?
    /// Samples of queued speech written so far.
    public let spoken = Awaitable(0)
    /// Samples written so far, speech and silence.
    public let written = Awaitable(0)

    /// Opens the FIFO the pipe source reads (the module keeps it open, so this does not block).
    private let rate: Int
    private let channels: Int
    /// The rig's own stream on the source (see the type's notes).
    private var keeper: CaptureDevice?

    /// 10 ms blocks written ahead of the server's clock.
    private let lead: Int
    /// The lead the rig's microphones keep: a wake-up up to 300 ms late leaves no hole.
    public static let defaultLead = 30
    /// Wake-ups later than the lead while speech was being written: each one a hole in the
    /// words on PipeWire (none on PulseAudio, which waits for the data).
    public let holes = Atomic<Int>(0)
    /// Milliseconds the thread is to wake late, once (``wakeLate(milliseconds:)``).
    private let lateness = Atomic<Int>(0)

    public init(fifo: String, rate: Int = 24_000, channels: Int = 1, lead: Int = MicrophoneFeeder.defaultLead, keepCapturing source: (server: String, name: String)? = nil) throws {
        self.rate = rate
        self.channels = channels
        self.lead = lead
        // Non-blocking: when nothing records from the source (the daemon closed its idle
        // devices), PulseAudio suspends it and stops reading; a full FIFO then drops the
        // block, as a microphone nobody listens to would, instead of blocking this thread.
        fd = open(fifo, O_WRONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw ToolError(command: "open \(fifo)", status: errno, stderr: String(cString: strerror(errno))) }
        // The lead and a catch-up of 500 ms must fit: Linux's default 64 KiB pipe holds only
        // 341 ms of a 48 kHz stereo microphone. Rounded up to a power of two by the kernel.
        let needed = (lead * 10 + 500) * rate / 1_000 * channels * 2
        // F_SETPIPE_SZ (1031, linux/fcntl.h): Glibc's module leaves out what needs _GNU_SOURCE.
        if needed > 65_536 { _ = fcntl(fd, 1031, Int32(min(needed, 1 << 20))) }
        thread = TestThread(name: "microphone-feeder") { [unowned self] in run() }
        if let source {
            var stream = AudioStreamConfiguration()
            stream.pulseServer = source.server
            let keeper = try CaptureDevice(name: .pulse(device: source.name), configuration: stream)
            try keeper.start(onPeriod: { _ in })
            self.keeper = keeper
        }
    }

    /// Queues speech; it is written after what is queued already, then silence again.
    public func say(_ samples: [Int16]) { lock.withLock { queued += samples } }

    /// Makes the thread wake `milliseconds` late once, as a loaded machine does.
    public func wakeLate(milliseconds: Int) { lateness.store(milliseconds, ordering: .relaxed) }

    /// Whether all queued speech has been written.
    public var isQuiet: Bool { lock.withLock { queued.isEmpty } }

    /// Stops the thread and closes the FIFO (once: a second call does nothing).
    public func stop() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        keeper?.stop()
        thread?.join(timeout: 10)
        close(fd)
    }

    deinit { stop() }

    private func run() {
        let block = 240  // 10 ms at 24 kHz
        var buffer = [Int16](repeating: 0, count: block)
        // The lead goes out first; from then on one block per 10 ms keeps it.
        var next = DispatchTime.now().uptimeNanoseconds - UInt64(lead) * 10_000_000
        // A converted microphone: 10 ms at its rate and channels per block.
        let resampler = rate == 24_000 ? nil : try? Resampler(inputRate: 24_000, outputRate: rate, quality: .high, maximumInputFrames: block)
        var floats = [Float](repeating: 0, count: block)
        var resampled = [Float](repeating: 0, count: resampler?.maximumOutputFrames(forInputFrames: block) ?? block)
        var device: [Int16] = []
        var stalled = false
        while running.load(ordering: .relaxed) {
            let taken: Int = lock.withLock {
                let n = min(block, queued.count)
                for i in 0..<n { buffer[i] = queued[i] }
                queued.removeFirst(n)
                return n
            }
            for i in taken..<block { buffer[i] = 0 }
            if resampler == nil, channels == 1 {
                _ = buffer.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            } else {
                SampleConverter.int16ToFloat32(buffer, into: &floats)
                var frames = block
                if let resampler {
                    frames = floats.withUnsafeBufferPointer { input in
                        resampled.withUnsafeMutableBufferPointer { resampler.process(input, into: $0) }
                    }
                } else {
                    resampled = floats
                }
                device.removeAll(keepingCapacity: true)
                for f in 0..<frames {
                    let sample = Int16(clamping: Int((resampled[f] * 32_768).rounded()))
                    for _ in 0..<channels { device.append(sample) }
                }
                _ = device.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            }
            if taken > 0 { spoken.update { $0 += taken } }
            written.update { $0 += block }
            // Real-time pacing against an absolute clock, so the rate does not drift. Behind
            // it, the next blocks go at once until the lead is back; a stall of more than
            // 500 ms is given up, not written in a burst the FIFO (1.3 s at 24 kHz mono) may
            // not hold.
            let late = lateness.exchange(0, ordering: .relaxed)
            if late > 0 { usleep(UInt32(late) * 1_000) }  // the late wake-up a test asked for
            next += 10_000_000
            let now = DispatchTime.now().uptimeNanoseconds
            if next > now {
                stalled = false
                usleep(UInt32((next - now) / 1_000))
            } else {
                let behind = now - next
                // Past the lead by more than a block: the source found the FIFO empty (a
                // graph cycle is 10 ms or more, so less is jitter, not a hole). Told once a
                // stall, not for each block of its catch-up.
                if !stalled, behind > UInt64(lead + 1) * 10_000_000, taken > 0 || !isQuiet {
                    stalled = true
                    holes.add(1, ordering: .relaxed)
                    FileHandle.standardError.write(Data("microphone-feeder: woke \(behind / 1_000_000) ms late, past its lead of \(lead * 10) ms: a clock-driven pipe source reads a hole in the words\n".utf8))
                }
                // Given up past 500 ms, and the lead rebuilt at once: a stall must not leave
                // the feeder without its lead for the rest of the test.
                if behind > 500_000_000 { next = now - UInt64(lead) * 10_000_000 }
            }
        }
    }
}
