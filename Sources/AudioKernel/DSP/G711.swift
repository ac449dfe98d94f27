/// ITU-T G.711 companding: 8-bit A-law and µ-law codes and the 16-bit linear values they
/// stand for. A code expands to a 13-bit (A-law) or 14-bit (µ-law) linear value, given
/// here scaled to 16 bits as sox and ALSA read it; compression takes a 16-bit value to the
/// code whose segment and step hold it.
///
/// The expansions are tables of 256 made once; no call allocates.
public enum G711 {
    /// Every A-law code's linear value (±8 to ±32,256).
    public static let aLawToLinear: [Int16] = (0...255).map { aLawExpand(UInt8($0)) }
    /// Every µ-law code's linear value (0 to ±32,124).
    public static let muLawToLinear: [Int16] = (0...255).map { muLawExpand(UInt8($0)) }

    /// The linear value of an A-law code: even bits inverted on the wire (0x55), then a sign,
    /// a 3-bit segment and a 4-bit step; the value sits in the middle of its step.
    static func aLawExpand(_ code: UInt8) -> Int16 {
        let a = code ^ 0x55
        let segment = Int((a & 0x70) >> 4)
        var magnitude = Int(a & 0x0F) << 4
        switch segment {
        case 0: magnitude += 8
        case 1: magnitude += 0x108
        default: magnitude = (magnitude + 0x108) << (segment - 1)
        }
        return Int16(a & 0x80 != 0 ? magnitude : -magnitude)
    }

    /// The linear value of a µ-law code: all bits inverted on the wire, then a sign, a 3-bit
    /// segment and a 4-bit step, biased by 0x84 so that the segments join.
    static func muLawExpand(_ code: UInt8) -> Int16 {
        let u = ~code
        let magnitude = ((Int(u & 0x0F) << 3) + 0x84) << Int((u & 0x70) >> 4)
        return Int16(u & 0x80 != 0 ? 0x84 - magnitude : magnitude - 0x84)
    }

    /// The A-law code for a 16-bit linear value (its top 13 bits count).
    public static func aLaw(_ sample: Int16) -> UInt8 {
        var value = Int(sample) >> 3
        let mask: UInt8
        if value >= 0 {
            mask = 0xD5
        } else {
            mask = 0x55
            value = -value - 1
        }
        // The segment: the first whose end (0x1F, 0x3F, ... 0xFFF) holds the value.
        var segment = 0
        while (segment < 8) && value > (0x1F << segment) | ((1 << segment) - 1) { segment += 1 }
        guard segment < 8 else { return 0x7F ^ mask }
        let step = segment < 2 ? (value >> 1) & 0x0F : (value >> segment) & 0x0F
        return UInt8(segment << 4 | step) ^ mask
    }

    /// The µ-law code for a 16-bit linear value (its top 14 bits count, clipped at 8,159).
    public static func muLaw(_ sample: Int16) -> UInt8 {
        var value = Int(sample) >> 2
        let mask: UInt8
        if value < 0 {
            value = -value
            mask = 0x7F
        } else {
            mask = 0xFF
        }
        value = min(value, 8_159) + (0x84 >> 2)
        // The segment: the first whose end (0x3F, 0x7F, ... 0x1FFF) holds the value.
        var segment = 0
        while (segment < 8) && value > (0x40 << segment) - 1 { segment += 1 }
        guard segment < 8 else { return 0x7F ^ mask }
        let step = (value >> (segment + 1)) & 0x0F
        return UInt8(segment << 4 | step) ^ mask
    }
}
