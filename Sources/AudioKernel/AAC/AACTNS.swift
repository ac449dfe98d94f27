import Glibc

/// Temporal noise shaping (ISO/IEC 14496-3, 4.6.9): per window, up to three filters (one for
/// short windows) over ranges of scalefactor bands, each an all-pole filter run across the
/// spectrum in the decoder and its inverse, the matching FIR, in the encoder. The quantization
/// noise then follows the signal's envelope in time within the window: the tool that keeps a
/// plosive inside a long window from smearing noise before it.
struct AACTNS {
    /// AAC-LC's highest filter orders: 12 long, 7 short.
    static let maxOrderLong = 12, maxOrderShort = 7

    var present = false
    var filterCount = [Int](repeating: 0, count: 8)
    /// Per window and filter (index window * 4 + filter).
    var length = [Int](repeating: 0, count: 32)
    var order = [Int](repeating: 0, count: 32)
    var downward = [Bool](repeating: false, count: 32)
    /// The filters' reflection coefficients' indices as sent, and their resolution.
    var coefficientIndex = [Int](repeating: 0, count: 32 * 20)
    var resolution = [Int](repeating: 3, count: 8)
    var compressed = [Bool](repeating: false, count: 32)

    /// Reads `tns_data` for a channel with layout `info`.
    mutating func read(_ reader: inout AACBitReader, info: AACICSInfo) throws(AACError) {
        present = true
        let short = info.isShort
        let maxOrder = short ? Self.maxOrderShort : Self.maxOrderLong
        for w in 0..<info.windowCount {
            filterCount[w] = reader.read(short ? 1 : 2)
            guard filterCount[w] > 0 else { continue }
            resolution[w] = reader.read(1) + 3
            for f in 0..<filterCount[w] {
                let i = w * 4 + f
                length[i] = reader.read(short ? 4 : 6)
                order[i] = reader.read(short ? 3 : 5)
                guard order[i] <= maxOrder else { throw .malformed("TNS order \(order[i]) over \(maxOrder)") }
                guard order[i] > 0 else { continue }
                downward[i] = reader.bit()
                compressed[i] = reader.bit()
                let bits = resolution[w] - (compressed[i] ? 1 : 0)
                for k in 0..<order[i] {
                    var value = reader.read(bits)
                    if value >= 1 << (bits - 1) { value -= 1 << bits }  // two's complement
                    coefficientIndex[i * 20 + k] = value
                }
            }
        }
    }

    /// Writes `tns_data`.
    func write(_ writer: inout AACBitWriter, info: AACICSInfo) {
        let short = info.isShort
        for w in 0..<info.windowCount {
            writer.put(filterCount[w], short ? 1 : 2)
            guard filterCount[w] > 0 else { continue }
            writer.put(resolution[w] - 3, 1)
            for f in 0..<filterCount[w] {
                let i = w * 4 + f
                writer.put(length[i], short ? 4 : 6)
                writer.put(order[i], short ? 3 : 5)
                guard order[i] > 0 else { continue }
                writer.put(downward[i] ? 1 : 0, 1)
                writer.put(compressed[i] ? 1 : 0, 1)
                let bits = resolution[w] - (compressed[i] ? 1 : 0)
                for k in 0..<order[i] { writer.put(coefficientIndex[i * 20 + k], bits) }
            }
        }
    }

    /// The dequantized reflection coefficient an index stands for at `resolution` bits (4.6.9.3).
    static func reflection(_ index: Int, resolution: Int) -> Double {
        let steps = Double(1 << (resolution - 1)) + (index >= 0 ? -0.5 : 0.5)
        return sin(Double(index) * (Double.pi / 2) / steps)
    }

    /// The direct-form LPC coefficients a[1...order] of reflection coefficients (step-up).
    static func lpc(fromReflection k: UnsafePointer<Double>, order: Int, into a: UnsafeMutablePointer<Double>) {
        var b = (Double(0), Double(0), Double(0), Double(0), Double(0), Double(0), Double(0), Double(0),
                 Double(0), Double(0), Double(0), Double(0), Double(0), Double(0), Double(0), Double(0),
                 Double(0), Double(0), Double(0), Double(0), Double(0))
        withUnsafeMutableBytes(of: &b) { raw in
            let tmp = raw.baseAddress!.assumingMemoryBound(to: Double.self)
            a[0] = 1
            for m in 1...order {
                for i in 1..<m { tmp[i] = a[i] + k[m - 1] * a[m - i] }
                for i in 1..<m { a[i] = tmp[i] }
                a[m] = k[m - 1]
            }
        }
    }

    /// Runs the filters over `spectrum` (one frame, windows of `info.windowLength`): all-pole
    /// when decoding, the inverse FIR when encoding.
    func apply(_ spectrum: UnsafeMutablePointer<Float>, info: AACICSInfo, encoding: Bool) {
        guard present else { return }
        let top = min(info.tnsMaxBands, info.maxBands)
        var reflection = (Double(0), Double(0), Double(0), Double(0), Double(0), Double(0), Double(0), Double(0),
                          Double(0), Double(0), Double(0), Double(0), Double(0), Double(0), Double(0), Double(0),
                          Double(0), Double(0), Double(0), Double(0), Double(0))
        var lpc = reflection
        withUnsafeMutableBytes(of: &reflection) { kRaw in
            withUnsafeMutableBytes(of: &lpc) { aRaw in
                let k = kRaw.baseAddress!.assumingMemoryBound(to: Double.self)
                let a = aRaw.baseAddress!.assumingMemoryBound(to: Double.self)
                for w in 0..<info.windowCount {
                    var upper = info.numBands
                    for f in 0..<filterCount[w] {
                        let i = w * 4 + f
                        let lower = max(0, upper - length[i])
                        defer { upper = lower }
                        let n = order[i]
                        guard n > 0 else { continue }
                        for m in 0..<n { k[m] = Self.reflection(coefficientIndex[i * 20 + m], resolution: resolution[w]) }
                        Self.lpc(fromReflection: k, order: n, into: a)
                        let start = Int(info.offsets[min(lower, top)]), end = Int(info.offsets[min(upper, top)])
                        guard end > start else { continue }
                        let base = spectrum + w * info.windowLength
                        Self.filter(base, start: start, end: end, downward: downward[i], lpc: a, order: n, encoding: encoding)
                    }
                }
            }
        }
    }

    private static func filter(_ x: UnsafeMutablePointer<Float>, start: Int, end: Int, downward: Bool,
                               lpc: UnsafePointer<Double>, order: Int, encoding: Bool) {
        let count = end - start
        let step = downward ? -1 : 1
        let first = downward ? end - 1 : start
        // Filter state: the last `order` inputs (FIR) or outputs (all-pole), newest first.
        var state = (Float(0), Float(0), Float(0), Float(0), Float(0), Float(0), Float(0), Float(0), Float(0), Float(0),
                     Float(0), Float(0), Float(0), Float(0), Float(0), Float(0), Float(0), Float(0), Float(0), Float(0))
        withUnsafeMutableBytes(of: &state) { raw in
            let s = raw.baseAddress!.assumingMemoryBound(to: Float.self)
            var p = first
            for _ in 0..<count {
                let input = x[p]
                var y = Double(input)
                if encoding {
                    for j in 0..<order { y += lpc[j + 1] * Double(s[j]) }
                } else {
                    for j in 0..<order { y -= lpc[j + 1] * Double(s[j]) }
                }
                var j = order - 1
                while j > 0 { s[j] = s[j - 1]; j -= 1 }
                s[0] = encoding ? input : Float(y)
                x[p] = Float(y)
                p += step
            }
        }
    }
}
