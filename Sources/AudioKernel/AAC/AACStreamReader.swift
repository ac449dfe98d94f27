import Glibc

/// Reads an `individual_channel_stream` (ISO/IEC 14496-3, 4.4.2.7) into an ``AACChannel``:
/// section data, scalefactors, pulses, TNS, the Huffman-coded spectrum; then dequantizes it
/// (`x = sign(q)·|q|^(4/3)·2^((sf − 100)/4)`) and fills noise bands (PNS) from the decoder's
/// random generator, in the order ffmpeg's decoder draws from the same generator, so that
/// both decode a file with noise bands to the same samples.
struct AACStreamReader {
    /// |q|^(4/3) for every magnitude a frame can carry (8191 from an escape, plus a pulse).
    static let powerFourThirds: [Float] = (0..<(8192 + 16)).map { Float(pow(Double($0), 4.0 / 3)) }
    /// 2^((sf − 100)/4) for sf 0...255.
    static let gains: [Float] = (0..<256).map { Float(exp2(Double($0 - 100) / 4)) }

    let rateIndex: Int
    /// PNS's generator: ffmpeg's LCG and seed, shared by all channels of the stream.
    var randomState: UInt32 = 0x1F2E_3D4C
    var toolsSeen: AACDecoder.Tools = []

    init(rateIndex: Int) { self.rateIndex = rateIndex }

    mutating func read(_ ch: AACChannel, _ reader: inout AACBitReader, commonWindow: Bool, intensityAllowed: Bool) throws(AACError) {
        ch.globalGain = reader.read(8)
        if !commonWindow { try ch.info.read(&reader, rateIndex: rateIndex) }
        switch ch.info.sequence {
        case .eightShort: toolsSeen.insert(.shortWindows)
        case .longStart, .longStop: toolsSeen.insert(.transitionWindows)
        case .onlyLong: break
        }
        if ch.info.shape == 1 { toolsSeen.insert(.kbdWindows) }
        try readSections(ch, &reader, intensityAllowed: intensityAllowed)
        try readScalefactors(ch, &reader)
        var pulses: (count: Int, positions: [Int], amplitudes: [Int])? = nil
        if reader.bit() {
            guard !ch.info.isShort else { throw .malformed("pulse data in short windows") }
            let count = reader.read(2) + 1
            let startBand = reader.read(6)
            guard startBand < ch.info.numBands else { throw .malformed("pulse start band \(startBand)") }
            var k = Int(ch.info.offsets[startBand])
            var positions = [0, 0, 0, 0], amplitudes = [0, 0, 0, 0]
            for i in 0..<count {
                k += reader.read(5)
                guard k < 1024 else { throw .malformed("pulse past the spectrum") }
                positions[i] = k
                amplitudes[i] = reader.read(4)
            }
            pulses = (count, positions, amplitudes)
            toolsSeen.insert(.pulses)
        }
        ch.tns.present = false
        if reader.bit() {
            try ch.tns.read(&reader, info: ch.info)
            toolsSeen.insert(.temporalNoiseShaping)
        }
        if reader.bit() { throw .unsupported("gain control (AAC SSR)") }
        try readSpectrum(ch, &reader)
        if let pulses {
            for i in 0..<pulses.count {
                let k = pulses.positions[i]
                let q = ch.quantized[k]
                ch.quantized[k] = q > 0 ? q + Int32(pulses.amplitudes[i]) : q - Int32(pulses.amplitudes[i])
            }
        }
        guard !reader.isOverrun else { throw .malformed("channel data runs past the frame") }
        dequantize(ch)
    }

    private func readSections(_ ch: AACChannel, _ reader: inout AACBitReader, intensityAllowed: Bool) throws(AACError) {
        let info = ch.info
        let lengthBits = info.isShort ? 3 : 5
        let escape = (1 << lengthBits) - 1
        for g in 0..<info.groupCount {
            var band = 0
            while band < info.maxBands {
                let book = reader.read(4)
                guard book != 12 else { throw .malformed("reserved codebook 12") }
                guard intensityAllowed || book < AACChannel.intensityOutOfPhase else { throw .malformed("intensity stereo outside a channel pair") }
                var length = 0
                while true {
                    let increment = reader.read(lengthBits)
                    length += increment
                    if increment != escape { break }
                    guard !reader.isOverrun, length <= info.maxBands else { throw .malformed("section runs past max_sfb") }
                }
                guard length > 0 || info.maxBands == 0, band + length <= info.maxBands else {
                    throw .malformed("section of \(length) bands at band \(band) of \(info.maxBands)")
                }
                if length == 0 { throw .malformed("empty section") }
                for b in band..<(band + length) { ch.bandTypes[g * AACChannel.groupStride + b] = book }
                band += length
            }
        }
    }

    private func readScalefactors(_ ch: AACChannel, _ reader: inout AACBitReader) throws(AACError) {
        var scalefactor = ch.globalGain
        var noiseEnergy = ch.globalGain - 90
        var position = 0
        var firstNoise = true
        let huffman = AACHuffmanDecoder.scalefactors
        for g in 0..<ch.info.groupCount {
            for b in 0..<ch.info.maxBands {
                let i = g * AACChannel.groupStride + b
                switch ch.bandTypes[i] {
                case AACChannel.zeroBook:
                    ch.scalefactors[i] = 0
                case AACChannel.intensityOutOfPhase, AACChannel.intensityInPhase:
                    guard let delta = huffman.decode(&reader) else { throw .malformed("no scalefactor code") }
                    position += delta - 60
                    guard (-100...155).contains(position) else { throw .malformed("intensity position \(position)") }
                    ch.scalefactors[i] = position
                case AACChannel.noiseBook:
                    if firstNoise {
                        noiseEnergy += reader.read(9) - 256
                        firstNoise = false
                    } else {
                        guard let delta = huffman.decode(&reader) else { throw .malformed("no scalefactor code") }
                        noiseEnergy += delta - 60
                    }
                    guard (0...255).contains(noiseEnergy) else { throw .malformed("noise energy \(noiseEnergy)") }
                    ch.scalefactors[i] = noiseEnergy
                default:
                    guard let delta = huffman.decode(&reader) else { throw .malformed("no scalefactor code") }
                    scalefactor += delta - 60
                    guard (0...255).contains(scalefactor) else { throw .malformed("scalefactor \(scalefactor)") }
                    ch.scalefactors[i] = scalefactor
                }
            }
        }
    }

    private mutating func readSpectrum(_ ch: AACChannel, _ reader: inout AACBitReader) throws(AACError) {
        ch.quantized.update(repeating: 0, count: 1024)
        let info = ch.info
        var window = 0
        for g in 0..<info.groupCount {
            for b in 0..<info.maxBands {
                let book = ch.bandTypes[g * AACChannel.groupStride + b]
                guard (1...11).contains(book) else { continue }
                let huffman = AACHuffmanDecoder.spectral[book - 1]
                let lower = Int(info.offsets[b]), upper = Int(info.offsets[b + 1])
                let dimension = book < 5 ? 4 : 2
                for w in window..<(window + info.groupLengths[g]) {
                    let base = ch.quantized + w * 128
                    var k = lower
                    while k < upper {
                        guard let symbol = huffman.decode(&reader) else { throw .malformed("no codebook \(book) code") }
                        try Self.unpack(symbol, book: book, dimension: dimension, into: base + k, &reader)
                        if book == 11 && (base[k] > 15 || base[k] < -15 || base[k + 1] > 15 || base[k + 1] < -15) { toolsSeen.insert(.escapes) }
                        k += dimension
                    }
                }
                guard !reader.isOverrun else { throw .malformed("spectral data runs past the frame") }
            }
            window += info.groupLengths[g]
        }
    }

    /// Spreads a codeword's index into its 4 or 2 values, with their sign bits and escapes.
    @inline(__always)
    private static func unpack(_ symbol: Int, book: Int, dimension: Int, into out: UnsafeMutablePointer<Int32>, _ reader: inout AACBitReader) throws(AACError) {
        switch book {
        case 1, 2:
            out[0] = Int32(symbol / 27 - 1); out[1] = Int32(symbol / 9 % 3 - 1)
            out[2] = Int32(symbol / 3 % 3 - 1); out[3] = Int32(symbol % 3 - 1)
        case 3, 4:
            out[0] = Int32(symbol / 27); out[1] = Int32(symbol / 9 % 3)
            out[2] = Int32(symbol / 3 % 3); out[3] = Int32(symbol % 3)
            for j in 0..<4 where out[j] != 0 && reader.bit() { out[j] = -out[j] }
        case 5, 6:
            out[0] = Int32(symbol / 9 - 4); out[1] = Int32(symbol % 9 - 4)
        case 7, 8:
            out[0] = Int32(symbol / 8); out[1] = Int32(symbol % 8)
            for j in 0..<2 where out[j] != 0 && reader.bit() { out[j] = -out[j] }
        case 9, 10:
            out[0] = Int32(symbol / 13); out[1] = Int32(symbol % 13)
            for j in 0..<2 where out[j] != 0 && reader.bit() { out[j] = -out[j] }
        default:
            out[0] = Int32(symbol / 17); out[1] = Int32(symbol % 17)
            var negative = (false, false)
            if out[0] != 0 { negative.0 = reader.bit() }
            if out[1] != 0 { negative.1 = reader.bit() }
            for j in 0..<2 where out[j] == 16 {
                var prefix = 0
                while reader.bit() {
                    prefix += 1
                    guard prefix <= 8 else { throw .malformed("escape longer than 13 bits") }
                }
                out[j] = Int32((1 << (prefix + 4)) + reader.read(prefix + 4))
            }
            if negative.0 { out[0] = -out[0] }
            if negative.1 { out[1] = -out[1] }
        }
    }

    private mutating func dequantize(_ ch: AACChannel) {
        let info = ch.info
        ch.spectrum.update(repeating: 0, count: 1024)
        var window = 0
        for g in 0..<info.groupCount {
            for b in 0..<info.maxBands {
                let i = g * AACChannel.groupStride + b
                let book = ch.bandTypes[i]
                let lower = Int(info.offsets[b]), upper = Int(info.offsets[b + 1])
                for w in window..<(window + info.groupLengths[g]) {
                    let q = ch.quantized + w * 128, x = ch.spectrum + w * 128
                    if book == AACChannel.noiseBook {
                        toolsSeen.insert(.perceptualNoise)
                        var energy: Float = 0
                        for k in lower..<upper {
                            randomState = randomState &* 1_664_525 &+ 1_013_904_223
                            let value = Float(Int32(bitPattern: randomState))
                            x[k] = value
                            energy += value * value
                        }
                        let scale = Float(exp2(Double(ch.scalefactors[i]) / 4)) / energy.squareRoot()
                        for k in lower..<upper { x[k] *= scale }
                    } else if (1...11).contains(book) {
                        let gain = Self.gains[ch.scalefactors[i]]
                        Self.powerFourThirds.withUnsafeBufferPointer { table in
                            for k in lower..<upper {
                                let v = q[k]
                                let magnitude = table[Int(min(v.magnitude, 8207))] * gain
                                x[k] = v < 0 ? -magnitude : magnitude
                            }
                        }
                    }
                }
            }
            window += info.groupLengths[g]
        }
    }
}
