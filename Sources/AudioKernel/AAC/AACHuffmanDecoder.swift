/// Decodes one of AAC's Huffman codebooks through lookup tables: the next 8 bits index a
/// first table; a code longer than that points into a second table indexed by the bits after
/// them, sized for the longest code behind that prefix. Two loads per code at most, built
/// once from ``AACTables``' codewords.
struct AACHuffmanDecoder: Sendable {
    private static let primaryBits = 8
    /// Leaf: symbol << 5 | length. Link: 1 << 31 | first entry << 5 | bits indexed. 0: no code.
    private let table: [UInt32]

    init(codes: [UInt32], lengths: [UInt8]) {
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
            let leaf = UInt32(symbol) << 5 | UInt32(length)
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
        self.table = table
    }

    /// The next symbol, or nil for bits that are no code of this book.
    @inline(__always)
    func decode(_ reader: inout AACBitReader) -> Int? {
        let bits = reader.peek32()
        var entry = table[Int(bits >> 24)]
        if entry & (1 << 31) != 0 {
            let base = Int((entry >> 5) & 0x3FF_FFFF), width = Int(entry & 31)
            let index = Int((bits << 8) >> UInt32(32 - width))
            entry = table[base + index]
        }
        let length = Int(entry & 31)
        guard length > 0 else { return nil }
        reader.skip(length)
        return Int(entry >> 5)
    }

    static let scalefactors = AACHuffmanDecoder(codes: AACTables.scalefactorCodes, lengths: AACTables.scalefactorBits)
    /// Books 1...11 at index book - 1.
    static let spectral: [AACHuffmanDecoder] = (0..<11).map {
        AACHuffmanDecoder(codes: AACTables.spectralCodes[$0].map(UInt32.init), lengths: AACTables.spectralBits[$0])
    }
}
