import Glibc

/// Codes one channel's spectrum for a frame: chooses scalefactors from the psychoacoustic
/// model's allowed noise, quantizes (`q = ⌊(|x|·2^(−(sf−100)/4))^(3/4) + 0.4054⌋`), picks a
/// Huffman book per band, substitutes noise (PNS) for noise-like bands it would otherwise
/// leave empty, joins bands into sections, and writes the `individual_channel_stream`.
///
/// The rate loop calls ``bits(offset:commonWindow:)`` with one offset added to every band's
/// scalefactor until the frame fits its bits; ``write(_:commonWindow:)`` then writes what the
/// last call chose, with sections found by dynamic programming over the books.
final class AACSpectrumCoder {
    static let rounding: Float = 0.4054
    /// 2^(−3(sf − 100)/16): the quantizer's gain in the |x|^(3/4) domain.
    private static let stepGains: [Float] = (0..<256).map { Float(exp2(-3 * Double($0 - 100) / 16)) }
    private static let stride = AACChannel.groupStride
    private static let noise = AACChannel.noiseBook
    /// Book states in the section search: 0...11 and 13 (noise).
    private static let states = 14
    /// Bands less tonal than this may be coded as noise.
    static let noiseTonality: Float = 0.35

    var info = AACICSInfo()
    var tns = AACTNS()
    /// Bands coded with values: the bandwidth.
    var codedBands = 0
    /// Bands past ``codedBands`` and below this may carry noise (PNS).
    var noiseBands = 0
    /// The first band noise may stand in for.
    var noiseStart = 0
    /// max_sfb.
    var bandCount: Int { max(codedBands, noiseBands) }
    /// The spectrum to code (after M/S and TNS), in PCM units.
    let spectrum: UnsafeMutablePointer<Float> = .allocate(capacity: 1024)
    let energy: UnsafeMutablePointer<Float> = .allocate(capacity: 8 * stride)
    /// Noise the neighbours mask, and noise below the threshold in quiet, per band.
    let allowed: UnsafeMutablePointer<Float> = .allocate(capacity: 8 * stride)
    let quiet: UnsafeMutablePointer<Float> = .allocate(capacity: 8 * stride)
    /// 0 for noise, 1 for a tone.
    let tonality: UnsafeMutablePointer<Float> = .allocate(capacity: 8 * stride)
    /// Bands where noise may not stand in (M/S bands of a pair).
    let noiseForbidden: UnsafeMutablePointer<Bool> = .allocate(capacity: 8 * stride)

    private let magnitude: UnsafeMutablePointer<Float> = .allocate(capacity: 1024)
    private let quantized: UnsafeMutablePointer<Int32> = .allocate(capacity: 1024)
    private let base: UnsafeMutablePointer<Int> = .allocate(capacity: 8 * stride)
    private let quietBase: UnsafeMutablePointer<Int> = .allocate(capacity: 8 * stride)
    private let lowest: UnsafeMutablePointer<Int> = .allocate(capacity: 8 * stride)
    private let empty: UnsafeMutablePointer<Bool> = .allocate(capacity: 8 * stride)
    private let noiseLike: UnsafeMutablePointer<Bool> = .allocate(capacity: 8 * stride)
    private let scalefactor: UnsafeMutablePointer<Int> = .allocate(capacity: 8 * stride)
    private let book: UnsafeMutablePointer<Int> = .allocate(capacity: 8 * stride)
    private let largest: UnsafeMutablePointer<Int32> = .allocate(capacity: 8 * stride)
    private let pathCost: UnsafeMutablePointer<Int> = .allocate(capacity: 64 * states)
    private let pathFrom: UnsafeMutablePointer<Int8> = .allocate(capacity: 64 * states)
    private let chosen: UnsafeMutablePointer<Int> = .allocate(capacity: 8 * stride)

    init() {
        noiseForbidden.initialize(repeating: false, count: 8 * Self.stride)
    }

    deinit {
        for p in [spectrum, energy, allowed, quiet, tonality, magnitude] { p.deallocate() }
        for p in [base, quietBase, lowest, scalefactor, book, chosen] { p.deallocate() }
        noiseForbidden.deallocate(); empty.deallocate(); noiseLike.deallocate()
        quantized.deallocate(); largest.deallocate(); pathCost.deallocate(); pathFrom.deallocate()
    }

    /// The windows of group `g` and the coefficient range of band `b` in each.
    @inline(__always)
    private func forEachChunk(group g: Int, band b: Int, firstWindow: Int, _ body: (Int, Int) -> Void) {
        let lower = Int(info.offsets[b]), width = Int(info.offsets[b + 1]) - lower
        for w in firstWindow..<(firstWindow + info.groupLengths[g]) { body(w * info.windowLength + lower, width) }
    }

    /// Per band: the scalefactor that makes the quantization noise about the allowed noise,
    /// the one that makes it the threshold in quiet, and the least that keeps every value
    /// within 8191; whether noise could stand in for it.
    func prepare() {
        for k in 0..<1024 {
            let a = abs(spectrum[k])
            magnitude[k] = (a * a.squareRoot()).squareRoot()  // |x|^(3/4)
        }
        var window = 0
        for g in 0..<info.groupCount {
            for b in 0..<bandCount {
                let i = g * Self.stride + b
                noiseLike[i] = b >= noiseStart && b < noiseBands && !noiseForbidden[i] && tonality[i] < Self.noiseTonality
                    && energy[i] > (b < codedBands ? quiet[i] : 0)
                guard b < codedBands else { continue }
                var rootSum: Float = 0, peak: Float = 0
                forEachChunk(group: g, band: b, firstWindow: window) { start, width in
                    for k in start..<(start + width) {
                        rootSum += abs(spectrum[k]).squareRoot()
                        peak = max(peak, magnitude[k])
                    }
                }
                empty[i] = peak == 0
                // Noise ≈ (4/27)·s^(3/2)·Σ√|x| for a step s = 2^((sf − 100)/4), solved for sf.
                let form = 27 / (4 * max(rootSum, 1e-9))
                base[i] = Int((100 + 8.0 / 3.0 * log2(max(allowed[i], 1e-9) * form)).rounded())
                quietBase[i] = Int((100 + 8.0 / 3.0 * log2(max(quiet[i], 1e-9) * form)).rounded())
                lowest[i] = peak > 0 ? max(0, Int((100 + 16.0 / 3.0 * log2(peak / 8191)).rounded(.up))) : 0
            }
            window += info.groupLengths[g]
        }
    }

    /// Quantizes band `b` of group `g` at its scalefactor; returns the largest magnitude.
    @discardableResult
    private func quantize(group g: Int, band b: Int, firstWindow: Int) -> Int32 {
        let i = g * Self.stride + b
        let gain = Self.stepGains[scalefactor[i]]
        var peak: Int32 = 0
        forEachChunk(group: g, band: b, firstWindow: firstWindow) { start, width in
            for k in start..<(start + width) {
                let q = Int32(min(magnitude[k] * gain + Self.rounding, 8191))
                quantized[k] = spectrum[k] < 0 ? -q : q
                peak = max(peak, q)
            }
        }
        largest[i] = peak
        return peak
    }

    private func bandCost(group g: Int, band b: Int, firstWindow: Int, book k: Int) -> Int {
        var total = 0
        forEachChunk(group: g, band: b, firstWindow: firstWindow) { start, width in
            total += AACHuffmanEncoder.cost(quantized + start, count: width, book: k)
        }
        return total
    }

    private func clear(group g: Int, band b: Int, firstWindow: Int) {
        forEachChunk(group: g, band: b, firstWindow: firstWindow) { start, width in
            (quantized + start).update(repeating: 0, count: width)
        }
    }

    /// Quantizes every band at its base scalefactor + `offset`, chooses books (the cheaper
    /// of the smallest pair that fits; noise for a noise-like band left empty) and returns the
    /// bits of the whole channel stream, with sections as runs of equal books.
    func bits(offset: Int, commonWindow: Bool) -> Int {
        // The offset scales every band's masked noise by 2^(3·offset/8); a band whose whole
        // energy is below that, or below the threshold in quiet, is not worth a bit.
        let noiseScale = exp2(Float(offset) * 0.375)
        var window = 0
        for g in 0..<info.groupCount {
            for b in 0..<bandCount {
                let i = g * Self.stride + b
                largest[i] = 0
                guard b < codedBands, !empty[i], energy[i] > max(allowed[i] * noiseScale, quiet[i]) else {
                    book[i] = noiseLike[i] ? Self.noise : 0
                    continue
                }
                scalefactor[i] = min(255, max(lowest[i], base[i] + offset, quietBase[i], 0))
                let peak = quantize(group: g, band: b, firstWindow: window)
                book[i] = peak != 0 ? -1 : (noiseLike[i] ? Self.noise : 0)  // -1: chosen below
            }
            window += info.groupLengths[g]
        }
        keepScalefactorChainLegal()
        var total = 8 + 3 + (commonWindow ? 0 : (info.isShort ? 15 : 11)) + tnsBits()
        window = 0
        let lengthBits = info.isShort ? 3 : 5, escape = (1 << lengthBits) - 1
        var previous = -1, previousNoise = -1
        for g in 0..<info.groupCount {
            var runBook = -2, runLength = 0
            for b in 0..<bandCount {
                let i = g * Self.stride + b
                if book[i] == Self.noise {
                    let level = noiseLevel(i, after: previousNoise)
                    total += previousNoise < 0 ? 9 : AACHuffmanEncoder.scalefactorBits(level - previousNoise)
                    previousNoise = level
                } else if book[i] != 0 {
                    let first = max(1, AACHuffmanEncoder.smallestBook(for: largest[i]))
                    let a = bandCost(group: g, band: b, firstWindow: window, book: first)
                    let c = first < 11 ? bandCost(group: g, band: b, firstWindow: window, book: first + 1) : Int.max
                    book[i] = c < a ? first + 1 : first
                    total += min(a, c)
                    total += previous < 0 ? 0 : AACHuffmanEncoder.scalefactorBits(scalefactor[i] - previous)
                    previous = scalefactor[i]
                }
                if book[i] == runBook {
                    runLength += 1
                } else {
                    if runLength > 0 { total += 4 + lengthBits * (runLength / escape + 1) }
                    runBook = book[i]
                    runLength = 1
                }
            }
            if runLength > 0 { total += 4 + lengthBits * (runLength / escape + 1) }
            window += info.groupLengths[g]
        }
        return total
    }

    /// A noise band's energy as coded, 2·log₂ of its energy per window (the decoder makes
    /// 2^(level/2)), kept within 60 of the last noise band's and in 0...255.
    private func noiseLevel(_ i: Int, after previous: Int) -> Int {
        let windows = Float(info.groupLengths[i / Self.stride])
        var level = Int((2 * log2(max(energy[i] / windows, 1))).rounded())
        if previous >= 0 { level = min(max(level, previous - 60), previous + 60) }
        return min(max(level, 0), 255)
    }

    /// Consecutive coded scalefactors may differ by 60 at most (the codebook's range). A
    /// band too fine for its predecessor is made coarser; one too coarse is made finer when
    /// its values still fit, otherwise its predecessors are made coarser. A band that then
    /// quantizes to zeros stays coded (zeros cost a bit per four values) to keep the chain.
    private func keepScalefactorChainLegal() {
        var previousIndex = -1
        var window = 0
        for g in 0..<info.groupCount {
            for b in 0..<bandCount {
                let i = g * Self.stride + b
                guard book[i] == -1 else { continue }
                if previousIndex >= 0 {
                    let d = scalefactor[i] - scalefactor[previousIndex]
                    if d < -60 {
                        scalefactor[i] = scalefactor[previousIndex] - 60
                        quantize(group: g, band: b, firstWindow: window)
                    } else if d > 60 {
                        if scalefactor[previousIndex] + 60 >= lowest[i] {
                            scalefactor[i] = scalefactor[previousIndex] + 60
                            quantize(group: g, band: b, firstWindow: window)
                        } else {
                            scalefactor[i] = lowest[i]
                            quantize(group: g, band: b, firstWindow: window)
                            var next = i, p = previousIndex
                            while p >= 0 && scalefactor[next] - scalefactor[p] > 60 {
                                scalefactor[p] = scalefactor[next] - 60
                                let pg = p / Self.stride
                                quantize(group: pg, band: p % Self.stride, firstWindow: info.firstWindow(ofGroup: pg))
                                next = p
                                p = previousCoded(before: p)
                            }
                        }
                    }
                }
                previousIndex = i
            }
            window += info.groupLengths[g]
        }
    }

    private func previousCoded(before index: Int) -> Int {
        var i = index - 1
        while i >= 0 {
            if i % Self.stride < bandCount && book[i] == -1 { return i }
            i -= 1
        }
        return -1
    }

    private func tnsBits() -> Int {
        guard tns.present else { return 0 }
        var total = 0
        let short = info.isShort
        for w in 0..<info.windowCount {
            total += short ? 1 : 2
            guard tns.filterCount[w] > 0 else { continue }
            total += 1
            for f in 0..<tns.filterCount[w] {
                let i = w * 4 + f
                total += short ? 7 : 11
                if tns.order[i] > 0 { total += 2 + tns.order[i] * (tns.resolution[w] - (tns.compressed[i] ? 1 : 0)) }
            }
        }
        return total
    }

    /// Writes the channel stream chosen by the last ``bits(offset:commonWindow:)``.
    func write(_ writer: inout AACBitWriter, commonWindow: Bool) {
        chooseSections()
        var globalGain = 100
        search: for g in 0..<info.groupCount {
            for b in 0..<bandCount where (1...11).contains(book[g * Self.stride + b]) {
                globalGain = scalefactor[g * Self.stride + b]
                break search
            }
        }
        writer.put(globalGain, 8)
        if !commonWindow { info.write(&writer) }
        let lengthBits = info.isShort ? 3 : 5, escape = (1 << lengthBits) - 1
        for g in 0..<info.groupCount {
            var b = 0
            while b < bandCount {
                let k = chosen[g * Self.stride + b]
                var length = 1
                while b + length < bandCount && chosen[g * Self.stride + b + length] == k { length += 1 }
                writer.put(k, 4)
                var rest = length
                while rest >= escape {
                    writer.put(escape, lengthBits)
                    rest -= escape
                }
                writer.put(rest, lengthBits)
                b += length
            }
        }
        var previous = globalGain, previousNoise = -1
        for g in 0..<info.groupCount {
            for b in 0..<bandCount {
                let i = g * Self.stride + b
                switch chosen[i] {
                case 0:
                    continue
                case Self.noise:
                    var level = noiseLevel(i, after: previousNoise)
                    if previousNoise < 0 {
                        // The first is sent in 9 bits, relative to global_gain − 90.
                        level = min(max(level, globalGain - 90 - 256), globalGain - 90 + 255)
                        writer.put(level - (globalGain - 90) + 256, 9)
                    } else {
                        AACHuffmanEncoder.writeScalefactor(level - previousNoise, into: &writer)
                    }
                    previousNoise = level
                default:
                    // A zero band joined to a section repeats the scalefactor before it.
                    if book[i] == 0 { scalefactor[i] = previous }
                    AACHuffmanEncoder.writeScalefactor(scalefactor[i] - previous, into: &writer)
                    previous = scalefactor[i]
                }
            }
        }
        writer.put(0, 1)  // pulse_data_present
        writer.put(tns.present ? 1 : 0, 1)
        if tns.present { tns.write(&writer, info: info) }
        writer.put(0, 1)  // gain_control_data_present
        var window = 0
        for g in 0..<info.groupCount {
            for b in 0..<bandCount {
                let k = chosen[g * Self.stride + b]
                guard (1...11).contains(k) else { continue }
                forEachChunk(group: g, band: b, firstWindow: window) { start, width in
                    AACHuffmanEncoder.write(quantized + start, count: width, book: k, into: &writer)
                }
            }
            window += info.groupLengths[g]
        }
    }

    /// Sections by dynamic programming over (band, book): a band's cost in each book that
    /// can code it, plus a section header wherever the book changes. An empty band may join
    /// a neighbouring section (its zeros and a repeated scalefactor are often cheaper than
    /// two headers); a noise band keeps book 13.
    private func chooseSections() {
        let lengthBits = info.isShort ? 3 : 5
        let header = 4 + lengthBits
        let impossible = Int.max / 4
        var window = 0
        for g in 0..<info.groupCount {
            let n = bandCount
            guard n > 0 else { continue }
            for b in 0..<n {
                let i = g * Self.stride + b
                let noise = book[i] == Self.noise, zero = book[i] == 0
                if zero && b < codedBands { clear(group: g, band: b, firstWindow: window) }
                let first = zero ? 1 : max(1, AACHuffmanEncoder.smallestBook(for: largest[i]))
                for k in 0..<Self.states {
                    var cost = impossible
                    if noise {
                        if k == 13 { cost = 0 }
                    } else if k == 0 {
                        if zero { cost = 0 }
                    } else if k >= first && k <= 11 && (b < codedBands || !zero) {
                        cost = bandCost(group: g, band: b, firstWindow: window, book: k) + (zero ? 1 : 0)
                    }
                    var best = impossible, from = k
                    if b > 0 {
                        for j in 0..<Self.states {
                            let c = pathCost[(b - 1) * Self.states + j] + (j == k ? 0 : header)
                            if c < best { best = c; from = j }
                        }
                    } else {
                        best = header
                    }
                    pathCost[b * Self.states + k] = min(best + cost, impossible)
                    pathFrom[b * Self.states + k] = Int8(from)
                }
            }
            var k = 0
            for j in 1..<Self.states where pathCost[(n - 1) * Self.states + j] < pathCost[(n - 1) * Self.states + k] { k = j }
            var b = n - 1
            while b >= 0 {
                chosen[g * Self.stride + b] = k
                k = Int(pathFrom[b * Self.states + k])
                b -= 1
            }
            window += info.groupLengths[g]
        }
    }
}
