/// How interleaved Float32 frames of one channel count become another, the way sound
/// servers treat channels without position maps:
/// - equal counts: copied;
/// - mono to more: the front pair (channels 0 and 1) both carry it and the rest (centre,
///   LFE, surrounds) stay silent, so speech never lands in a subwoofer;
/// - more to mono: the average of all channels (no clipping, no lost side);
/// - otherwise: the channels both have are copied, extra outputs are silent.
public struct ChannelMap: Hashable, Sendable {
    public let inputChannels: Int
    public let outputChannels: Int

    public init(from inputChannels: Int, to outputChannels: Int) {
        precondition(inputChannels >= 1 && outputChannels >= 1)
        self.inputChannels = inputChannels
        self.outputChannels = outputChannels
    }

    public var isIdentity: Bool { inputChannels == outputChannels }

    /// Maps `frames` frames from `input` into `output` (which must not overlap it).
    public func apply(_ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutablePointer<Float>) {
        let (ci, co) = (inputChannels, outputChannels)
        if ci == co {
            output.update(from: input, count: frames * ci)
            return
        }
        var f = 0
        if ci == 1 {
            let fronts = min(co, 2)
            while f < frames {
                let x = input[f]
                let base = f &* co
                var c = 0
                while c < fronts { output[base &+ c] = x; c &+= 1 }
                while c < co { output[base &+ c] = 0; c &+= 1 }
                f &+= 1
            }
        } else if co == 1 {
            let scale = 1 / Float(ci)
            while f < frames {
                let base = f &* ci
                var sum: Float = 0
                var c = 0
                while c < ci { sum += input[base &+ c]; c &+= 1 }
                output[f] = sum * scale
                f &+= 1
            }
        } else {
            let shared = min(ci, co)
            while f < frames {
                var c = 0
                while c < shared { output[f &* co &+ c] = input[f &* ci &+ c]; c &+= 1 }
                while c < co { output[f &* co &+ c] = 0; c &+= 1 }
                f &+= 1
            }
        }
    }
}
