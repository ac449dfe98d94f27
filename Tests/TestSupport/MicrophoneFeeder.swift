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

    public init(fifo: String, rate: Int = 24_000, channels: Int = 1, keepCapturing source: (server: String, name: String)? = nil) throws {
        self.rate = rate
        self.channels = channels
        // Non-blocking: when nothing records from the source (the daemon closed its idle
        // devices), PulseAudio suspends it and stops reading; a full FIFO then drops the
        // block, as a microphone nobody listens to would, instead of blocking this thread.
        fd = open(fifo, O_WRONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw ToolError(command: "open \(fifo)", status: errno, stderr: String(cString: strerror(errno))) }
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
        var next = DispatchTime.now().uptimeNanoseconds
        // A converted microphone: 10 ms at its rate and channels per block.
        let resampler = rate == 24_000 ? nil : try? Resampler(inputRate: 24_000, outputRate: rate, quality: .high, maximumInputFrames: block)
        var floats = [Float](repeating: 0, count: block)
        var resampled = [Float](repeating: 0, count: resampler?.maximumOutputFrames(forInputFrames: block) ?? block)
        var device: [Int16] = []
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
            // Real-time pacing against an absolute clock, so the rate does not drift.
            next += 10_000_000
            let now = DispatchTime.now().uptimeNanoseconds
            if next > now { usleep(UInt32((next - now) / 1_000)) } else { next = now }
        }
    }
}
