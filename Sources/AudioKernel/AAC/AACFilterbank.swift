/// AAC's filterbank (ISO/IEC 14496-3, 4.6.11): the windows of each window sequence around the
/// MDCT, both ways. Synthesis turns a channel's spectrum into 1024 samples by inverse MDCT,
/// windowing and overlap-add with the last frame; analysis turns 2048 samples into the
/// spectrum the decoder's synthesis inverts. Scratch space is allocated once.
final class AACFilterbank {
    private let long = MDCT(size: 2048)
    private let short = MDCT(size: 256)
    private let buffer: UnsafeMutablePointer<Float> = .allocate(capacity: 2048)
    private let shortBuffer: UnsafeMutablePointer<Float> = .allocate(capacity: 256)

    deinit {
        buffer.deallocate()
        shortBuffer.deallocate()
    }

    /// The window of `sequence` over 2048 samples, its left half in `previousShape` and its
    /// right half in `shape`, applied to `x` in place. Eight-short sequences are windowed per
    /// short block by the caller.
    private static func applyLongWindow(_ x: UnsafeMutablePointer<Float>, _ sequence: AACWindowSequence, shape: Int, previousShape: Int) {
        let rise = AACWindow.long[previousShape], fall = AACWindow.long[shape]
        let shortRise = AACWindow.short[previousShape], shortFall = AACWindow.short[shape]
        switch sequence {
        case .onlyLong, .longStart:
            for n in 0..<1024 { x[n] *= rise[n] }
        case .longStop:
            for n in 0..<448 { x[n] = 0 }
            for n in 0..<128 { x[448 + n] *= shortRise[n] }
        case .eightShort:
            return
        }
        switch sequence {
        case .onlyLong, .longStop:
            for n in 0..<1024 { x[1024 + n] *= fall[1023 - n] }
        case .longStart:
            for n in 0..<128 { x[1472 + n] *= shortFall[127 - n] }
            for n in 1600..<2048 { x[n] = 0 }
        case .eightShort:
            return
        }
    }

    /// Decodes `ch.spectrum` into 1024 samples at `output` (PCM units), keeping the overlap.
    func synthesize(_ ch: AACChannel, into output: UnsafeMutablePointer<Float>) {
        let info = ch.info
        if info.isShort {
            buffer.update(repeating: 0, count: 2048)
            for w in 0..<8 {
                short.inverse(ch.spectrum + w * 128, shortBuffer)
                let rise = AACWindow.short[w == 0 ? ch.previousShape : info.shape], fall = AACWindow.short[info.shape]
                let at = buffer + 448 + w * 128
                for n in 0..<128 {
                    at[n] += shortBuffer[n] * rise[n] * (1.0 / 128)
                    at[128 + n] += shortBuffer[128 + n] * fall[127 - n] * (1.0 / 128)
                }
            }
        } else {
            long.inverse(ch.spectrum, buffer)
            for n in 0..<2048 { buffer[n] *= 1.0 / 1024 }
            Self.applyLongWindow(buffer, info.sequence, shape: info.shape, previousShape: ch.previousShape)
        }
        for n in 0..<1024 {
            output[n] = ch.overlap[n] + buffer[n]
            ch.overlap[n] = buffer[1024 + n]
        }
        ch.previousShape = info.shape
    }

    /// The spectrum of 2048 samples at `input` (the last frame's 1024 and this one's) under
    /// `sequence`, into `spectrum` (1024 coefficients; 8 × 128 for eight short windows):
    /// X[k] = 2 Σ w[n] x[n] cos(…), the analysis the standard pairs with its 2/N synthesis.
    func analyze(_ input: UnsafePointer<Float>, _ sequence: AACWindowSequence, shape: Int, previousShape: Int,
                 into spectrum: UnsafeMutablePointer<Float>) {
        if sequence == .eightShort {
            for w in 0..<8 {
                let rise = AACWindow.short[w == 0 ? previousShape : shape], fall = AACWindow.short[shape]
                let at = input + 448 + w * 128
                for n in 0..<128 {
                    shortBuffer[n] = 2 * at[n] * rise[n]
                    shortBuffer[128 + n] = 2 * at[128 + n] * fall[127 - n]
                }
                short.forward(shortBuffer, spectrum + w * 128)
            }
        } else {
            for n in 0..<2048 { buffer[n] = 2 * input[n] }
            Self.applyLongWindow(buffer, sequence, shape: shape, previousShape: previousShape)
            long.forward(buffer, spectrum)
        }
    }
}
