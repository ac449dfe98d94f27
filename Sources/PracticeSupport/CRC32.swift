/// CRC-32 (IEEE 802.3, the polynomial of zlib, PNG and gzip), kept in a spooled turn's and
/// cue answer's record so that audio damaged on disk (a truncated tail, a flipped block) is
/// found before it is uploaded. Table-driven, a byte at a time: a turn of a few hundred KB
/// takes well under a millisecond, once at spooling and once before each upload.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// The checksum of `bytes` (`crc32(b"123456789") == 0xCBF43926`).
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }
}
