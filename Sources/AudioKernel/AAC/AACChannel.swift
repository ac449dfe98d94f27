/// One channel of an AAC stream: what its frame carries once read (window layout, band
/// codebooks, scalefactors, tools, the spectrum), and what carries over to the next frame
/// (the second half of the last window, its shape). Buffers are allocated once.
final class AACChannel {
    /// Codebook numbers with a meaning of their own (ISO/IEC 14496-3, table 4.151).
    static let zeroBook = 0, noiseBook = 13, intensityOutOfPhase = 14, intensityInPhase = 15
    /// Band index stride per window group in ``bandTypes`` and ``scalefactors``.
    static let groupStride = AACICSInfo.maxBands

    var info = AACICSInfo()
    var globalGain = 0
    // Pointers, not arrays: a class's array property is checked for exclusive access on
    // every element read (2.6 % of decoding, measured).
    let bandTypes: UnsafeMutablePointer<Int> = .allocate(capacity: 8 * groupStride)
    /// Per band: the scalefactor (spectral books), noise energy (PNS) or intensity position.
    let scalefactors: UnsafeMutablePointer<Int> = .allocate(capacity: 8 * groupStride)
    var tns = AACTNS()
    let quantized: UnsafeMutablePointer<Int32> = .allocate(capacity: 1024)
    let spectrum: UnsafeMutablePointer<Float> = .allocate(capacity: 1024)
    /// The second half of the last frame's windowed output, in PCM units.
    let overlap: UnsafeMutablePointer<Float> = .allocate(capacity: 1024)
    var previousShape = 0

    init() {
        overlap.initialize(repeating: 0, count: 1024)
        spectrum.initialize(repeating: 0, count: 1024)
        quantized.initialize(repeating: 0, count: 1024)
        bandTypes.initialize(repeating: 0, count: 8 * Self.groupStride)
        scalefactors.initialize(repeating: 0, count: 8 * Self.groupStride)
    }

    deinit {
        quantized.deallocate()
        spectrum.deallocate()
        overlap.deallocate()
        bandTypes.deallocate()
        scalefactors.deallocate()
    }
}
