/// Builds ISO base media file format boxes (ISO/IEC 14496-12) in memory: big-endian fields,
/// and boxes nested by closures whose sizes are filled in when they close.
struct MP4BoxBuilder {
    private(set) var bytes: [UInt8] = []

    mutating func u8(_ value: Int) { bytes.append(UInt8(truncatingIfNeeded: value)) }
    mutating func u16(_ value: Int) { append(UInt64(truncatingIfNeeded: value), 2) }
    mutating func u24(_ value: Int) { append(UInt64(truncatingIfNeeded: value), 3) }
    mutating func u32(_ value: Int) { append(UInt64(truncatingIfNeeded: value), 4) }
    mutating func u64(_ value: Int) { append(UInt64(truncatingIfNeeded: value), 8) }
    mutating func zeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }
    mutating func fourCC(_ code: String) {
        precondition(code.utf8.count == 4)
        bytes.append(contentsOf: code.utf8)
    }
    mutating func raw(_ data: [UInt8]) { bytes.append(contentsOf: data) }

    private mutating func append(_ value: UInt64, _ count: Int) {
        for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    /// A box: its size (patched when `content` has run), its type, and its content.
    mutating func box(_ type: String, _ content: (inout MP4BoxBuilder) -> Void) {
        let start = bytes.count
        u32(0)
        fourCC(type)
        content(&self)
        let size = bytes.count - start
        precondition(size <= Int(UInt32.max), "a box inside moov over 4 GiB")
        for index in 0..<4 { bytes[start + index] = UInt8(truncatingIfNeeded: size >> (8 * (3 - index))) }
    }

    /// A full box: a box whose content starts with a version and 24 bits of flags.
    mutating func fullBox(_ type: String, version: Int = 0, flags: Int = 0, _ content: (inout MP4BoxBuilder) -> Void) {
        box(type) { builder in
            builder.u8(version)
            builder.u24(flags)
            content(&builder)
        }
    }

    /// An MPEG-4 descriptor (ISO/IEC 14496-1, 8.3.3): a tag, its size in 7-bit groups, the content.
    mutating func descriptor(_ tag: Int, _ content: (inout MP4BoxBuilder) -> Void) {
        var inner = MP4BoxBuilder()
        content(&inner)
        u8(tag)
        var size = inner.bytes.count
        var groups: [UInt8] = [UInt8(size & 0x7F)]
        size >>= 7
        while size > 0 {
            groups.insert(UInt8(size & 0x7F) | 0x80, at: 0)
            size >>= 7
        }
        raw(groups)
        raw(inner.bytes)
    }

    /// The unity transformation matrix of `mvhd` and `tkhd`.
    mutating func unityMatrix() {
        for value in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { u32(value) }
    }
}
