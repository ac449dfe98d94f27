/// An AAC-LC encoder (ISO/IEC 14496-3, subpart 4): PCM in, `raw_data_block`s out, mono or
/// stereo, 8 to 48 kHz, at a constant bit rate.
///
/// Per frame of 1024 samples per channel:
/// 1. **Block switching.** ``AACTransientDetector`` marks attacks per 128-sample segment;
///    a frame whose eight short windows would hold an attack is coded as eight short windows
///    (grouped around the attack), with start and stop windows on either side, so that a
///    plosive's quantization noise stays within 256 samples of it instead of spreading over
///    2048. This needs one block of look-ahead: a frame is written when the block after it
///    has arrived.
/// 2. **Filterbank.** ``AACFilterbank`` windows (sine shape) and transforms.
/// 3. **Psychoacoustics.** ``AACPsychoacousticModel`` gives each band its allowed noise.
/// 4. **Stereo.** Bands where left and right are alike are coded as mid and side.
/// 5. **Rate loop.** One offset added to every band's scalefactor is searched by bisection
///    until the frame fits its budget: the mean bits per frame plus a share of the bit
///    reservoir (more for short windows). Whatever the reservoir holds beyond the
///    decoder's buffer (6144 bits per channel) is padded with fill elements, and so is the
///    reservoir left at the end, so the file's rate is the one asked for.
/// 6. **Bitstream.** ``AACSpectrumCoder`` writes each channel with sections chosen by dynamic
///    programming over the eleven books.
///
/// The output starts with ``priming`` samples of the filterbank's delay: an MPEG-4 file's
/// edit list hides them (``MPEG4AudioWriter/finish(priming:length:sync:)``). Per frame: no
/// allocation. Not thread-safe.
public final class AACEncoder {
    public static let priming = 1024
    public static let frameLength = 1024

    public let config: AudioSpecificConfig
    public let bitRate: Int
    public var channels: Int { config.channels }
    /// Samples per channel taken so far.
    public private(set) var inputFrames = 0
    /// Frames written so far.
    public private(set) var outputFrames = 0
    /// Bits written so far, fill included.
    public private(set) var outputBits = 0

    private let rateIndex: Int
    private let model: AACPsychoacousticModel
    private let filterbank = AACFilterbank()
    private var detector: [AACTransientDetector]
    private let coders: [AACSpectrumCoder]
    private var writer: AACBitWriter
    /// Per channel: the last three blocks, B(t−1) B(t) B(t+1), in PCM units.
    private let history: UnsafeMutablePointer<Float>
    private var filled = 0
    /// Attacks in B(t−1), B(t), B(t+1) (any channel), 8 segments each.
    private var attacks: (UInt8, UInt8, UInt8) = (0, 0, 0)
    private var blocksIn = 0
    private var previousSequence = AACWindowSequence.onlyLong
    private let meanBits: Double
    private var reservoir: Double = 0
    private let reservoirSize: Double
    private var msUsed = [Bool](repeating: false, count: 8 * AACChannel.groupStride)

    /// - Parameters:
    ///   - bitRate: bits per second for the whole stream; from 8000 up to what the decoder's
    ///     buffer allows (6144 bits per channel per frame: 6 × the sample rate per channel).
    ///   - perceptualNoise: code noise-like bands above the bandwidth as noise (PNS). Off by
    ///     default: wideband PESQ of speech measured it lower (2.52 against 2.84 at 24 kbit/s).
    public init(sampleRate: Int, channels: Int, bitRate: Int, perceptualNoise: Bool = false) throws(AACError) {
        guard let index = AudioSpecificConfig.sampleRates.firstIndex(of: sampleRate), (8_000...48_000).contains(sampleRate) else {
            throw .unsupported("encoding at \(sampleRate) Hz (8, 11.025, 12, 16, 22.05, 24, 32, 44.1 and 48 kHz are)")
        }
        guard channels == 1 || channels == 2 else { throw .unsupported("encoding \(channels) channels (1 or 2 are)") }
        let ceiling = min(6 * sampleRate * channels, 320_000 * channels)
        guard (8_000...ceiling).contains(bitRate) else {
            throw .unsupported("\(bitRate) bit/s at \(sampleRate) Hz, \(channels) channel(s) (8000 to \(ceiling) are)")
        }
        config = AudioSpecificConfig(sampleRate: sampleRate, channelConfiguration: channels)
        self.bitRate = bitRate
        rateIndex = index
        let perChannel = Double(bitRate) / Double(channels)
        let tuning = Self.tuning(bitsPerChannel: perChannel, sampleRate: sampleRate)
        model = AACPsychoacousticModel(sampleRate: sampleRate, bandwidth: tuning.bandwidth, compression: tuning.compression,
                                       noiseFrom: tuning.bandwidth, noiseTo: perceptualNoise ? Double(sampleRate) / 2 : 0, rateIndex: index)
        detector = Array(repeating: AACTransientDetector(), count: channels)
        coders = (0..<channels).map { _ in AACSpectrumCoder() }
        writer = AACBitWriter(capacity: 6_144 / 8 * channels)
        history = .allocate(capacity: 3 * 1024 * channels)
        history.initialize(repeating: 0, count: 3 * 1024 * channels)
        meanBits = Double(bitRate) * 1024 / Double(sampleRate)
        reservoirSize = max(0, Double(6_144 * channels) - meanBits)
    }

    deinit {
        writer.deallocate()
        history.deallocate()
    }

    /// Takes `frames` interleaved frames of samples (full scale ±1); `emit` receives each
    /// coded frame, valid for the call only.
    public func encode(_ samples: UnsafePointer<Float>, frames: Int, emit: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        try take(frames, emit) { i, c in samples[i * channels + c] * 32768 }
    }

    /// Takes `frames` interleaved frames of PCM16.
    public func encode(_ samples: UnsafePointer<Int16>, frames: Int, emit: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        try take(frames, emit) { i, c in Float(samples[i * channels + c]) }
    }

    /// Codes what remains (zeros complete the last block) and the frames the look-ahead and
    /// the filterbank's overlap hold back. After it, ``inputFrames`` is the edit list's length.
    public func finish(emit: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        guard inputFrames > 0 else { return }
        // Frames are written until the decoder's output covers every input sample: the frame
        // after the last block, so blocks up to two past it must exist.
        let lastBlock = (inputFrames - 1) / 1024
        let written = inputFrames
        while blocksIn <= lastBlock + 2 {
            let missing = 1024 - filled
            try take(missing, emit, final: blocksIn == lastBlock + 2) { _, _ in 0 }
        }
        inputFrames = written
    }

    private func take(_ frames: Int, _ emit: (UnsafeRawBufferPointer) throws -> Void, final: Bool = false,
                      _ sample: (Int, Int) -> Float) rethrows {
        var i = 0
        while i < frames {
            let count = min(frames - i, 1024 - filled)
            for c in 0..<channels {
                let block = history + c * 3072 + 2048 + filled
                for n in 0..<count { block[n] = sample(i + n, c) }
            }
            filled += count
            i += count
            inputFrames += count
            if filled == 1024 {
                try blockArrived(emit, final: final)
                filled = 0
            }
        }
    }

    /// B(t+1) is complete: frame t can be coded.
    private func blockArrived(_ emit: (UnsafeRawBufferPointer) throws -> Void, final: Bool) rethrows {
        var newAttacks: UInt8 = 0
        for c in 0..<channels { newAttacks |= detector[c].attacks(in: history + c * 3072 + 2048) }
        attacks = (attacks.1, attacks.2, newAttacks)
        blocksIn += 1
        if blocksIn >= 2 {
            try emit(codeFrame(final: final))
        }
        for c in 0..<channels {
            let h = history + c * 3072
            h.update(from: h + 1024, count: 2048)
        }
    }

    /// The attacks under frame t's eight short windows: the second half of B(t−1) and the
    /// first half of B(t), one segment per window. The segment after them counts too (as the
    /// last window's): a long start window still reaches into it, and a click there would
    /// spread its noise over the start window's 1600 samples (seen: a smear at −65 dBFS 40 ms
    /// before clicks that fell there).
    private func shortWindowAttacks(_ before: UInt8, _ block: UInt8) -> UInt8 {
        (before >> 4) | (block << 4) | (block & 0x10 != 0 ? 0x80 : 0)
    }

    private func codeFrame(final: Bool) -> UnsafeRawBufferPointer {
        let mine = shortWindowAttacks(attacks.0, attacks.1)
        let next = shortWindowAttacks(attacks.1, attacks.2)
        let wasShort = previousSequence == .eightShort || previousSequence == .longStart
        var sequence: AACWindowSequence
        if mine != 0 || (wasShort && next != 0) {
            sequence = .eightShort
        } else if next != 0 {
            sequence = .longStart
        } else if wasShort {
            sequence = .longStop
        } else {
            sequence = .onlyLong
        }
        if previousSequence == .longStart { sequence = .eightShort }
        var info = AACICSInfo()
        info.setLayout(sequence, rateIndex: rateIndex)
        info.shape = 0
        if sequence == .eightShort { Self.group(&info, attacks: mine) }
        let previousShape = 0
        for (c, coder) in coders.enumerated() {
            filterbank.analyze(history + c * 3072, sequence, shape: 0, previousShape: previousShape, into: coder.spectrum)
            coder.info = info
            coder.tns.present = false
            model.analyze(coder.spectrum, info: info, energy: coder.energy, allowed: coder.allowed, quiet: coder.quiet, tonality: coder.tonality)
            let layout = info.isShort ? model.short : model.long
            coder.codedBands = layout.codedBands
            coder.noiseStart = layout.noiseStart
            coder.noiseBands = layout.noiseBands
            coder.info.maxBands = coder.bandCount
        }
        let midSide = channels == 2 ? chooseMidSide() : false
        for coder in coders { coder.prepare() }
        previousSequence = sequence

        let short = sequence == .eightShort
        let share = short ? 0.6 : 0.25
        let ceiling = Double(6_144 * channels - 64)
        let budget = Int(min(ceiling, meanBits + reservoir * share))
        let overhead = channels == 2 ? 3 + 4 + 1 + (short ? 15 : 11) + 2 + (midSide ? coders[0].bandCount * info.groupCount : 0) + 3 : 3 + 4 + 3
        // Bisection for the finest offset that fits.
        var low = -40, high = 100
        // The coders keep the state of the offset they last counted.
        var counted = Int.min
        func total(_ offset: Int) -> Int {
            counted = offset
            return overhead + coders.reduce(0) { $0 + $1.bits(offset: offset, commonWindow: channels == 2) }
        }
        while total(high) > budget && coders[0].codedBands > 0 {
            // Even the coarsest offset does not fit: give up the highest band.
            for coder in coders {
                coder.codedBands = max(0, coder.codedBands - 1)
                coder.info.maxBands = coder.bandCount
            }
        }
        while high - low > 1 {
            let middle = (low + high) / 2
            if total(middle) <= budget { high = middle } else { low = middle }
        }
        if total(low) <= budget { high = low }
        if counted != high { _ = total(high) }  // the coders in the chosen state

        writer.reset()
        if channels == 1 {
            writer.put(0, 3)
            writer.put(0, 4)
            coders[0].write(&writer, commonWindow: false)
        } else {
            writer.put(1, 3)
            writer.put(0, 4)
            writer.put(1, 1)  // common_window
            coders[0].info.write(&writer)
            if midSide {
                writer.put(1, 2)
                for g in 0..<info.groupCount {
                    for b in 0..<coders[0].bandCount { writer.put(msUsed[g * AACChannel.groupStride + b] ? 1 : 0, 1) }
                }
            } else {
                writer.put(0, 2)
            }
            coders[0].write(&writer, commonWindow: true)
            coders[1].write(&writer, commonWindow: true)
        }
        var used = writer.bitCount + 3
        var pad = reservoir + meanBits - Double(used) - reservoirSize
        if final { pad = reservoir + meanBits - Double(used) }
        pad = min(pad, ceiling - Double(used))
        if pad >= 8 { writeFill(bits: Int(pad)) }
        writer.put(7, 3)  // END
        writer.byteAlign()
        used = writer.bitCount
        reservoir = max(0, reservoir + meanBits - Double(used))
        outputFrames += 1
        outputBits += used
        return writer.frame
    }

    /// The bandwidth coded and how much the masking thresholds' range is compressed, by bit
    /// rate per channel. Measured by wideband PESQ (P.862.2) at 24 kHz on recorded human
    /// voices (four readers, women and a man, and a conversation: AACQualityTests) and on
    /// the TalkCo tutor's speech: below 40 kbit/s a narrow band coded well beats a wide one
    /// coded coarsely (4.56 kHz at 24 kbit/s, widening by 0.11 Hz a bit/s: 5.44 kHz at
    /// 32 kbit/s, where 6.08 kHz scored 3.37 on the voices and 5.44 kHz 3.56), and the
    /// allowed noise follows the masking threshold only as its 0.15th power, so that loud
    /// formants keep a high SNR; from 40 kbit/s the band widens to 0.24 of the rate and the
    /// threshold counts more (0.35).
    static func tuning(bitsPerChannel: Double, sampleRate: Int) -> (bandwidth: Double, compression: Float) {
        let nyquist = Double(sampleRate) / 2
        if bitsPerChannel < 40_000 {
            return (min(max(4_560 + 0.11 * (bitsPerChannel - 24_000), 3_500), nyquist), 0.15)
        }
        return (min(0.24 * bitsPerChannel, 20_000, nyquist), 0.35)
    }

    /// Fill elements of about `bits` bits in all (whole bytes, 269 at most each).
    private func writeFill(bits: Int) {
        var left = bits
        while left >= 15 {
            // count, then count + escape − 1 payload bytes when count is 15.
            var payload = (left - 7) / 8
            if payload >= 15 { payload = min((left - 15) / 8, 269) }
            writer.put(6, 3)
            if payload >= 15 {
                writer.put(15, 4)
                writer.put(payload - 14, 8)
            } else {
                writer.put(payload, 4)
            }
            // extension_type EXT_FILL (0000) and a fill nibble, then fill bytes 10100101.
            for i in 0..<payload { writer.put(i == 0 ? 0x00 : 0xA5, 8) }
            left -= 7 + (payload >= 15 ? 8 : 0) + 8 * payload
        }
    }

    /// Groups the eight short windows: a new group at each attack and after it.
    private static func group(_ info: inout AACICSInfo, attacks: UInt8) {
        info.groupCount = 0
        info.groupLengths = [0, 0, 0, 0, 0, 0, 0, 0]
        for w in 0..<8 {
            let attack = attacks & (1 << UInt8(w)) != 0
            let afterAttack = w > 0 && attacks & (1 << UInt8(w - 1)) != 0
            if w == 0 || attack || afterAttack {
                info.groupCount += 1
            }
            info.groupLengths[info.groupCount - 1] += 1
        }
    }

    /// Per band: mid and side where they cost fewer bits than left and right. A band's bits
    /// go as the log of its energy over its allowed noise, so M/S pays when
    /// E_M·E_S / (T/2)² < E_L·E_R / (T_L·T_R), T the stricter allowance, halved for each of M
    /// and S because their noises add in L and R; with a 20 % margin.
    private func chooseMidSide() -> Bool {
        let l = coders[0], r = coders[1]
        let info = l.info
        var any = false
        var window = 0
        for g in 0..<info.groupCount {
            for b in l.codedBands..<max(l.codedBands, l.bandCount) {
                let i = g * AACChannel.groupStride + b
                msUsed[i] = false
                l.noiseForbidden[i] = false
                r.noiseForbidden[i] = false
            }
            for b in 0..<l.codedBands {
                let i = g * AACChannel.groupStride + b
                var em: Float = 0, es: Float = 0
                let lower = Int(info.offsets[b]), upper = Int(info.offsets[b + 1])
                for w in window..<(window + info.groupLengths[g]) {
                    let base = w * info.windowLength
                    for k in (base + lower)..<(base + upper) {
                        let m = (l.spectrum[k] + r.spectrum[k]) * 0.5, s = (l.spectrum[k] - r.spectrum[k]) * 0.5
                        em += m * m
                        es += s * s
                    }
                }
                let strict = min(l.allowed[i], r.allowed[i])
                let use = strict > 0 && Double(em) * Double(es) * 4 * Double(l.allowed[i]) * Double(r.allowed[i])
                    < 0.8 * Double(l.energy[i]) * Double(r.energy[i]) * Double(strict) * Double(strict)
                msUsed[i] = use
                // Noise standing in for mid or side would decode uncorrelated in L and R.
                l.noiseForbidden[i] = use
                r.noiseForbidden[i] = use
                guard use else { continue }
                any = true
                for w in window..<(window + info.groupLengths[g]) {
                    let base = w * info.windowLength
                    for k in (base + lower)..<(base + upper) {
                        let m = (l.spectrum[k] + r.spectrum[k]) * 0.5, s = (l.spectrum[k] - r.spectrum[k]) * 0.5
                        l.spectrum[k] = m
                        r.spectrum[k] = s
                    }
                }
                let allowed = min(l.allowed[i], r.allowed[i]) * 0.5
                l.energy[i] = em; r.energy[i] = es
                l.allowed[i] = allowed; r.allowed[i] = allowed
            }
            window += info.groupLengths[g]
        }
        return any
    }
}
