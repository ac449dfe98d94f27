import Glibc

/// Reads an `individual_channel_stream` (ISO/IEC 14496-3, 4.4.2.7) into an ``AACChannel``:
/// section data, scalefactors, pulses, TNS, the Huffman-coded spectrum; then dequantizes it
/// (`x = sign(q)·|q|^(4/3)·2^((sf − 100)/4)`) and fills noise bands (PNS) from the decoder's
/// random generator, in the order ffmpeg's decoder draws from the same generator, so that
/// both decode a file with noise bands to the same samples.
struct AACStreamReader {

    private static let scalefactorBook = AACHuffmanDecoder.scalefactors
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
        var pulses: (count: Int, positions: InlineArray<4, Int>, amplitudes: InlineArray<4, Int>)? = nil
        if reader.bit() {
            guard !ch.info.isShort else { throw .malformed("pulse data in short windows") }
            let count = reader.read(2) + 1
            let startBand = reader.read(6)
            guard startBand < ch.info.numBands else { throw .malformed("pulse start band \(startBand)") }
            var k = Int(ch.info.offsets[startBand])
            var positions: InlineArray<4, Int> = [0, 0, 0, 0], amplitudes: InlineArray<4, Int> = [0, 0, 0, 0]
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
        if let pulses {
            // Pulses add to quantized values: the spectrum is read whole, then dequantized.
            try readSpectrum(ch, &reader)
            for i in 0..<pulses.count {
                let k = pulses.positions[i]
                let q = ch.quantized[k]
                ch.quantized[k] = q > 0 ? q + Int32(pulses.amplitudes[i]) : q - Int32(pulses.amplitudes[i])
            }
            guard !reader.isOverrun else { throw .malformed("channel data runs past the frame") }
            dequantize(ch)
        } else {
            try readDequantizedSpectrum(ch, &reader)
            guard !reader.isOverrun else { throw .malformed("channel data runs past the frame") }
        }
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
        let huffman = Self.scalefactorBook
        for g in 0..<ch.info.groupCount {
            for b in 0..<ch.info.maxBands {
                let i = g * AACChannel.groupStride + b
                switch ch.bandTypes[i] {
                case AACChannel.zeroBook:
                    ch.scalefactors[i] = 0
                case AACChannel.intensityOutOfPhase, AACChannel.intensityInPhase:
                    let delta = huffman.decode(&reader)
                    guard delta >= 0 else { throw .malformed("no scalefactor code") }
                    position += delta - 60
                    guard (-100...155).contains(position) else { throw .malformed("intensity position \(position)") }
                    ch.scalefactors[i] = position
                case AACChannel.noiseBook:
                    if firstNoise {
                        noiseEnergy += reader.read(9) - 256
                        firstNoise = false
                    } else {
                        let delta = huffman.decode(&reader)
                        guard delta >= 0 else { throw .malformed("no scalefactor code") }
                        noiseEnergy += delta - 60
                    }
                    guard (0...255).contains(noiseEnergy) else { throw .malformed("noise energy \(noiseEnergy)") }
                    ch.scalefactors[i] = noiseEnergy
                default:
                    let delta = huffman.decode(&reader)
                    guard delta >= 0 else { throw .malformed("no scalefactor code") }
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
                let huffman = Self.spectral[book - 1]
                let lower = Int(info.offsets[b]), upper = Int(info.offsets[b + 1])
                let quads = book < 5
                let signed = book == 1 || book == 2 || book == 5 || book == 6
                let width = quads ? 4 : 2
                for w in window..<(window + info.groupLengths[g]) {
                    var out = ch.quantized + (w &* 128 &+ lower)
                    let end = ch.quantized + (w &* 128 &+ upper)
                    while out < end {
                        let symbol = huffman.decode(&reader)
                        guard symbol >= 0 else { throw .malformed("no codebook \(book) code") }
                        let packed = huffman.values(symbol)
                        out[0] = Int32(Int8(truncatingIfNeeded: packed))
                        out[1] = Int32(Int8(truncatingIfNeeded: packed &>> 8))
                        if quads {
                            out[2] = Int32(Int8(truncatingIfNeeded: packed &>> 16))
                            out[3] = Int32(Int8(truncatingIfNeeded: packed &>> 24))
                        }
                        if !signed {
                            // A sign bit for each non-zero value, in order: all of them in one read.
                            let nonZero = Int(truncatingIfNeeded: packed &>> 32) & 7
                            if nonZero > 0 {
                                var signs = reader.read(nonZero) << (4 &- nonZero)
                                for j in 0..<width where out[j] != 0 {
                                    if signs & 8 != 0 { out[j] = 0 &- out[j] }
                                    signs &<<= 1
                                }
                            }
                        }
                        if book == 11 {
                            for j in 0..<2 where out[j] == 16 || out[j] == -16 {
                                let escaped = try Self.escape(&reader)
                                out[j] = out[j] < 0 ? 0 &- escaped : escaped
                                toolsSeen.insert(.escapes)
                            }
                        }
                        out += width
                    }
                }
                guard !reader.isOverrun else { throw .malformed("spectral data runs past the frame") }
            }
            window += info.groupLengths[g]
        }
    }

    /// The spectrum read and dequantized in one pass, for a channel without pulses (nearly
    /// all): each Huffman symbol becomes its tuple of |q|^(4/3) from the book's table, signed,
    /// times the band's gain, with no quantized values stored and read back. Noise bands draw
    /// in the same order as ``dequantize(_:)``. Decodes to the same floats as the two passes.
    private mutating func readDequantizedSpectrum(_ ch: AACChannel, _ outer: inout AACBitReader) throws(AACError) {
        // The bits through a register (a Huffman lookup one shift away from the last), with
        // the reader moved past what was read on every way out.
        var reader = outer.cache()
        let start = reader.position
        defer { outer.skip(reader.position - start) }
        ch.spectrum.update(repeating: 0, count: 1024)
        let info = ch.info
        let gains = Self.gainTable, power = Self.powerTable, signMasks = AACHuffmanDecoder.signMasks
        let books = Self.spectral
        var window = 0
        for g in 0..<info.groupCount {
            let windows = window..<(window + info.groupLengths[g])
            for b in 0..<info.maxBands {
                let i = g * AACChannel.groupStride + b
                let book = ch.bandTypes[i]
                let lower = Int(info.offsets[b]), upper = Int(info.offsets[b + 1])
                if book == AACChannel.noiseBook {
                    for w in windows { fillNoise(ch.spectrum + w * 128, lower..<upper, scalefactor: ch.scalefactors[i]) }
                    continue
                }
                guard (1...11).contains(book) else { continue }
                let huffman = books[book - 1]
                let gain = gains[ch.scalefactors[i]]
                for w in windows {
                    var out = ch.spectrum + (w &* 128 &+ lower)
                    let end = ch.spectrum + (w &* 128 &+ upper)
                    switch book {
                    case 1, 2:
                        while out < end {
                            reader.refill()
                            let symbol = huffman.decodeWithSigns(&reader).symbol
                            guard symbol >= 0 else { throw .malformed("no codebook \(book) code") }
                            Self.store(huffman.powers(symbol) * gain, out)
                            out += 4
                        }
                    case 3, 4:
                        while out < end {
                            Self.store(try Self.unsignedTuple(huffman, &reader, book: book, gain: gain, signMasks: signMasks).values, out)
                            out += 4
                        }
                    case 5, 6:
                        while out < end {
                            reader.refill()
                            let symbol = huffman.decodeWithSigns(&reader).symbol
                            guard symbol >= 0 else { throw .malformed("no codebook \(book) code") }
                            let v = huffman.powers(symbol) * gain
                            out[0] = v[0]; out[1] = v[1]
                            out += 2
                        }
                    case 7, 8, 9, 10:
                        while out < end {
                            let v = try Self.unsignedTuple(huffman, &reader, book: book, gain: gain, signMasks: signMasks).values
                            out[0] = v[0]; out[1] = v[1]
                            out += 2
                        }
                    default:  // 11: as 7-10, then a magnitude of 16 escapes to a longer one
                        while out < end {
                            let (v, packed) = try Self.unsignedTuple(huffman, &reader, book: book, gain: gain, signMasks: signMasks)
                            out[0] = v[0]; out[1] = v[1]
                            if packed & 0x1010 != 0 {
                                // Escapes follow both sign bits, first value first.
                                for j in 0..<2 where Int(truncatingIfNeeded: packed &>> (8 &* UInt64(j))) & 0xFF == 16 {
                                    reader.refill()
                                    let x = power[Int(try Self.escape(&reader))] * gain
                                    out[j] = v[j] < 0 ? -x : x
                                    toolsSeen.insert(.escapes)
                                }
                            }
                            out += 2
                        }
                    }
                }
                guard outer.position + (reader.position - start) <= outer.bitCount else { throw .malformed("spectral data runs past the frame") }
            }
            window += info.groupLengths[g]
        }
    }

    /// The next tuple of an unsigned book: its |q|^(4/3) times `gain`, signed by the bits
    /// that follow the codeword; and its packed values (book 11's escapes are read from them).
    @inline(__always)
    private static func unsignedTuple(_ huffman: AACHuffmanDecoder, _ reader: inout AACBitCache, book: Int, gain: Float,
                                      signMasks: UnsafePointer<SIMD4<UInt32>>) throws(AACError) -> (values: SIMD4<Float>, packed: UInt64) {
        reader.refill()
        let (symbol, signs) = huffman.decodeWithSigns(&reader)
        guard symbol >= 0 else { throw .malformed("no codebook \(book) code") }
        let packed = huffman.values(symbol)
        let mask = signMasks[Int(truncatingIfNeeded: packed &>> 36) & 0xF0 | signs]
        return (flip(huffman.powers(symbol) * gain, mask), packed)
    }

    /// `v` with the sign bits in `mask` flipped.
    @inline(__always)
    private static func flip(_ v: SIMD4<Float>, _ mask: SIMD4<UInt32>) -> SIMD4<Float> {
        unsafeBitCast(unsafeBitCast(v, to: SIMD4<UInt32>.self) ^ mask, to: SIMD4<Float>.self)
    }

    @inline(__always)
    private static func store(_ v: SIMD4<Float>, _ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD4<Float>.self)
    }

    /// A noise band (PNS): values from the generator, scaled to the band's energy.
    private mutating func fillNoise(_ x: UnsafeMutablePointer<Float>, _ band: Range<Int>, scalefactor: Int) {
        toolsSeen.insert(.perceptualNoise)
        var energy: Float = 0
        var state = randomState
        for k in band {
            state = state &* 1_664_525 &+ 1_013_904_223
            let value = Float(Int32(bitPattern: state))
            x[k] = value
            energy += value * value
        }
        randomState = state
        let scale = Float(exp2(Double(scalefactor) / 4)) / energy.squareRoot()
        for k in band { x[k] *= scale }
    }

    /// Book 11's escape (4.6.3.3): N ones, a zero, then N + 4 bits; 2^(N+4) + those bits, up
    /// to 8191.
    @inline(__always)
    private static func escape(_ reader: inout AACBitReader) throws(AACError) -> Int32 {
        var prefix = 0
        while reader.bit() {
            prefix += 1
            guard prefix <= 8 else { throw .malformed("escape longer than 13 bits") }
        }
        return Int32((1 << (prefix + 4)) + reader.read(prefix + 4))
    }

    /// The same from a bit cache, refilled by the caller: at most 21 bits.
    @inline(__always)
    private static func escape(_ bits: inout AACBitCache) throws(AACError) -> Int32 {
        let prefix = (~bits.peek32()).leadingZeroBitCount
        guard prefix <= 8 else { throw .malformed("escape longer than 13 bits") }
        bits.skip(prefix + 1)
        return Int32((1 << (prefix + 4)) + bits.read(prefix + 4))
    }

    /// The spectral books, read without retaining an array per band.
    // Read-only after the lazy initializer: safe to share between threads.
    private nonisolated(unsafe) static let spectral: UnsafePointer<AACHuffmanDecoder> = {
        let books = UnsafeMutablePointer<AACHuffmanDecoder>.allocate(capacity: 11)
        books.initialize(from: AACHuffmanDecoder.spectral, count: 11)
        return UnsafePointer(books)
    }()

    private mutating func dequantize(_ ch: AACChannel) {
        let info = ch.info
        ch.spectrum.update(repeating: 0, count: 1024)
        let table = Self.powerTable, gains = Self.gainTable
        var window = 0
        for g in 0..<info.groupCount {
            for b in 0..<info.maxBands {
                let i = g * AACChannel.groupStride + b
                let book = ch.bandTypes[i]
                let lower = Int(info.offsets[b]), upper = Int(info.offsets[b + 1])
                for w in window..<(window + info.groupLengths[g]) {
                    let q = ch.quantized + w * 128, x = ch.spectrum + w * 128
                    if book == AACChannel.noiseBook {
                        fillNoise(x, lower..<upper, scalefactor: ch.scalefactors[i])
                    } else if book >= 1 && book <= 11 {
                        let gain = gains[ch.scalefactors[i]]
                        for k in lower..<upper {
                            let v = q[k]
                            let magnitude = table[Int(min(v.magnitude, 8207))] * gain
                            x[k] = v < 0 ? -magnitude : magnitude
                        }
                    }
                }
            }
            window += info.groupLengths[g]
        }
    }

    /// |q|^(4/3) for every magnitude a frame can carry (8191 from an escape, plus a pulse),
    /// and 2^((sf − 100)/4) for sf 0...255: pointers made once, read-only after (a static
    /// array is checked for its lazy initialization and bounds on every element read).
    private nonisolated(unsafe) static let powerTable = table(count: 8192 + 16) { Float(pow(Double($0), 4.0 / 3)) }
    private nonisolated(unsafe) static let gainTable = table(count: 256) { Float(exp2(Double($0 - 100) / 4)) }

    private static func table(count: Int, _ value: (Int) -> Float) -> UnsafePointer<Float> {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: count)
        for i in 0..<count { p[i] = value(i) }
        return UnsafePointer(p)
    }
}
