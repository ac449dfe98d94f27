import Glibc

/// Decodes one of AAC's Huffman codebooks through lookup tables: the next 8 bits index a
/// first table; a code longer than that points into a second table indexed by the bits after
/// them, sized for the longest code behind that prefix. Two loads per code at most, built
/// once from ``AACTables``' codewords.
///
/// For the spectral books each symbol's values are unpacked once too (``values(_:)``): the
/// decoder reads a tuple with one load instead of divisions by 27, 9 and 3.
struct AACHuffmanDecoder: @unchecked Sendable {
    private static let primaryBits = 8
    /// Leaf: symbol << 8 | sign bits that follow the code (unsigned spectral books) << 5 |
    /// code length. Link: 1 << 31 | first entry << 5 | bits indexed. 0: no code.
    /// Allocated once for the process and never freed or written after: safe to share.
    private let table: UnsafePointer<UInt32>
    /// Per symbol: its values as signed bytes (4 for books 1-4, 2 for 5-11), and in byte 4
    /// how many are non-zero, in byte 5 which are (bit 3 − i for value i).
    private let unpacked: UnsafePointer<UInt64>
    /// Per symbol: |value|^(4/3) in each lane (the sign included for the signed books), so
    /// that dequantizing a tuple is one load and one multiply by the band's gain.
    private let powers: UnsafePointer<SIMD4<Float>>

    init(codes: [UInt32], lengths: [UInt8], book: Int = 0) {
        let p = Self.primaryBits
        var table = [UInt32](repeating: 0, count: 1 << p)
        // Longest code under each 8-bit prefix, for the second tables' sizes.
        var longest = [Int](repeating: 0, count: 1 << p)
        for (code, length) in zip(codes, lengths) where Int(length) > p {
            let prefix = Int(code >> (UInt32(length) - UInt32(p)))
            longest[prefix] = max(longest[prefix], Int(length))
        }
        for prefix in 0..<(1 << p) where longest[prefix] > 0 {
            let bits = longest[prefix] - p
            table[prefix] = 1 << 31 | UInt32(table.count) << 5 | UInt32(bits)
            table.append(contentsOf: repeatElement(0, count: 1 << bits))
        }
        for (symbol, (code, length)) in zip(codes, lengths).enumerated() {
            let length = Int(length)
            let signs = [3, 4, 7, 8, 9, 10, 11].contains(book) ? Self.values(of: symbol, book: book).filter { $0 != 0 }.count : 0
            let leaf = UInt32(symbol) << 8 | UInt32(signs) << 5 | UInt32(length)
            if length <= p {
                let first = Int(code) << (p - length)
                for i in 0..<(1 << (p - length)) { table[first + i] = leaf }
            } else {
                let prefix = Int(code >> UInt32(length - p))
                let link = table[prefix]
                let base = Int((link >> 5) & 0x3FF_FFFF), bits = Int(link & 31)
                let rest = Int(code) & ((1 << (length - p)) - 1)
                let first = rest << (bits - (length - p))
                for i in 0..<(1 << (bits - (length - p))) { table[base + first + i] = leaf }
            }
        }
        let stored = UnsafeMutablePointer<UInt32>.allocate(capacity: table.count)
        stored.initialize(from: table, count: table.count)
        self.table = UnsafePointer(stored)
        let values = UnsafeMutablePointer<UInt64>.allocate(capacity: max(codes.count, 1))
        let powers = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: max(codes.count, 1))
        for symbol in 0..<codes.count {
            let v = book > 0 ? Self.values(of: symbol, book: book) : []
            var packed: UInt64 = 0
            var power = SIMD4<Float>.zero
            var nonZero: UInt64 = 0
            for (i, x) in v.enumerated() {
                packed |= UInt64(UInt8(bitPattern: Int8(x))) << (8 * UInt64(i))
                power[i] = Float(x.signum()) * Float(pow(Double(x.magnitude), 4.0 / 3))
                if x != 0 { nonZero |= 1 << (3 - UInt64(i)) }
            }
            packed |= UInt64(v.filter { $0 != 0 }.count) << 32 | nonZero << 40
            values[symbol] = packed
            powers[symbol] = power
        }
        unpacked = UnsafePointer(values)
        self.powers = UnsafePointer(powers)
    }

    /// A spectral symbol's values (ISO/IEC 14496-3, 4.6.3.3): signed for books 1, 2, 5, 6;
    /// magnitudes (signs follow in the stream) for the others.
    private static func values(of symbol: Int, book: Int) -> [Int] {
        switch book {
        case 1, 2: return [symbol / 27 - 1, symbol / 9 % 3 - 1, symbol / 3 % 3 - 1, symbol % 3 - 1]
        case 3, 4: return [symbol / 27, symbol / 9 % 3, symbol / 3 % 3, symbol % 3]
        case 5, 6: return [symbol / 9 - 4, symbol % 9 - 4]
        case 7, 8: return [symbol / 8, symbol % 8]
        case 9, 10: return [symbol / 13, symbol % 13]
        default: return [symbol / 17, symbol % 17]
        }
    }

    /// The next symbol, or -1 for bits that are no code of this book (no optional to unwrap
    /// per value in the spectral loop).
    @inline(__always)
    func decode(_ reader: inout AACBitReader) -> Int {
        let entry = lookup(reader.peek32())
        reader.skip(entry & 31)
        return entry == 0 ? -1 : entry >> 8
    }

    /// The next spectral symbol from a bit cache (refilled by the caller) with the sign bits
    /// behind it, taken in the same shift: the signs left-aligned in 4 bits (0 for the signed
    /// books), or symbol -1 for no code. The signs come from the bits already peeked, so the
    /// next lookup waits on one table load only.
    @inline(__always)
    func decodeWithSigns(_ bits: inout AACBitCache) -> (symbol: Int, signs: Int) {
        let peeked = bits.peek32()
        let entry = lookup(peeked)
        let length = entry & 31, count = (entry >> 5) & 7
        let signs = Int(truncatingIfNeeded: (peeked &<< UInt32(length)) &>> 28) & (0xF0 &>> count) & 0xF
        bits.skip(length &+ count)
        return (entry == 0 ? -1 : entry >> 8, signs)
    }

    /// The leaf for the code at the top of `bits` (see ``table``), 0 for no code.
    @inline(__always)
    private func lookup(_ bits: UInt32) -> Int {
        var entry = table[Int(bits >> 24)]
        if entry & (1 << 31) != 0 {
            let base = Int((entry >> 5) & 0x3FF_FFFF), width = Int(entry & 31)
            let index = Int((bits << 8) >> UInt32(32 - width))
            entry = table[base + index]
        }
        return Int(entry)
    }

    /// A spectral symbol's values, packed: byte i is value i (signed), byte 4 counts the
    /// non-zero values.
    @inline(__always)
    func values(_ symbol: Int) -> UInt64 { unpacked[symbol] }

    /// A spectral symbol's values raised to 4/3, signed where the book is.
    @inline(__always)
    func powers(_ symbol: Int) -> SIMD4<Float> { powers[symbol] }

    /// Sign masks for an unsigned book's tuple, indexed by its non-zero pattern (byte 5 of
    /// ``values(_:)``) times 16 plus its sign bits left-aligned in 4 bits: the bits go to the
    /// non-zero values in order, each a float sign bit to XOR in.
    // Read-only after the lazy initializer: safe to share between threads.
    nonisolated(unsafe) static let signMasks: UnsafePointer<SIMD4<UInt32>> = {
        let masks = UnsafeMutablePointer<SIMD4<UInt32>>.allocate(capacity: 256)
        for pattern in 0..<16 {
            for signs in 0..<16 {
                var mask = SIMD4<UInt32>.zero
                var next = 3
                for lane in 0..<4 where pattern & (8 >> lane) != 0 {
                    if signs & (1 << next) != 0 { mask[lane] = 0x8000_0000 }
                    next -= 1
                }
                masks[pattern * 16 + signs] = mask
            }
        }
        return UnsafePointer(masks)
    }()

    static let scalefactors = AACHuffmanDecoder(codes: AACTables.scalefactorCodes, lengths: AACTables.scalefactorBits)
    /// Books 1...11 at index book - 1.
    static let spectral: [AACHuffmanDecoder] = (0..<11).map {
        AACHuffmanDecoder(codes: AACTables.spectralCodes[$0].map(UInt32.init), lengths: AACTables.spectralBits[$0], book: $0 + 1)
    }
}
