/// The window sequences of an AAC frame (ISO/IEC 14496-3, table 4.85).
enum AACWindowSequence: Int, Sendable {
    case onlyLong = 0, longStart = 1, eightShort = 2, longStop = 3
}

/// One channel's window layout for a frame (`ics_info`, 4.4.2.1): the window sequence and
/// shape, how many scalefactor bands carry data, how the eight short windows are grouped,
/// and the band edges that go with them.
struct AACICSInfo {
    /// Scalefactor bands per window group, at most: 51 long, 15 short.
    static let maxBands = 64

    var sequence: AACWindowSequence = .onlyLong
    var shape = 0
    var maxBands = 0
    var groupCount = 1
    /// Windows in each group (short windows only; 1 group of 1 otherwise). Inline, so that
    /// copying a layout between channels allocates nothing.
    var groupLengths: InlineArray<8, Int> = [1, 0, 0, 0, 0, 0, 0, 0]
    /// Band edges in coefficients within a window, for this window type (numBands + 1).
    var offsets: [Int16] = []
    /// Bands this window type has at this sample rate.
    var numBands = 0
    var tnsMaxBands = 0

    var isShort: Bool { sequence == .eightShort }
    var windowCount: Int { isShort ? 8 : 1 }
    /// Coefficients per window.
    var windowLength: Int { isShort ? 128 : 1024 }

    /// The first window of group `group` (short windows; 0 otherwise).
    func firstWindow(ofGroup group: Int) -> Int {
        var w = 0
        for g in 0..<group { w += groupLengths[g] }
        return w
    }

    /// Sets the layout for `sequence` at sampling frequency index `rateIndex`.
    mutating func setLayout(_ sequence: AACWindowSequence, rateIndex: Int) {
        self.sequence = sequence
        if sequence == .eightShort {
            offsets = AACTables.shortBandOffsets[rateIndex]
            tnsMaxBands = AACTables.tnsMaxBandsShort[rateIndex]
        } else {
            offsets = AACTables.longBandOffsets[rateIndex]
            tnsMaxBands = AACTables.tnsMaxBandsLong[rateIndex]
        }
        numBands = offsets.count - 1
    }

    /// Reads `ics_info`.
    mutating func read(_ reader: inout AACBitReader, rateIndex: Int) throws(AACError) {
        if reader.bit() { throw .malformed("ics_reserved_bit set") }
        setLayout(AACWindowSequence(rawValue: reader.read(2))!, rateIndex: rateIndex)
        shape = reader.read(1)
        if isShort {
            maxBands = reader.read(4)
            let grouping = reader.read(7)
            groupCount = 1
            groupLengths = [1, 0, 0, 0, 0, 0, 0, 0]
            // Bit 6 - (w - 1) set: window w joins the group before it.
            for w in 1..<8 {
                if grouping & (1 << (6 - (w - 1))) != 0 {
                    groupLengths[groupCount - 1] += 1
                } else {
                    groupLengths[groupCount] = 1
                    groupCount += 1
                }
            }
        } else {
            maxBands = reader.read(6)
            groupCount = 1
            groupLengths = [1, 0, 0, 0, 0, 0, 0, 0]
            if reader.bit() { throw .unsupported("prediction (AAC Main or LTP)") }
        }
        guard maxBands <= numBands else { throw .malformed("max_sfb \(maxBands) over the \(numBands) bands of the window") }
    }

    /// Writes `ics_info`.
    func write(_ writer: inout AACBitWriter) {
        writer.put(0, 1)
        writer.put(sequence.rawValue, 2)
        writer.put(shape, 1)
        if isShort {
            writer.put(maxBands, 4)
            var grouping = 0, w = 0
            for g in 0..<groupCount {
                for i in 0..<groupLengths[g] {
                    if w > 0 && i > 0 { grouping |= 1 << (6 - (w - 1)) }
                    w += 1
                }
            }
            writer.put(grouping, 7)
        } else {
            writer.put(maxBands, 6)
            writer.put(0, 1)
        }
    }
}
