import Glibc

/// One step of a ``Resampler``'s chain. A stage keeps its own history, one line per channel,
/// allocated at init. New input goes in after it: copied from the caller's interleaved
/// frames by ``write(_:frames:channelStride:frameStride:)``, or made there by the stage
/// before (``inputSlot(frames:)``, then ``commit(_:)``: no copy between stages).
/// ``run(into:channelStride:)`` filters everything written since into planar output.
protocol ResamplingStage: AnyObject {
    var channels: Int { get }
    /// The most frames one run takes.
    var maximumInputFrames: Int { get }
    /// An impulse written comes out this many of the stage's output frames later.
    var delay: Double { get }
    /// Bounds on the frames a run makes from `inputFrames` frames written since the last.
    func maximumOutputFrames(forInputFrames inputFrames: Int) -> Int
    func minimumOutputFrames(forInputFrames inputFrames: Int) -> Int
    /// Where the next `frames` frames go: channel `c`'s frame `f` at `slot[c · channelStride + f]`.
    func inputSlot(frames: Int) -> (slot: UnsafeMutablePointer<Float>, channelStride: Int)
    /// Counts in `frames` frames put in the slot.
    func commit(_ frames: Int)
    /// Filters what was written; channel `c`'s output goes to `output + c · channelStride`.
    /// Returns the frames made per channel.
    func run(into output: UnsafeMutablePointer<Float>, channelStride: Int) -> Int
    /// Forgets the past.
    func reset()
}

extension ResamplingStage {
    /// Copies `frames` frames in, channel `c`'s frame `f` from `source[c · channelStride + f · frameStride]`.
    func write(_ source: UnsafePointer<Float>, frames: Int, channelStride: Int, frameStride: Int) {
        let (slot, stride) = inputSlot(frames: frames)
        for channel in 0..<channels {
            Self.copy(source + channel * channelStride, stride: frameStride, frames: frames, into: slot + channel * stride)
        }
        commit(frames)
    }

    /// Moves each of `lines` lines (`stride` floats apart from `first`) back by `frames`,
    /// keeping the `kept` frames after them: the history a stage needs for its next run.
    static func drop(_ frames: Int, keeping kept: Int, lines: Int, from first: UnsafeMutablePointer<Float>, stride: Int) {
        guard frames > 0 else { return }
        for index in 0..<lines {
            let line = first + index * stride
            memmove(line, line + frames, kept * MemoryLayout<Float>.stride)
        }
    }

    /// Copies `frames` frames of channel `channel` into `line`, one every `frameStride` floats.
    @inline(__always)
    static func copy(_ source: UnsafePointer<Float>, stride frameStride: Int, frames: Int, into line: UnsafeMutablePointer<Float>) {
        if frameStride == 1 {
            line.update(from: source, count: frames)
            return
        }
        var frame = 0
        while frame < frames {
            line[frame] = source[frame &* frameStride]
            frame &+= 1
        }
    }
}
