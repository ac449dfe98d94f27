/// AAC's spectral and scalefactor Huffman codebooks for writing: a tuple's codeword and
/// length, its sign bits and escapes, and the cost of a run of values in a book without
/// writing it (what the rate loop and the section search ask thousands of times a frame).
/// Tables flattened into memory allocated once, read without bounds checks.
enum AACHuffmanEncoder {
    /// The largest absolute value books 1...11 code (11 escapes past 15).
    static let largestValue = [0, 1, 1, 2, 2, 4, 4, 7, 7, 12, 12, 16]
    private static let offsets: [Int] = {
        var o = [0]
        for book in AACTables.spectralBits { o.append(o.last! + book.count) }
        return o
    }()
    // Written once by the lazy initializer, read-only after: safe to share between threads.
    private nonisolated(unsafe) static let bits: UnsafeMutablePointer<UInt8> = {
        let all = AACTables.spectralBits.flatMap { $0 }
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: all.count)
        p.initialize(from: all, count: all.count)
        return p
    }()
    private nonisolated(unsafe) static let codes: UnsafeMutablePointer<UInt16> = {
        let all = AACTables.spectralCodes.flatMap { $0 }
        let p = UnsafeMutablePointer<UInt16>.allocate(capacity: all.count)
        p.initialize(from: all, count: all.count)
        return p
    }()
    private nonisolated(unsafe) static let bookBase: UnsafeMutablePointer<Int> = {
        let p = UnsafeMutablePointer<Int>.allocate(capacity: 12)
        p[0] = 0
        for b in 1...11 { p[b] = offsets[b - 1] }
        return p
    }()

    /// The smallest book that codes `largest` (0 for an all-zero band).
    @inline(__always)
    static func smallestBook(for largest: Int32) -> Int {
        switch largest {
        case 0: return 0
        case 1: return 1
        case 2: return 3
        case 3, 4: return 5
        case 5...7: return 7
        case 8...12: return 9
        default: return 11
        }
    }

    /// The codebook index of the tuple at `q` and how many sign bits and escape bits follow.
    @inline(__always)
    private static func index(_ q: UnsafePointer<Int32>, book: Int) -> (index: Int, extra: Int) {
        switch book {
        case 1, 2:
            return (Int(q[0] + 1) * 27 + Int(q[1] + 1) * 9 + Int(q[2] + 1) * 3 + Int(q[3] + 1), 0)
        case 3, 4:
            let a = Int(q[0].magnitude), b = Int(q[1].magnitude), c = Int(q[2].magnitude), d = Int(q[3].magnitude)
            let signs = (a != 0 ? 1 : 0) + (b != 0 ? 1 : 0) + (c != 0 ? 1 : 0) + (d != 0 ? 1 : 0)
            return (a * 27 + b * 9 + c * 3 + d, signs)
        case 5, 6:
            return (Int(q[0] + 4) * 9 + Int(q[1] + 4), 0)
        case 7, 8:
            let a = Int(q[0].magnitude), b = Int(q[1].magnitude)
            return (a * 8 + b, (a != 0 ? 1 : 0) + (b != 0 ? 1 : 0))
        case 9, 10:
            let a = Int(q[0].magnitude), b = Int(q[1].magnitude)
            return (a * 13 + b, (a != 0 ? 1 : 0) + (b != 0 ? 1 : 0))
        default:
            let a = Int(q[0].magnitude), b = Int(q[1].magnitude)
            var extra = (a != 0 ? 1 : 0) + (b != 0 ? 1 : 0)
            if a >= 16 { extra += escapeBits(a) }
            if b >= 16 { extra += escapeBits(b) }
            return (min(a, 16) * 17 + min(b, 16), extra)
        }
    }

    /// An escape's length for a value from 16 to 8191: N ones, a zero, N + 4 bits.
    @inline(__always)
    private static func escapeBits(_ value: Int) -> Int {
        let n = (Int.bitWidth - value.leadingZeroBitCount) - 5
        return 2 * n + 5
    }

    /// Bits `count` values at `q` take in `book` (1...11), every value within its range.
    @inline(__always)
    static func cost(_ q: UnsafePointer<Int32>, count: Int, book: Int) -> Int {
        let dimension = book < 5 ? 4 : 2
        let base = bits + bookBase[book]
        var total = 0
        var k = 0
        while k < count {
            let (i, extra) = index(q + k, book: book)
            total += Int(base[i]) + extra
            k += dimension
        }
        return total
    }

    static func write(_ q: UnsafePointer<Int32>, count: Int, book: Int, into writer: inout AACBitWriter) {
        let dimension = book < 5 ? 4 : 2
        let lengths = bits + bookBase[book], words = codes + bookBase[book]
        let unsigned = book >= 3 && book != 5 && book != 6
        var k = 0
        while k < count {
            let (i, _) = index(q + k, book: book)
            writer.put(Int(words[i]), Int(lengths[i]))
            if unsigned {
                for j in 0..<dimension where q[k + j] != 0 { writer.put(q[k + j] < 0 ? 1 : 0, 1) }
            }
            if book == 11 {
                for j in 0..<2 {
                    let v = Int(q[k + j].magnitude)
                    guard v >= 16 else { continue }
                    let n = (Int.bitWidth - v.leadingZeroBitCount) - 5
                    writer.put((1 << (n + 1)) - 2, n + 1)  // n ones and a zero
                    writer.put(v - (1 << (n + 4)), n + 4)
                }
            }
            k += dimension
        }
    }

    /// A scalefactor delta's codeword length (delta −60...60).
    @inline(__always)
    static func scalefactorBits(_ delta: Int) -> Int { Int(AACTables.scalefactorBits[delta + 60]) }

    static func writeScalefactor(_ delta: Int, into writer: inout AACBitWriter) {
        writer.put(Int(AACTables.scalefactorCodes[delta + 60]), Int(AACTables.scalefactorBits[delta + 60]))
    }
}
