import Glibc
/// An AAC-LC decoder (ISO/IEC 14496-3, subpart 4): one `raw_data_block` in, 1024 samples per
/// channel out. It covers what real files hold: long, start, stop and eight-short windows
/// with sine or KBD shapes, all eleven spectral codebooks with escapes, pulses, TNS, M/S,
/// intensity stereo and PNS, channel configurations 1 to 7; program config, data stream and
/// fill elements are read past. Its output matches ffmpeg's decoder within one PCM16 step.
///
/// The first frame's output is the encoder's priming (the overlap of nothing): a file's edit
/// list says how much to drop. Per frame: no allocation, no lock. Not thread-safe.
public final class AACDecoder {
    public static let frameLength = 1024

    /// The coding tools a stream has used: what a test needs to know that a file exercised
    /// the decoder's paths.
    public struct Tools: OptionSet, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let shortWindows = Tools(rawValue: 1 << 0)
        public static let transitionWindows = Tools(rawValue: 1 << 1)
        public static let kbdWindows = Tools(rawValue: 1 << 2)
        public static let temporalNoiseShaping = Tools(rawValue: 1 << 3)
        public static let perceptualNoise = Tools(rawValue: 1 << 4)
        public static let midSide = Tools(rawValue: 1 << 5)
        public static let intensity = Tools(rawValue: 1 << 6)
        public static let pulses = Tools(rawValue: 1 << 7)
        public static let escapes = Tools(rawValue: 1 << 8)

        public var description: String {
            let names = ["short windows", "start/stop windows", "KBD windows", "TNS", "PNS", "M/S", "intensity", "pulses", "escapes"]
            return names.enumerated().filter { rawValue & (1 << $0.offset) != 0 }.map(\.element).joined(separator: ", ")
        }
    }

    /// Every tool the frames decoded so far have used.
    public var toolsSeen: Tools { stream.toolsSeen }

    public let config: AudioSpecificConfig
    public var channels: Int { config.channels }

    private let rateIndex: Int
    private var reader: AACBitReader
    private var stream: AACStreamReader
    private let channelStates: [AACChannel]
    private let filterbank = AACFilterbank()
    private let pcm: UnsafeMutablePointer<Float>
    private var msUsed = [Bool](repeating: false, count: 8 * AACChannel.groupStride)

    public init(config: AudioSpecificConfig) throws(AACError) {
        guard let index = AudioSpecificConfig.sampleRates.firstIndex(of: config.sampleRate) else {
            throw .unsupported("a sample rate of \(config.sampleRate) Hz, which has no frequency index")
        }
        guard (1...7).contains(config.channelConfiguration) else { throw .unsupported("channel configuration \(config.channelConfiguration)") }
        self.config = config
        rateIndex = index
        reader = AACBitReader(capacity: 6_144 / 8 * config.channels)
        stream = AACStreamReader(rateIndex: index)
        channelStates = (0..<config.channels).map { _ in AACChannel() }
        pcm = .allocate(capacity: 1024 * config.channels)
    }

    deinit {
        reader.deallocate()
        pcm.deallocate()
    }

    /// Decodes `frame` into 1024 interleaved frames of `channels` samples, full scale ±1.
    public func decode(_ frame: UnsafeRawBufferPointer, into output: UnsafeMutablePointer<Float>) throws(AACError) {
        try decodeToPCM(frame)
        let n = channels
        if n == 1 {
            // Contiguous: the loop vectorizes, which the strided one below does not.
            for i in 0..<1024 { output[i] = pcm[i] * (1.0 / 32768) }
            return
        }
        for c in 0..<n {
            let source = pcm + c * 1024
            for i in 0..<1024 { output[i * n + c] = source[i] * (1.0 / 32768) }
        }
    }

    /// Decodes `frame` into 1024 interleaved frames of PCM16, rounded to nearest and clipped.
    public func decode(_ frame: UnsafeRawBufferPointer, into output: UnsafeMutablePointer<Int16>) throws(AACError) {
        try decodeToPCM(frame)
        let n = channels
        for c in 0..<n {
            let source = pcm + c * 1024
            for i in 0..<1024 {
                // Clamped first (a NaN from a hostile frame lands on -32768, never traps), then
                // rounded half to even by the float adder: 1.5·2^23 pushes the fraction out.
                let x = source[i]
                let v = x > -32_768 ? (x < 32_767 ? x : 32_767) : -32_768
                output[i * n + c] = Int16((v + 12_582_912) - 12_582_912)
            }
        }
    }

    /// Forgets the overlap and window shapes, as at the start of a stream.
    public func reset() {
        for ch in channelStates {
            ch.overlap.update(repeating: 0, count: 1024)
            ch.previousShape = 0
        }
    }

    private func decodeToPCM(_ frame: UnsafeRawBufferPointer) throws(AACError) {
        guard reader.reset(frame) else { throw .malformed("a frame of \(frame.count) bytes, over the \(reader.bitCount / 8) a decoder buffers") }
        var next = 0
        elements: while true {
            guard reader.remaining >= 3 else { throw .malformed("no END element") }
            let id = reader.read(3)
            switch id {
            case 0, 3:  // SCE, LFE
                _ = reader.read(4)
                guard next < channels else { throw .malformed("more channels than configuration \(config.channelConfiguration) has") }
                try stream.read(channelStates[next], &reader, commonWindow: false, intensityAllowed: false)
                next += 1
            case 1:  // CPE
                _ = reader.read(4)
                guard next + 1 < channels else { throw .malformed("more channels than configuration \(config.channelConfiguration) has") }
                try readPair(channelStates[next], channelStates[next + 1])
                next += 2
            case 2:
                throw .unsupported("coupling channel elements")
            case 4:  // DSE
                _ = reader.read(4)
                let aligned = reader.bit()
                var count = reader.read(8)
                if count == 255 { count += reader.read(8) }
                if aligned { reader.byteAlign() }
                reader.skip(count * 8)
            case 5:
                skipProgramConfig()
            case 6:  // FIL (SBR in a fill element is implicit HE-AAC: the LC core decodes)
                var count = reader.read(4)
                if count == 15 { count += reader.read(8) - 1 }
                reader.skip(count * 8)
            default:
                break elements
            }
            guard !reader.isOverrun else { throw .malformed("an element runs past the frame") }
        }
        guard next == channels else { throw .malformed("\(next) channels in a frame of configuration \(config.channelConfiguration)") }
        for (c, ch) in channelStates.enumerated() {
            ch.tns.apply(ch.spectrum, info: ch.info, encoding: false)
            filterbank.synthesize(ch, into: pcm + c * 1024)
        }
    }

    private func readPair(_ left: AACChannel, _ right: AACChannel) throws(AACError) {
        let common = reader.bit()
        var msMode = 0
        if common {
            try left.info.read(&reader, rateIndex: rateIndex)
            right.info = left.info
            msMode = reader.read(2)
            guard msMode != 3 else { throw .malformed("reserved ms_mask_present 3") }
            if msMode == 1 {
                for g in 0..<left.info.groupCount {
                    for b in 0..<left.info.maxBands { msUsed[g * AACChannel.groupStride + b] = reader.bit() }
                }
            }
        }
        try stream.read(left, &reader, commonWindow: common, intensityAllowed: false)
        try stream.read(right, &reader, commonWindow: common, intensityAllowed: true)
        if msMode != 0 { stream.toolsSeen.insert(.midSide) }
        if msMode != 0 { applyMidSide(left, right, all: msMode == 2) }
        applyIntensity(left, right, msMode: msMode)
    }

    /// L = M + S, R = M − S where the band says so and neither channel codes it as noise or
    /// intensity.
    private func applyMidSide(_ left: AACChannel, _ right: AACChannel, all: Bool) {
        let info = left.info
        var window = 0
        for g in 0..<info.groupCount {
            for b in 0..<info.maxBands {
                let i = g * AACChannel.groupStride + b
                guard all || msUsed[i], left.bandTypes[i] < AACChannel.noiseBook, right.bandTypes[i] < AACChannel.noiseBook else { continue }
                for w in window..<(window + info.groupLengths[g]) {
                    let l = left.spectrum + w * 128, r = right.spectrum + w * 128
                    for k in Int(info.offsets[b])..<Int(info.offsets[b + 1]) {
                        let m = l[k], s = r[k]
                        l[k] = m + s
                        r[k] = m - s
                    }
                }
            }
            window += info.groupLengths[g]
        }
    }

    /// The right channel's intensity bands: the left's spectrum scaled by 2^(−position/4),
    /// in or out of phase by the codebook, flipped where M/S is on.
    private func applyIntensity(_ left: AACChannel, _ right: AACChannel, msMode: Int) {
        let info = right.info
        var window = 0
        for g in 0..<info.groupCount {
            for b in 0..<info.maxBands {
                let i = g * AACChannel.groupStride + b
                let book = right.bandTypes[i]
                guard book == AACChannel.intensityInPhase || book == AACChannel.intensityOutOfPhase else { continue }
                var sign: Float = book == AACChannel.intensityInPhase ? 1 : -1
                if msMode == 2 || (msMode == 1 && msUsed[i]) { sign = -sign }
                stream.toolsSeen.insert(.intensity)
                let scale = sign * Float(exp2(-Double(right.scalefactors[i]) / 4))
                for w in window..<(window + info.groupLengths[g]) {
                    let l = left.spectrum + w * 128, r = right.spectrum + w * 128
                    for k in Int(info.offsets[b])..<Int(info.offsets[b + 1]) { r[k] = scale * l[k] }
                }
            }
            window += info.groupLengths[g]
        }
    }

    /// Reads past a `program_config_element` (4.4.1.1): its channel lists and comment.
    private func skipProgramConfig() {
        reader.skip(4 + 2 + 4)
        let front = reader.read(4), side = reader.read(4), back = reader.read(4)
        let lfe = reader.read(2), data = reader.read(3), coupling = reader.read(4)
        if reader.bit() { reader.skip(4) }
        if reader.bit() { reader.skip(4) }
        if reader.bit() { reader.skip(3) }
        reader.skip(5 * (front + side + back) + 4 * (lfe + data) + 5 * coupling)
        reader.byteAlign()
        reader.skip(8 * reader.read(8))
    }
}
