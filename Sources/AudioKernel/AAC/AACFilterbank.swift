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
                // As for a long block: the 128 DCT-IV outputs d unfold into 256 samples
                // (d[64...], -d[...191]_r, -d[...63]_r, -d[0...]), windowed as they are added.
                short.inverseFolded(ch.spectrum + w * 128, shortBuffer, scale: 1.0 / 128)
                let rise = Self.shortRises[w == 0 ? ch.previousShape : info.shape], fall = Self.shortFalls[info.shape]
                let at = buffer + 448 + w * 128, d = shortBuffer
                for n in 0..<64 { at[n] += rise[n] * d[64 + n] }
                for n in 64..<128 { at[n] -= rise[n] * d[191 - n] }
                for m in 0..<64 { at[128 + m] -= fall[m] * d[63 - m] }
                for m in 64..<128 { at[128 + m] -= fall[m] * d[m - 64] }
            }
            for n in 0..<1024 {
                output[n] = ch.overlap[n] + buffer[n]
                ch.overlap[n] = buffer[1024 + n]
            }
        } else {
            // The DCT-IV's halves v1, v2 (`d`) unfold into (v2, -v2_r, -v1_r, -v1): windowed
            // and overlapped straight from `d`, the 2048 samples never written.
            long.inverseFolded(ch.spectrum, buffer, scale: 1.0 / 1024)
            let rise = Self.rises[(info.sequence == .longStop ? 2 : 0) + ch.previousShape]
            let fall = Self.falls[(info.sequence == .longStart ? 2 : 0) + info.shape]
            let d = buffer, overlap = ch.overlap
            for n in 0..<512 { output[n] = overlap[n] + rise[n] * d[512 + n] }
            for n in 512..<1024 { output[n] = overlap[n] - rise[n] * d[1535 - n] }
            for m in 0..<512 { overlap[m] = -fall[m] * d[511 - m] }
            for m in 512..<1024 { overlap[m] = -fall[m] * d[m - 512] }
        }
        ch.previousShape = info.shape
    }

    /// The first half's window of a long block, at 2 · (longStop ? 1 : 0) + the previous
    /// shape: the long rise, or a stop window's zeros, short rise and ones.
    private nonisolated(unsafe) static let rises: [UnsafePointer<Float>] = (0..<4).map { i in
        let shape = i & 1
        return halfWindow { n in
            guard i >= 2 else { return AACWindow.long[shape][n] }
            return n < 448 ? 0 : n < 576 ? AACWindow.short[shape][n - 448] : 1
        }
    }
    /// The second half's window of a long block, forwards, at 2 · (longStart ? 1 : 0) + the
    /// shape: the long fall, or a start window's ones, short fall and zeros.
    private nonisolated(unsafe) static let falls: [UnsafePointer<Float>] = (0..<4).map { i in
        let shape = i & 1
        return halfWindow { n in
            guard i >= 2 else { return AACWindow.long[shape][1023 - n] }
            return n < 448 ? 1 : n < 576 ? AACWindow.short[shape][575 - n] : 0
        }
    }

    /// A short block's rising and (forwards) falling halves, by shape.
    private nonisolated(unsafe) static let shortRises: [UnsafePointer<Float>] = (0..<2).map { shape in
        halfWindow(count: 128) { AACWindow.short[shape][$0] }
    }
    private nonisolated(unsafe) static let shortFalls: [UnsafePointer<Float>] = (0..<2).map { shape in
        halfWindow(count: 128) { AACWindow.short[shape][127 - $0] }
    }

    /// Window values in memory made once and never freed (read-only after).
    private static func halfWindow(count: Int = 1024, _ value: (Int) -> Float) -> UnsafePointer<Float> {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: count)
        for n in 0..<count { p[n] = value(n) }
        return UnsafePointer(p)
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
